#!/usr/bin/env bash
# Call 2, on a fresh `nvidia-h200`, the head (TREE), after the FlagGems trial's fixes:
# 1. the tests of what changed on CUDA (a pass near the bar at its rounds' median, the repro's
#    faulthandler, the groups' dtype split, the interpreter in the environment);
# 2. the whole reference suite cold at -n auto, `report diff` against call 1's run (its err_ratios
#    near the bar may move to their rounds' median; 0 outcome changes expected).
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cat "$OUT/machine.txt" >> "$OUT/summary.txt"; rm "$OUT/machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
start=$(date +%s)
timeout 200 python3 -m pytest tests/test_integrity.py tests/test_repro.py tests/test_capability.py tests/test_failure_triage.py \
  -n 8 -q -rfE -p no:randomly > "$OUT/call2-tests.log" 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s; $(tail -1 "$OUT/call2-tests.log")" | tee -a "$OUT/summary.txt"
grep -E "^(FAILED|ERROR)" "$OUT/call2-tests.log" | head -20 >> "$OUT/summary.txt"
xz -dkc reports/published/2026-12-02-nvidia-h200-longer-rounds/call1-reference-suite.json.xz > /tmp/durations.json
SUITE_LIMIT=240 TAG=call2-reference source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
tail -3 "$OUT/call2-reference-timeline.txt" >> "$OUT/summary.txt"
grep -A2 "who computed the passes" "$OUT/call2-reference-suite.log" >> "$OUT/summary.txt"
grep "borderline passes" "$OUT/call2-reference-suite.log" >> "$OUT/summary.txt"
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call2-reference-suite.json" > "$OUT/call2-reference-diff.txt" 2>&1
echo "report diff call 1 (9f1a7e7) -> this tree: exit $?; $(tail -1 "$OUT/call2-reference-diff.txt")" | tee -a "$OUT/summary.txt"
xz -9 "$OUT/call2-reference-suite.json" "$OUT/call2-tests.log"
gzip -9 "$OUT/call2-reference-suite.log"
mv "$OUT/summary.txt" "$OUT/call2-summary.txt"
