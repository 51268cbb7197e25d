source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/call1-gpu.txt
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader > $L
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $L
git log --oneline -1 >> $L 2>&1
# 1. the memory listing (session 14 listed vocab_projection above its estimate)
mkdir -p /tmp/empty && (cd /tmp/empty && timeout 120 python3 -m gemmconf.cli run --backend eager -k "first or broadcast_decode or shapes_3d" -n 8 -q > $OUT/call1-memory.txt 2>&1; echo "memory run: exit $?" >> $L) || true
# 2. fp8 prefill and anchor bench items, kernel mode, three runs
for r in 1 2 3; do
  timeout 120 python3 -m pytest suites/bench --backend reference --benchmark --bench-mode kernel \
    -p no:xdist -p no:randomly -q -k "fp8 and not decode" --results $OUT/call1-bench-fp8-$r.json \
    > $OUT/call1-bench-fp8-$r.txt 2>&1
  echo "bench run $r: exit $?" >> $L
done
# 3. the whole suite on one GPU, cold Triton cache but for the bench kernels
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-hopper-kernel/call13-suite-cold-results.json.gz > /tmp/durations.json
start=$(date +%s)
timeout 320 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/call1-suite-cold.json --conformance-html none \
  > $OUT/call1-suite-cold.log 2>&1
echo "suite: exit $? in $(( $(date +%s) - start )) s" >> $L
gzip $OUT/call1-suite-cold.json
tail -4 $OUT/call1-suite-cold.log
cat $L
grep -i "gib" $OUT/call1-memory.txt | head; tail -2 $OUT/call1-memory.txt
for r in 1 2 3; do grep -E "vs cuBLAS|fp8|passed|failed" $OUT/call1-bench-fp8-$r.txt | tail -14; done
