#!/usr/bin/env bash
# Call 5 (`nvidia-h200`, 2026-11-29): the decode bench items on d4f18fd's rule (the tile chosen
# from the tile count and the SMs, K slices of at least 32 K tiles), twice, kernel mode,
# interleaved with cuBLAS; then the dense, epilogue and integrity suites on the reference
# backend, compiled on this GPU. From the project root with .whl carried:
#   TREE=<commit> bash reports/published/2026-11-29-nvidia-h200-splitk-decode/call5.sh
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
for run in 1 2; do
  start=$(date +%s)
  timeout 120 python3 -m pytest suites/bench -k decode --backend reference --benchmark \
    --bench-mode kernel -p no:xdist -q -rfE --results "$OUT/call5-decode-$run.json" \
    --conformance-html none > "$OUT/call5-decode-$run.log" 2>&1
  echo "decode run $run: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/call5-summary.txt"
  grep -E "llama3_8b\[" "$OUT/call5-decode-$run.log" | tee -a "$OUT/call5-summary.txt"
done
start=$(date +%s)
timeout 170 python3 -m pytest suites/dense suites/epilogue suites/integrity --backend reference \
  -n 12 -q -rfE -p no:randomly --results "$OUT/call5-suites.json" --conformance-html none \
  > "$OUT/call5-suites.log" 2>&1
echo "dense, epilogue, integrity: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/call5-summary.txt"
tail -3 "$OUT/call5-suites.log" | tee -a "$OUT/call5-summary.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
  | tee -a "$OUT/call5-summary.txt"
