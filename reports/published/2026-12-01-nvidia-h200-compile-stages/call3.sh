#!/usr/bin/env bash
# Call 3, on `nvidia-h200`: the whole reference suite cold at the session's head, and
# `report diff` against call 1's run (334ff5b).
set -u
export TREE="${TREE:-unknown}"
here=reports/published/2026-12-01-nvidia-h200-compile-stages
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
gunzip -c reports/published/2026-12-01-nvidia-h200-reference-suite-and-touched-tests/call1-cold-suite.json.gz \
  > /tmp/durations.json
SUITE_LIMIT=280 TAG=call3-cold source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
gunzip -c $here/call1-cold-suite.json.gz > /tmp/call1.json
python3 -m gemmconf.cli report diff /tmp/call1.json "$OUT/call3-cold-suite.json" > "$OUT/call3-diff.txt" 2>&1
echo "report diff call 1 -> call 3: exit $?" | tee -a "$OUT/summary3.txt"
tail -1 "$OUT/call3-diff.txt" | tee -a "$OUT/summary3.txt"
gzip -f "$OUT"/call3-cold-suite.json "$OUT"/call3-cold-suite.log
