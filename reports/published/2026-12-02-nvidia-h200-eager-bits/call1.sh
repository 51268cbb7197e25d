#!/usr/bin/env bash
# Call 1, on a fresh `nvidia-h200`, the head of the day (TREE):
# 1. the tests of what changed since a8b3b79 on CUDA (who computed: eager_bits; the summary's
#    and page's counts; the memory ledger's queue test);
# 2. whether a result aten's kernels computed is eager's bits on a GPU where nothing stood between
#    (dynamo:eager and dynamo:aot_eager hand the graph back) and where something did (inductor's
#    fused epilogues), over suites/dense/first.yaml and suites/epilogue;
# 3. the whole reference suite cold at -n auto, `report diff` against a8b3b79's cold run
#    (../2026-12-02-nvidia-h200-tf32-floor-and-inductor-kinds/, call 3): 0 changes expected.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cat "$OUT/machine.txt" >> "$OUT/summary.txt"; rm "$OUT/machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
here=reports/published/2026-12-02-nvidia-h200-tf32-floor-and-inductor-kinds
start=$(date +%s)
timeout 150 python3 -m pytest tests/test_attribution.py tests/test_report_summary.py \
  tests/test_report_page.py tests/test_memory.py -n 8 -q -rfE -p no:randomly \
  > /tmp/call1-tests.log 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s; $(tail -1 /tmp/call1-tests.log)" | tee -a "$OUT/summary.txt"
grep -E "^(FAILED|ERROR)" /tmp/call1-tests.log | head -20 >> "$OUT/summary.txt"
start=$(date +%s)
timeout 170 python3 -m pytest suites/dense/first.yaml suites/epilogue \
  --backend dynamo:eager,dynamo:aot_eager,inductor -n 12 -q -p no:randomly \
  --results "$OUT/call1-eager-bits.json" --conformance-html none > /tmp/call1-eager-bits.log 2>&1
echo "eager bits: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
grep -A4 "who computed the passes" /tmp/call1-eager-bits.log | tee -a "$OUT/summary.txt"
tail -1 /tmp/call1-eager-bits.log | tee -a "$OUT/summary.txt"
xz -f "$OUT/call1-eager-bits.json"
xz -dkc "$here/call3-reference-suite.json.xz" > /tmp/durations.json
SUITE_LIMIT=240 TAG=call1-reference source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
tail -3 "$OUT/call1-reference-timeline.txt" >> "$OUT/summary.txt"; rm "$OUT/call1-reference-timeline.txt"
grep -A3 "who computed the passes" "$OUT/call1-reference-suite.log" >> "$OUT/summary.txt"
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call1-reference-suite.json" > "$OUT/call1-reference-diff.txt" 2>&1
echo "report diff a8b3b79 -> this tree: exit $?; $(tail -1 "$OUT/call1-reference-diff.txt")" | tee -a "$OUT/summary.txt"
xz -f "$OUT/call1-reference-suite.json"; rm -f "$OUT/call1-reference-suite.log"
mv "$OUT/summary.txt" "$OUT/call1-summary.txt"
