#!/usr/bin/env bash
# Call 2, on `nvidia-h200`: 344eaa8 (a call of the backend is given eager's answer; the call
# guards' `watch(item, tensors, eager)`): the tests of the guards on CUDA, then the whole
# reference suite cold and `report diff` against call 1's run.
set -u
export TREE="${TREE:-unknown}"
here=reports/published/2026-12-01-nvidia-h200-head-suite-and-tests
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
mv "$OUT/machine.txt" "$OUT/call2-machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
start=$(date +%s.%N)
timeout 240 python3 -m pytest tests/test_integrity.py tests/test_planted_bugs.py tests/test_memory.py \
  -n 8 -q -rfEs -p no:randomly > "$OUT/call2-tests.log" 2>&1
echo "tests: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary2.txt"
tail -3 "$OUT/call2-tests.log" | tee -a "$OUT/summary2.txt"
gunzip -c $here/call1-cold-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=280 TAG=call2-cold source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
mv "$OUT/summary.txt" "$OUT/call2-suite-summary.txt"
cat "$OUT/call2-suite-summary.txt" >> "$OUT/summary2.txt"
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call2-cold-suite.json" > "$OUT/call2-diff.txt" 2>&1
echo "report diff call 1 -> call 2: exit $?" | tee -a "$OUT/summary2.txt"
tail -1 "$OUT/call2-diff.txt" | tee -a "$OUT/summary2.txt"
gzip -f "$OUT"/call2-cold-suite.json "$OUT"/call2-cold-suite.log
