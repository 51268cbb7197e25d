# session 22, call E: our tests on an H100 at 68e21b2
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
git log --oneline -1 | cut -c1-60 > $OUT/callE.txt
start=$(date +%s)
timeout 520 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 -q -p no:randomly -rfEx > $OUT/callE-tests.log 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" >> $OUT/callE.txt
tail -3 $OUT/callE-tests.log >> $OUT/callE.txt
cat $OUT/callE.txt
