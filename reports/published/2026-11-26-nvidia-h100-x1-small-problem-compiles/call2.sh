# Session 18 call 2: the working tree (gemm_kernel_unaligned): small-problem timings, our
# tests that touch it on a GPU, then the cold one-GPU suite with every triton.compile logged.
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="$PWD/reports/published/2026-11-26-nvidia-h100-x1-small-problem-compiles:/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/call2.txt
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader > $L
git log --oneline -1 >> $L; git diff --stat HEAD >> $L
export TRITON_CACHE_DIR=/tmp/tcache-perf
python3 reports/published/2026-11-26-nvidia-h100-x1-small-problem-compiles/small_perf.py > $OUT/call2-small-perf.txt 2>&1; echo "small_perf exit $?" >> $L
timeout 200 python3 -m pytest tests/test_reference_backend.py tests/test_reference_golden.py tests/test_launch_path.py tests/test_hopper.py -n 8 -q -p no:randomly -rfE > $OUT/call2-tests.log 2>&1
echo "tests exit $?" >> $L
export KDUMP=/tmp/kdump; mkdir -p $KDUMP
export TRITON_CACHE_DIR=/tmp/tcache; rm -rf $TRITON_CACHE_DIR
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-seeds-inductor-eager/call2-seed2.json.gz > /tmp/durations.json
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-small-problem-compiles/call1-suite.json.gz > /tmp/call1.json
vmstat -n 2 > $OUT/call2-vmstat.txt 2>&1 &
VM=$!
start=$(date +%s)
timeout 400 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/call2-suite.json --conformance-html none \
  > $OUT/call2-suite.log 2>&1
echo "suite: exit $? in $(( $(date +%s) - start )) s" >> $L
kill $VM
cat $KDUMP/*.jsonl | gzip > $OUT/call2-kdump.jsonl.gz
python3 -c "import sys; from gemmconf.cli import main; sys.exit(main())" report diff /tmp/call1.json $OUT/call2-suite.json > $OUT/call2-diff.txt 2>&1
echo "report diff call 1 (old code) -> this: exit $?" >> $L
gzip $OUT/call2-suite.json
cat $L $OUT/call2-small-perf.txt; tail -3 $OUT/call2-tests.log; tail -4 $OUT/call2-suite.log; head -20 $OUT/call2-diff.txt
