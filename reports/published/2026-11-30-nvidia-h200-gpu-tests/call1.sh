#!/usr/bin/env bash
# Call 1: the project's tests on the GPU at 9744576 (the side-stream check's fix 3a6d7b4 had not
# run on a GPU), with each test's duration, to see what kept the 2026-11-30 stream-K call 4 past
# 500 s. SIGINT at the limit so pytest still prints its summary and durations.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD" PATH="/tmp/site/bin:$PATH"
start=$(date +%s)
timeout -s INT 560 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 --dist loadgroup \
  -q -p no:randomly -rfEx --durations=60 > "$OUT/call1-tests.log" 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/call1-summary.txt"
grep -E "^(FAILED|ERROR|XFAIL|XPASS)" "$OUT/call1-tests.log" | cut -c1-300 | head -40 | tee -a "$OUT/call1-summary.txt"
tail -1 "$OUT/call1-tests.log" | tee -a "$OUT/call1-summary.txt"
grep -A62 "slowest" "$OUT/call1-tests.log" | head -64 > "$OUT/call1-durations.txt"
gzip -f "$OUT/call1-tests.log"
