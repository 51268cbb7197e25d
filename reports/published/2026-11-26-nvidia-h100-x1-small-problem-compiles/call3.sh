# Session 18 call 3: small problems' kernel device times (profiler), then the cold one-GPU
# suite of the committed code (1a88271, devwork/old) on this machine, as call 4's baseline.
# devwork/old: `git archive 1a88271 | tar -x -C devwork/old` (the committed code before this change)
source .whl/prelude.sh
rm -rf /tmp/site_new /tmp/site_old
python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site_new . plugins/gemmconf-cutlass > /dev/null 2>&1
(cd devwork/old && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site_old . plugins/gemmconf-cutlass > /dev/null 2>&1)
L=$OUT/call3.txt
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version,serial --format=csv,noheader > $L
export TRITON_CACHE_DIR=/tmp/tcache-perf
PYTHONPATH="/tmp/site_new:$PWD:$PYTHONPATH" python3 reports/published/2026-11-26-nvidia-h100-x1-small-problem-compiles/small_prof.py > $OUT/call3-small-prof.txt 2>&1; echo "small_prof exit $?" >> $L
cd devwork/old
export PYTHONPATH="/tmp/site_old:$PWD:$PYTHONPATH"
export TRITON_CACHE_DIR=/tmp/tcache-old; rm -rf $TRITON_CACHE_DIR
gunzip -c ../../reports/published/2026-11-26-nvidia-h100-x1-seeds-inductor-eager/call2-seed2.json.gz > /tmp/durations.json
git -C ../.. log --oneline -1 >> $L
start=$(date +%s)
timeout 420 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/call3-suite-old.json --conformance-html none \
  > $OUT/call3-suite-old.log 2>&1
echo "suite (old code): exit $? in $(( $(date +%s) - start )) s" >> $L
gzip $OUT/call3-suite-old.json
cat $L; cat $OUT/call3-small-prof.txt; tail -4 $OUT/call3-suite-old.log
