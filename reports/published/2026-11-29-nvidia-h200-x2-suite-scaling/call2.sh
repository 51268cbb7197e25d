#!/usr/bin/env bash
# Call 2 on `nvidia-h200-x2` (issue 43, item 4), from the project root with .whl carried:
#   TREE=<commit> bash reports/published/2026-11-29-nvidia-h200-x2-suite-scaling/call2.sh
# The whole reference suite on one GPU (CUDA_VISIBLE_DEVICES=0) under --gpu-memory-budget 24,
# cold Triton cache, -n auto, items admitted by the peaks call 1's one-GPU run measured
# (--durations-from); then `gemmconf report diff` against that unconstrained run.
set -u
here=reports/published/2026-11-29-nvidia-h200-x2-suite-scaling
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
gunzip -c "$here/call1-one-gpu-suite.json.gz" > /tmp/durations.json
export TRITON_CACHE_DIR=/tmp/tcache-budget
rm -rf "$TRITON_CACHE_DIR"
start=$(date +%s.%N)
CUDA_VISIBLE_DEVICES=0 timeout "${SUITE_LIMIT:-540}" python3 -m pytest suites --backend reference \
  -n auto -q -rfE -p no:randomly --gpu-memory-budget 24 --durations-from /tmp/durations.json \
  --results "$OUT/budget-suite.json" --conformance-html none > "$OUT/budget-suite.log" 2>&1
echo "budget suite: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
grep -E "^gemmconf: (-n auto|memory|kernels)|waited|out of memory|passed|failed" "$OUT/budget-suite.log" | tail -12 | tee -a "$OUT/summary.txt"
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/budget-suite.json" > "$OUT/diff.txt" 2>&1
tail -3 "$OUT/diff.txt" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/budget-suite.json" "$OUT/budget-suite.log"
