#!/usr/bin/env bash
# Call 2, on the one-GPU kind (`nvidia-h200`): the project's tests at e7fc4a6 (call 1's failing
# test fixed), with torch's bytecode compiled first, 16 workers, as the 2026-11-30 GPU tests ran.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call2-machine.txt"
export PYTHONPATH="$PYTHONPATH:$PWD" PATH="/tmp/site/bin:$PATH"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
start=$(date +%s)
timeout -s INT 560 python3 -m pytest tests plugins/gemmconf-cutlass/tests -n 16 --dist loadgroup \
  -q -p no:randomly -rfEx --durations=30 > "$OUT/call2-tests.log" 2>&1
echo "tests: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/call2-summary.txt"
grep -E "^(FAILED|ERROR|XFAIL|XPASS)" "$OUT/call2-tests.log" | cut -c1-300 | head -40 | tee -a "$OUT/call2-summary.txt"
tail -1 "$OUT/call2-tests.log" | tee -a "$OUT/call2-summary.txt"
gzip -f "$OUT/call2-tests.log"
