# Session 20 call A: session 19's unrun changes on an H100: the cold one-GPU suite, then our tests.
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
export TRITON_CACHE_DIR=/tmp/tcache-A; rm -rf $TRITON_CACHE_DIR
L=$OUT/callA.txt
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader > $L
git log --oneline -1 >> $L 2>&1; git status --short | grep -v devwork | head -5 >> $L
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-small-problem-compiles/call6-cold.json.gz > /tmp/durations.json
start=$(date +%s)
TIMEFORMAT="tree cpu: real %R user %U sys %S"
{ time timeout 270 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/callA-suite.json --conformance-html none \
  > $OUT/callA-suite.log 2>&1 ; } 2>> $L
echo "suite: exit $? in $(( $(date +%s) - start )) s" >> $L
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-worker-core-share/call4-new2.json.gz > /tmp/s19.json
python3 -c "import sys; from gemmconf.cli import main; sys.exit(main())" report diff /tmp/s19.json $OUT/callA-suite.json > $OUT/callA-diff.txt 2>&1
echo "diff: exit $?" >> $L
gzip $OUT/callA-suite.json
start=$(date +%s)
timeout 285 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 -q -p no:randomly -rfEx > $OUT/callA-tests.log 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" >> $L
cat $L; tail -4 $OUT/callA-suite.log; tail -8 $OUT/callA-diff.txt; tail -8 $OUT/callA-tests.log
