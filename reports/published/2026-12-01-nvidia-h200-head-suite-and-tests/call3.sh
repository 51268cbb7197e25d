#!/usr/bin/env bash
# Call 3, on `nvidia-h200`: 344eaa8's call guards on CUDA: test_integrity and test_memory alone
# (call 2's 240 s for them with test_planted_bugs ended at 59%, no failure by then).
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
mv "$OUT/machine.txt" "$OUT/call3-machine.txt"
start=$(date +%s.%N)
timeout 400 python3 -m pytest tests/test_integrity.py tests/test_memory.py \
  -n 8 -q -rfEs -p no:randomly > "$OUT/call3-tests.log" 2>&1
echo "tests: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary3.txt"
tail -3 "$OUT/call3-tests.log" | tee -a "$OUT/summary3.txt"
