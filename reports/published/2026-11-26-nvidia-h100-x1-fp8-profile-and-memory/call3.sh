source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/call3.txt
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader > $L
git diff --stat HEAD >> $L; git log --oneline -1 >> $L
# 1. the int_mm item alone: its peak with eager's first inputs released before the fresh draw
timeout 120 python3 -m pytest suites/integrity/k_tails.yaml --backend reference -p no:xdist -p no:randomly \
  -q -rfE -k "index_width" --results $OUT/call3-index-width.json --conformance-html none > $OUT/call3-index-width.txt 2>&1
echo "index_width: exit $?" >> $L
# 2. the whole suite on one GPU, cold Triton cache
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-hopper-kernel/call13-suite-cold-results.json.gz > /tmp/durations.json
start=$(date +%s)
timeout 330 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/call3-suite-cold.json --conformance-html none \
  > $OUT/call3-suite-cold.log 2>&1
echo "suite: exit $? in $(( $(date +%s) - start )) s" >> $L
gzip $OUT/call3-suite-cold.json
cat $L
grep -E "GiB|passed" $OUT/call3-index-width.txt
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/call3-index-width.json"))
for r in d["records"]:
    m = r.get("metrics", {})
    print(r["id"], r["outcome"], {k: m.get(k) for k in ("memory_estimate_bytes", "memory_peak_allocated_bytes")})
PY
grep -E "GiB|waited|kernels:|passed|failed" $OUT/call3-suite-cold.log | tail -20
