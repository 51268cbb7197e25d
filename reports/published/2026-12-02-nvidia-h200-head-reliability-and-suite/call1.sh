#!/usr/bin/env bash
# Call 1, on a fresh `nvidia-h200`, the tree at 43ba574: the tests of the isolation runner and of
# -n auto's worker count on CUDA (test_reliability was changed after its last GPU run), then the
# whole reference suite cold at -n auto (three workers per four host cores since 555d791), its
# `report diff` against 13c97dd's -n 12 run of the same day.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
mv "$OUT/machine.txt" "$OUT/call1-machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
start=$(date +%s)
timeout 200 python3 -m pytest tests/test_reliability.py tests/test_isolation.py tests/test_forkserver.py \
  -n 8 -q -rfE -p no:randomly > "$OUT/call1-tests.log" 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s; $(tail -1 "$OUT/call1-tests.log")" | tee -a "$OUT/summary.txt"
gunzip -c reports/published/2026-12-02-nvidia-h200-head-suite-and-worker-count/call3-n12-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=300 TAG=call1-nauto source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call1-nauto-suite.json" > "$OUT/call1-diff.txt" 2>&1
echo "report diff 13c97dd (-n 12) -> 43ba574 (-n auto): exit $?; $(tail -1 "$OUT/call1-diff.txt")" | tee -a "$OUT/summary.txt"
grep -m1 -E "workers|^created" "$OUT/call1-nauto-suite.log" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/call1-nauto-suite.json" "$OUT/call1-nauto-suite.log"
mv "$OUT/summary.txt" "$OUT/call1-summary.txt"
