# Session 18 call 9: tests/test_pristine.py at d2f9383 on an H100 (the blame of a culprit).
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
timeout 200 python3 -m pytest tests/test_pristine.py tests/test_run.py -q -p no:randomly -rfE -n 4 > $OUT/call9-tests.log 2>&1
echo "tests: exit $?" > $OUT/call9.txt
cat $OUT/call9.txt; tail -3 $OUT/call9-tests.log
