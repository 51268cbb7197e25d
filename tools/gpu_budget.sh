# shellcheck shell=bash
# Issue 43, item 4: the whole reference suite on one GPU as on a 24 GB card, its items admitted to
# the memory budget by the peaks an earlier run measured (--durations-from), against the same
# run without a budget. From the project root, after the GPU setup script
# (reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh), with OUT set:
#
#   TAG=free BUDGET=none bash tools/gpu_budget.sh           # unconstrained, -n auto
#   TAG=b24 WORKERS=8 bash tools/gpu_budget.sh              # --gpu-memory-budget 24, 8 workers
#   TAG=b24-1 WORKERS=8 SHARD=1/2 bash tools/gpu_budget.sh  # or in two calls: 1/2, then 2/2
#
# MEASURED: the earlier run's results (default: the 2026-11-29 H200 reference run published in
# reports/published/2026-11-29-nvidia-h200-suite-time); LIMIT: seconds before SIGTERM (the run's
# results are kept, "complete": false). Each run starts with a cold Triton cache.
set -u
measured=${MEASURED:-/tmp/measured.json}
if [ ! -s "$measured" ]; then
  tar xzOf reports/published/2026-11-29-nvidia-h200-suite-time/call3-compile-once-ab.tar.gz \
    ./before-suite.json > "$measured"
fi
export TRITON_CACHE_DIR=/tmp/tcache-$TAG
rm -rf "$TRITON_CACHE_DIR"
options=()
[ "${BUDGET:-24}" != none ] && options+=(--gpu-memory-budget "${BUDGET:-24}")
[ -n "${WORKERS:-}" ] && options+=(--workers-per-gpu "$WORKERS")
[ -n "${SHARD:-}" ] && options+=(--shard "$SHARD")
start=$(date +%s.%N)
timeout --foreground "${LIMIT:-560}" python3 -m pytest suites --backend reference -n auto -q -rfE \
  -p no:randomly "${options[@]}" --durations-from "$measured" --results "$OUT/$TAG-suite.json" \
  --conformance-html none > "$OUT/$TAG-suite.log" 2>&1
echo "$TAG (${options[*]}): exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
grep -E "^gemmconf: (-n auto|.*measured on|.*waited for memory|memory admitted)|out of memory|passed|failed" \
  "$OUT/$TAG-suite.log" | tail -8 | tee -a "$OUT/summary.txt"
python3 tools/memory_waits.py "$OUT/$TAG-suite.json" | tee -a "$OUT/summary.txt"
