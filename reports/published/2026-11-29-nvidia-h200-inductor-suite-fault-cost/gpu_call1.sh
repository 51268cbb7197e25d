# Call 1 (nvidia-h200): default inductor over the whole suite (issue 40: 0 FAIL and 0 XPASS that
# the expectations do not explain), then what a lost CUDA context costs against a segfault
# (issue 43, item 5). From the project root, carrying .whl: TREE=<commit> bash <this file>.
here=reports/published/2026-11-29-nvidia-h200-inductor-suite-fault-cost
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
t0=$(date +%s)
# 1. default inductor, whole suite, empty caches, every host core
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind-cache TRITON_CACHE_DIR=/tmp/triton-cache
rm -rf /tmp/ind-cache /tmp/triton-cache
timeout -s TERM "${LIMIT:-400}" python3 -m pytest suites --backend inductor -n auto -q -rfE \
  -p no:benchmark -p no:randomly --results "$OUT/inductor.json" --conformance-html none \
  >"$OUT/inductor.log" 2>&1
echo "inductor: exit $? in $(($(date +%s) - t0)) s; $(tail -n 1 "$OUT/inductor.log")" | tee "$OUT/summary.txt"
python3 "$here/unexplained.py" "$OUT/inductor.json" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/inductor.json"
# 2. the same 227 items under a device fault and under a segfault, each from a fresh cache
for fault in illegal_address segfault; do
  s=$(date +%s)
  TRITON_CACHE_DIR=/tmp/triton-$fault timeout -s TERM "${FAULT_LIMIT:-100}" python3 -m pytest \
    suites/dense suites/epilogue -m mm --backend "tools.fault_cost:$fault" -n auto -q -rN \
    -p no:benchmark -p no:randomly --results "$OUT/fault-$fault.json" --conformance-html none \
    >"$OUT/fault-$fault.log" 2>&1
  echo "$fault: exit $? in $(($(date +%s) - s)) s; $(tail -n 1 "$OUT/fault-$fault.log")" | tee -a "$OUT/summary.txt"
  python3 - "$OUT/fault-$fault.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
from collections import Counter
records = json.load(open(sys.argv[1]))["records"]
print("  outcomes:", dict(Counter((r["outcome"], r.get("kind")) for r in records)))
PY
done
tar czf "$OUT/fault-runs.tar.gz" -C "$OUT" $(cd "$OUT" && ls fault-*) && rm -f "$OUT"/fault-*.json "$OUT"/fault-*.log
echo "call done in $(($(date +%s) - t0)) s" | tee -a "$OUT/summary.txt"
