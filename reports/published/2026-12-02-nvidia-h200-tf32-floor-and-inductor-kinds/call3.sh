#!/usr/bin/env bash
# Call 3, on a fresh `nvidia-h200`, the head of the day (TREE): the tests of what changed since
# 0782e60 on CUDA (expectations' matching by kind and message, the previous results kept, report
# diff's --without-expectations, the summary's XPASS (PyTorch)), then the whole reference suite
# cold at -n auto and its `report diff` against call 1's run (0 changes expected: no reference
# path changed; the expectations' decision did).
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cat "$OUT/machine.txt" >> "$OUT/summary.txt"; rm "$OUT/machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
here=reports/published/2026-12-02-nvidia-h200-tf32-floor-and-inductor-kinds
start=$(date +%s)
timeout 150 python3 -m pytest tests/test_expectations.py tests/test_plugin.py tests/test_report_diff.py \
  tests/test_report_summary.py tests/test_run.py tests/test_failure_triage.py -n 8 -q -rfE -p no:randomly \
  > /tmp/call3-tests.log 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s; $(tail -1 /tmp/call3-tests.log)" | tee -a "$OUT/summary.txt"
grep -E "^(FAILED|ERROR)" /tmp/call3-tests.log | head -20 >> "$OUT/summary.txt"
xz -dkc "$here/call1-reference-suite.json.xz" > /tmp/durations.json
SUITE_LIMIT=240 TAG=call3-reference source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
tail -3 "$OUT/call3-reference-timeline.txt" >> "$OUT/summary.txt"; rm "$OUT/call3-reference-timeline.txt"
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call3-reference-suite.json" > "$OUT/call3-reference-diff.txt" 2>&1
echo "report diff call 1 -> this tree: exit $?; $(tail -1 "$OUT/call3-reference-diff.txt")" | tee -a "$OUT/summary.txt"
xz -f "$OUT/call3-reference-suite.json"; rm -f "$OUT/call3-reference-suite.log"
mv "$OUT/summary.txt" "$OUT/call3-summary.txt"
