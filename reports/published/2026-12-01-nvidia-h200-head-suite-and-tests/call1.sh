#!/usr/bin/env bash
# Call 1, on `nvidia-h200`: the tree's GPU paths after b22ff76 (the compile stages summed with
# Counter.update, a worker's Printed built by stream name): the tests that touch them on CUDA,
# then the whole reference suite cold and `report diff` against the compile-stages call 3 run.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
start=$(date +%s.%N)
timeout 240 python3 -m pytest tests/test_speed.py tests/test_compile_once.py \
  tests/test_isolation.py tests/test_failure_triage.py tests/test_interrupt.py \
  -n 8 -q -rfEs -p no:randomly > "$OUT/call1-tests.log" 2>&1
echo "tests: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/call1-tests.log" | tee -a "$OUT/summary.txt"
gunzip -c reports/published/2026-12-01-nvidia-h200-reference-suite-and-touched-tests/call1-cold-suite.json.gz \
  > /tmp/durations.json
SUITE_LIMIT=280 TAG=call1-cold source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
gunzip -c reports/published/2026-12-01-nvidia-h200-compile-stages/call3-cold-suite.json.gz > /tmp/before.json
python3 -m gemmconf.cli report diff /tmp/before.json "$OUT/call1-cold-suite.json" > "$OUT/call1-diff.txt" 2>&1
echo "report diff compile-stages call 3 -> this call: exit $?" | tee -a "$OUT/summary.txt"
tail -1 "$OUT/call1-diff.txt" | tee -a "$OUT/summary.txt"
gzip -f "$OUT"/call1-cold-suite.json "$OUT"/call1-cold-suite.log
