# shellcheck shell=bash
# Our tests on one H200 at the head of 2026-11-30 (issue 45: the GPU paths run there), from the
# project root, .whl carried with ruff, import-linter (grimp, click, rich) and actionlint, which
# the GPU machine's Python lacks (six of the nine failures of 2026-11-30-nvidia-h200-x2-tests-2).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD" PATH="/tmp/site/bin:$PATH"
start=$(date +%s)
timeout 480 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 --dist loadgroup -q \
  -p no:randomly -rfEx > "$OUT/gpu-tests.log" 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
grep -E "^(FAILED|ERROR|XFAIL|XPASS)" "$OUT/gpu-tests.log" | cut -c1-300 | head -40 | tee -a "$OUT/summary.txt"
tail -1 "$OUT/gpu-tests.log" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/gpu-tests.log"
