# Session 21 call H (ran as devwork/s21/callH2.sh): our tests on an H100 at ae30e17's code (the hardware: field's GPU branch,
# the records' eager_fails, the summary)
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/callH.txt
nvidia-smi --query-gpu=name,serial --format=csv,noheader > $L
start=$(date +%s)
timeout 360 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 -q -p no:randomly -rfEx > $OUT/callH-tests.log 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" >> $L
cat $L; tail -5 $OUT/callH-tests.log
