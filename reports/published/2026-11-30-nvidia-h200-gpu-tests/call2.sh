#!/usr/bin/env bash
# Call 2: the project's tests on the GPU with test_planted_bugs grouped per planted backend
# (call 1: the module's one group held one worker of 16 past the 560 s limit) and grimp
# carried for test_import_cycles (call 1: not importable there).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD" PATH="/tmp/site/bin:$PATH"
start=$(date +%s)
timeout -s INT 560 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 --dist loadgroup \
  -q -p no:randomly -rfEx --durations=60 > "$OUT/call2-tests.log" 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/call2-summary.txt"
grep -E "^(FAILED|ERROR|XFAIL|XPASS)" "$OUT/call2-tests.log" | cut -c1-300 | head -40 | tee -a "$OUT/call2-summary.txt"
tail -1 "$OUT/call2-tests.log" | tee -a "$OUT/call2-summary.txt"
grep -A62 "slowest" "$OUT/call2-tests.log" | head -64 > "$OUT/call2-durations.txt"
gzip -f "$OUT/call2-tests.log"
