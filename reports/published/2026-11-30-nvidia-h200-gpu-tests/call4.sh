#!/usr/bin/env bash
# Call 4: tests/test_import_cycles.py with import-linter (and its click, rich) carried, the one
# file call 2 failed for want of `lint-imports` on this machine.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD" PATH="/tmp/site/bin:$PATH"
python3 -m pytest tests/test_import_cycles.py -q -p no:randomly -rfEx > "$OUT/call4-tests.log" 2>&1
echo "tests/test_import_cycles.py: exit $?" | tee "$OUT/call4-summary.txt"
tail -1 "$OUT/call4-tests.log" | tee -a "$OUT/call4-summary.txt"
