#!/usr/bin/env bash
# Call 1, on `nvidia-h200`: the tree at the head (the tests that share one costly fixture grouped;
# the isolation worker's exit status), its two changed test files on CUDA, then the whole
# reference suite cold at -n auto and `report diff` against 344eaa8's cold run (2026-12-01).
set -u
export TREE="${TREE:-unknown}"
here=reports/published/2026-12-02-nvidia-h200-head-suite-and-worker-count
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
mv "$OUT/machine.txt" "$OUT/call1-machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
start=$(date +%s.%N)
timeout 200 python3 -m pytest tests/test_backends_builtin.py plugins/gemmconf-cutlass/tests \
  -n 8 --dist loadgroup -q -rfEs -p no:randomly > "$OUT/call1-tests.log" 2>&1
echo "tests: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary1.txt"
tail -3 "$OUT/call1-tests.log" | tee -a "$OUT/summary1.txt"
gunzip -c reports/published/2026-12-01-nvidia-h200-head-suite-and-tests/call2-cold-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=280 TAG=call1-cold source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
mv "$OUT/summary.txt" "$OUT/call1-suite-summary.txt"
cat "$OUT/call1-suite-summary.txt" >> "$OUT/summary1.txt"
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call1-cold-suite.json" > "$OUT/call1-diff.txt" 2>&1
echo "report diff 344eaa8 -> head: exit $?" | tee -a "$OUT/summary1.txt"
tail -1 "$OUT/call1-diff.txt" | tee -a "$OUT/summary1.txt"
gzip -f "$OUT"/call1-cold-suite.json "$OUT"/call1-cold-suite.log
