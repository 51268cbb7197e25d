#!/usr/bin/env bash
# Call 2, on `nvidia-h200`: the head's GPU paths after the torch-mlir trial's fixes (a failure's
# stdout kept, the group signature's rules, a reason's headline): the tests they touched, on CUDA.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
start=$(date +%s.%N)
timeout 300 python3 -m pytest tests/test_isolation.py tests/test_failure_triage.py \
  tests/test_outcome.py tests/test_repro_verdicts.py tests/test_speed.py tests/test_record.py \
  -n 8 -q -rfEs -p no:randomly > "$OUT/call2-tests.log" 2>&1
echo "tests: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary2.txt"
tail -4 "$OUT/call2-tests.log" | tee -a "$OUT/summary2.txt"
