#!/usr/bin/env bash
# Call 5: at aa8ce9c, the tests of what changed after call 4 (a failure's record keeps what its
# worker printed on stderr; failure groups split by it) on the GPU.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD" PATH="/tmp/site/bin:$PATH"
cp "$OUT/machine.txt" "$OUT/call5-machine.txt"
timeout 300 python3 -m pytest tests/test_isolation.py tests/test_failure_triage.py \
  tests/test_record.py tests/test_report_summary.py tests/test_report_page.py -n 8 -q \
  -p no:randomly -rfEx > "$OUT/call5-tests.log" 2>&1
echo "tests: exit $?" | tee "$OUT/call5-summary.txt"
tail -3 "$OUT/call5-tests.log" | tee -a "$OUT/call5-summary.txt"
