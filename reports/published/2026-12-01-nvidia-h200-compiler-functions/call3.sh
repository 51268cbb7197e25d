#!/usr/bin/env bash
# Call 3, on the one-GPU kind (`nvidia-h200`): the test files this change touched, at 1b1d63c
# (call 1's failing test fixed; import errors of a backend's module; explain --run's line).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call3-machine.txt"
export PYTHONPATH="$PYTHONPATH:$PWD" PATH="/tmp/site/bin:$PATH"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
start=$(date +%s)
python3 -m pytest tests/test_bad_input.py tests/test_isolation.py tests/test_run.py -n 8 -q \
  -p no:randomly -rfEx > "$OUT/call3-tests.log" 2>&1
echo "tests: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/call3-summary.txt"
grep -E "^(FAILED|ERROR|XFAIL|XPASS)" "$OUT/call3-tests.log" | cut -c1-300 | tee -a "$OUT/call3-summary.txt"
tail -1 "$OUT/call3-tests.log" | tee -a "$OUT/call3-summary.txt"
