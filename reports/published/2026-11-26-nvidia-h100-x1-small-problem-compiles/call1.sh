# Session 18 call: the cold one-GPU suite with every triton.compile logged, CPU use sampled.
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="$PWD/reports/published/2026-11-26-nvidia-h100-x1-small-problem-compiles:/tmp/site2:$PWD:$PYTHONPATH"
export KDUMP=/tmp/kdump; mkdir -p $KDUMP
export TRITON_CACHE_DIR=/tmp/tcache; rm -rf $TRITON_CACHE_DIR
L=$OUT/call1.txt
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader > $L
nproc >> $L; git log --oneline -1 >> $L
python3 -c "import triton, torch; print(triton.__version__, torch.__version__)" >> $L
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-seeds-inductor-eager/call2-seed2.json.gz > /tmp/durations.json
vmstat -n 2 > $OUT/vmstat.txt 2>&1 &
VM=$!
start=$(date +%s)
timeout 420 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/call1-suite.json --conformance-html none \
  > $OUT/call1-suite.log 2>&1
echo "suite: exit $? in $(( $(date +%s) - start )) s" >> $L
kill $VM
cat $KDUMP/*.jsonl | gzip > $OUT/call1-kdump.jsonl.gz
ls $KDUMP | wc -l >> $L; cat $KDUMP/*.jsonl | wc -l >> $L
gzip $OUT/call1-suite.json
cat $L; tail -5 $OUT/call1-suite.log
