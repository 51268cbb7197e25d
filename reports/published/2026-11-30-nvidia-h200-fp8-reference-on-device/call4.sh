#!/usr/bin/env bash
# Call 4: the project's tests on the GPU at 16041f8 (since their last whole GPU run,
# d2a54fa: the fp8 reference from values and scales, 55a423b's table of integer widths).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD" PATH="/tmp/site/bin:$PATH"
start=$(date +%s)
timeout -s INT "${TESTS_LIMIT:-540}" python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 \
  --dist loadgroup -q -p no:randomly -rfEx --durations=60 > "$OUT/call4-tests.log" 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/call4-summary.txt"
grep -E "^(FAILED|ERROR|XFAIL|XPASS)" "$OUT/call4-tests.log" | cut -c1-300 | head -40 | tee -a "$OUT/call4-summary.txt"
tail -1 "$OUT/call4-tests.log" | tee -a "$OUT/call4-summary.txt"
grep -A62 "slowest" "$OUT/call4-tests.log" | head -64 > "$OUT/call4-durations.txt"
gzip -f "$OUT/call4-tests.log"
