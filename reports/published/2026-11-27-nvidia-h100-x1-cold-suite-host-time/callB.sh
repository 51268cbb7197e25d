# Session 20 call B: the intermediate-rounding bound, or_correct error scenarios and the
# launch path's host time on an H100, at the tree of the commit named in callB.txt.
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/callB.txt
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader > $L
git log --oneline -1 | cut -c1-80 >> $L 2>&1; git status --short | grep -v devwork | head -5 >> $L
# 1. host time per call, 16x6144x4096 bf16 F.linear, with the launch-path rows
start=$(date +%s)
timeout 170 python3 tools/host_overhead.py --gpu --calls 2000 --json $OUT/callB-host.json > $OUT/callB-host.txt 2>&1
echo "host: exit $? in $(( $(date +%s) - start )) s" >> $L
# 2. the suites the change touches, eager and reference, against call A's reference records
start=$(date +%s)
timeout 200 python3 -m pytest suites/epilogue suites/dense suites/grouped suites/blockscaled suites/fp8 \
  --backend eager,reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --results $OUT/callB-suite.json --conformance-html none > $OUT/callB-suite.log 2>&1
echo "suite: exit $? in $(( $(date +%s) - start )) s" >> $L
gunzip -c devwork/s20/callA/callA-suite.json.gz > /tmp/callA.json
python3 -c "import sys; from gemmconf.cli import main; sys.exit(main())" report diff /tmp/callA.json $OUT/callB-suite.json > $OUT/callB-diff.txt 2>&1
echo "diff: exit $?" >> $L
gzip $OUT/callB-suite.json
# 3. the tests the change touches
start=$(date +%s)
timeout 180 python3 -m pytest tests/test_planted_bugs.py tests/test_inputs.py tests/test_oracle.py tests/test_scenario.py -n 16 -q -p no:randomly -rfEx > $OUT/callB-tests.log 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" >> $L
cat $L; cat $OUT/callB-host.txt; tail -3 $OUT/callB-suite.log; tail -4 $OUT/callB-diff.txt; tail -4 $OUT/callB-tests.log
