#!/usr/bin/env bash
# Call 1, on the one-GPU kind (`nvidia-h200`, 16 host cores), tree db4f371 (its review changes
# never ran on a GPU): the whole reference suite cold on the H200, its records against
# 2026-12-01's cold run at b83b824 (`report diff`), then the test files the commits since
# f2ededc touched.
set -u
export TREE=db4f371
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call1-machine.txt"
export PATH="/tmp/site/bin:$PATH"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
start=$(date +%s)
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
echo "compileall: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
before=reports/published/2026-12-01-nvidia-h200-worker-start/call4-cold-suite.json.gz
gunzip -c "$before" > /tmp/durations.json
SUITE_LIMIT=330 TAG=call1-cold source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call1-cold-suite.json" \
  > "$OUT/call1-diff.txt" 2>&1
echo "report diff against b83b824's cold run: exit $?" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/call1-diff.txt" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/call1-cold-suite.json" "$OUT/call1-cold-suite.log"
start=$(date +%s)
PYTHONPATH="$PYTHONPATH:$PWD" python3 -m pytest tests/test_bad_input.py tests/test_repro.py \
  tests/test_run.py tests/test_attribution.py tests/test_isolation.py -n 8 -q -p no:randomly \
  -rfEx > "$OUT/call1-tests.log" 2>&1
echo "tests: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
grep -E "^(FAILED|ERROR|XFAIL|XPASS)" "$OUT/call1-tests.log" | cut -c1-300 | tee -a "$OUT/summary.txt"
tail -1 "$OUT/call1-tests.log" | tee -a "$OUT/summary.txt"
