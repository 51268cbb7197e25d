#!/usr/bin/env bash
# Call 4, on the one-GPU kind (`nvidia-h200`, 16 host cores): the whole reference suite cold
# on its H200, with torch's, triton's, sympy's, numpy's and the carried wheels' bytecode
# compiled first (this image sets PYTHONDONTWRITEBYTECODE=1 and ships torch without it: call 3),
# against 2026-11-30's 226.5 s at 9e6dcba without it.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call4-machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
start=$(date +%s.%N)
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" /tmp/site > /dev/null 2>&1
echo "compileall: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
gunzip -c reports/published/2026-11-30-nvidia-h200-fp8-reference-on-device/call3-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=330 TAG=call4-cold source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
gzip -f "$OUT/call4-cold-suite.json" "$OUT/call4-cold-suite.log"
