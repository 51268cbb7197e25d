#!/usr/bin/env bash
# One call on `nvidia-h200` (2026-11-29, tree 3cc9c7d: split-K decode, shared fork server), from
# the project root with .whl carried:
#   TREE=3cc9c7d bash reports/published/2026-11-29-nvidia-h200-reference-suite-splitk/call1.sh
# 1. the whole reference suite, cold Triton cache, -n auto, --durations-from the 89bdc4a run
#    (2026-11-29-nvidia-h200-kernels-ab-reference-suite), with every worker's timeline;
# 2. `gemmconf report diff` of that run against the 89bdc4a run;
# 3. the decode bench items on this tree (kernel mode, interleaved with cuBLAS), clocks after.
set -u
here=reports/published/2026-11-29-nvidia-h200-reference-suite-splitk
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
before=reports/published/2026-11-29-nvidia-h200-kernels-ab-reference-suite/reference-suite.json.gz
gunzip -c "$before" > /tmp/durations.json
TAG=cold SUITE_LIMIT=330 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/cold-suite.json" > "$OUT/diff.txt" 2>&1
tail -5 "$OUT/diff.txt" | tee -a "$OUT/summary.txt"
start=$(date +%s)
timeout 150 python3 -m pytest suites/bench -k decode --backend reference --benchmark \
  --bench-mode kernel -p no:xdist -q -rfE --results "$OUT/decode.json" --conformance-html none \
  > "$OUT/decode.log" 2>&1
echo "decode bench: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
  | tee -a "$OUT/summary.txt"
gzip -f "$OUT/cold-suite.json"
