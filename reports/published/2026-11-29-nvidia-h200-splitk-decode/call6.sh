#!/usr/bin/env bash
# Call 6 (`nvidia-h200`, 2026-11-29): the split-K kernel where the suite's own checks see it
# most, compiled on this GPU: the bf16 decode items under `reference:cudagraphs` (each call
# replayed from a CUDA graph: the workspace and arrival counters of a captured launch reused),
# then suites/dense, epilogue and integrity with every splittable GEMM forced into 3 K slices
# (`reference:split_k=3`: bias, epilogues, fp8 scales, odd K, determinism, batch invariance),
# stopped after SPLIT_LIMIT seconds (what ran by then is reported). From the project root:
#   TREE=<commit> bash reports/published/2026-11-29-nvidia-h200-splitk-decode/call6.sh
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
start=$(date +%s)
timeout 90 python3 -m pytest suites/bench -k "bf16 and decode" --backend reference:cudagraphs \
  -p no:xdist -q -rfE --results "$OUT/call6-cudagraphs.json" --conformance-html none \
  > "$OUT/call6-cudagraphs.log" 2>&1
echo "decode under cudagraphs: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/call6-summary.txt"
tail -4 "$OUT/call6-cudagraphs.log" | tee -a "$OUT/call6-summary.txt"
start=$(date +%s)
timeout "${SPLIT_LIMIT:-150}" python3 -m pytest suites/dense suites/epilogue suites/integrity \
  --backend reference:split_k=3 -n 14 -q -rfE -p no:randomly \
  --results "$OUT/call6-split3.json" --conformance-html none > "$OUT/call6-split3.log" 2>&1
echo "split_k=3 suites: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/call6-summary.txt"
grep -E "^FAILED|passed|failed" "$OUT/call6-split3.log" | tail -15 | tee -a "$OUT/call6-summary.txt"
python3 - "$OUT/call6-split3.json" <<'PY' | tee -a "$OUT/call6-summary.txt"
import collections, json, sys
try:
    records = json.load(open(sys.argv[1]))["records"]
except (OSError, ValueError) as exc:
    sys.exit(f"no results: {exc}")
print("split_k=3 outcomes:", dict(collections.Counter(r["outcome"] for r in records)))
PY
