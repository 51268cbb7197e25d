# Session 19 call 6: our tests and the CUTLASS plugin's on a GPU machine, at 449aa33's tree.
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/call6.txt
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader > $L
git log --oneline -1 >> $L; git status --short | head -5 >> $L
start=$(date +%s)
timeout 560 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 -q -p no:randomly -rfEx > $OUT/call6-tests.log 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" >> $L
cat $L; tail -15 $OUT/call6-tests.log
