#!/usr/bin/env bash
# Call 3, on a fresh `nvidia-h200`, the head (TREE), after the bitsandbytes trial's fixes:
# 1. the tests of what changed since call 2 on CUDA (who computed settled where a call raised,
#    the passes' notes, err_ratio of an all-NaN output, explain's failure line, expect --draft,
#    the still-running line, the memory ledger's queue);
# 2. call 1's eager-bits run again, `report diff` against it (0 changes expected);
# 3. the whole reference suite cold at -n auto, `report diff` against a8b3b79's cold run.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cat "$OUT/machine.txt" >> "$OUT/summary.txt"; rm "$OUT/machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
here=reports/published/2026-12-02-nvidia-h200-eager-bits
start=$(date +%s)
timeout 240 python3 -m pytest tests/test_attribution.py tests/test_oracle.py tests/test_report_summary.py \
  tests/test_report_page.py tests/test_run.py tests/test_failure_triage.py tests/test_long_items.py \
  tests/test_memory.py -n 8 -q -rfE -p no:randomly > "$OUT/call3-tests.log" 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s; $(tail -1 "$OUT/call3-tests.log")" | tee -a "$OUT/summary.txt"
grep -E "^(FAILED|ERROR)" "$OUT/call3-tests.log" | head -20 >> "$OUT/summary.txt"
start=$(date +%s)
timeout 170 python3 -m pytest suites/dense/first.yaml suites/epilogue \
  --backend dynamo:eager,dynamo:aot_eager,inductor -n 12 -q -p no:randomly \
  --results /tmp/call3-eager-bits.json --conformance-html none > /tmp/call3-eager-bits.log 2>&1
echo "eager bits: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
grep -A4 "who computed the passes" /tmp/call3-eager-bits.log | tee -a "$OUT/summary.txt"
xz -dkc "$here/call1-eager-bits.json.xz" > /tmp/call1-eager-bits.json
python3 -m gemmconf.cli report diff /tmp/call1-eager-bits.json /tmp/call3-eager-bits.json > "$OUT/call3-eager-bits-diff.txt" 2>&1
echo "report diff call 1 -> this tree (eager bits): exit $?; $(tail -1 "$OUT/call3-eager-bits-diff.txt")" | tee -a "$OUT/summary.txt"
xz -dkc reports/published/2026-12-02-nvidia-h200-tf32-floor-and-inductor-kinds/call3-reference-suite.json.xz > /tmp/durations.json
SUITE_LIMIT=240 TAG=call3-reference source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
tail -3 "$OUT/call3-reference-timeline.txt" >> "$OUT/summary.txt"; rm "$OUT/call3-reference-timeline.txt"
grep -A1 "who computed the passes" "$OUT/call3-reference-suite.log" >> "$OUT/summary.txt"
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call3-reference-suite.json" > "$OUT/call3-reference-diff.txt" 2>&1
echo "report diff a8b3b79 -> this tree: exit $?; $(tail -1 "$OUT/call3-reference-diff.txt")" | tee -a "$OUT/summary.txt"
rm -f "$OUT/call3-reference-suite.json" "$OUT/call3-reference-suite.log"
mv "$OUT/summary.txt" "$OUT/call3-summary.txt"
