#!/usr/bin/env bash
# Call 4: our tests on the GPU at the stop's head (stream-K, the integrity checks' integer views,
# the tests stage's grouping and thread fixes), as the head check's call 1 ran them.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD" PATH="/tmp/site/bin:$PATH"
start=$(date +%s)
timeout 500 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 --dist loadgroup -q \
  -p no:randomly -rfEx > "$OUT/call4-tests.log" 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/call4-summary.txt"
grep -E "^(FAILED|ERROR|XFAIL|XPASS)" "$OUT/call4-tests.log" | cut -c1-300 | head -40 | tee -a "$OUT/call4-summary.txt"
tail -1 "$OUT/call4-tests.log" | tee -a "$OUT/call4-summary.txt"
gzip -f "$OUT/call4-tests.log"
