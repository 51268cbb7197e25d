# Session 20 call D: the session's final tree on an H100: host time per call, the cold one-GPU
# suite (diffed against call A, the session's start), then our tests.
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
export TRITON_CACHE_DIR=/tmp/tcache-D; rm -rf $TRITON_CACHE_DIR
L=$OUT/callD.txt
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader > $L
start=$(date +%s)
timeout 60 python3 tools/host_overhead.py --gpu --calls 2000 --json $OUT/callD-host.json > $OUT/callD-host.txt 2>&1
echo "host: exit $? in $(( $(date +%s) - start )) s" >> $L
rm -rf $TRITON_CACHE_DIR
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-small-problem-compiles/call6-cold.json.gz > /tmp/durations.json
start=$(date +%s)
TIMEFORMAT="tree cpu: real %R user %U sys %S"
{ time timeout 250 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/callD-suite.json --conformance-html none \
  > $OUT/callD-suite.log 2>&1 ; } 2>> $L
echo "suite: exit $? in $(( $(date +%s) - start )) s" >> $L
gunzip -c devwork/s20/callA/callA-suite.json.gz > /tmp/callA.json
python3 -c "import sys; from gemmconf.cli import main; sys.exit(main())" report diff /tmp/callA.json $OUT/callD-suite.json > $OUT/callD-diff.txt 2>&1
echo "diff: exit $?" >> $L
gzip $OUT/callD-suite.json
start=$(date +%s)
timeout 270 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 -q -p no:randomly -rfEx > $OUT/callD-tests.log 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" >> $L
cat $L; cat $OUT/callD-host.txt; tail -2 $OUT/callD-suite.log; tail -3 $OUT/callD-diff.txt; tail -4 $OUT/callD-tests.log
