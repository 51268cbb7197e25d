#!/usr/bin/env bash
# Call 1 on `nvidia-h200-x2` (issue 43, items 3 and 7), from the project root with .whl carried:
#   TREE=<commit> bash reports/published/2026-11-29-nvidia-h200-x2-suite-scaling/call1.sh
# 1. the whole reference suite, cold Triton cache, -n auto over both GPUs;
# 2. the same on one GPU of the same machine (CUDA_VISIBLE_DEVICES=0), its own cold cache;
# 3. `gemmconf report diff` of the two runs (same records, same outcomes).
# Both order items by the 2026-11-29 one-H200 run's durations (da6e2be).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
gunzip -c reports/published/2026-11-29-nvidia-h200-reference-suite-splitk/cold-suite.json.gz > /tmp/durations.json
TAG=two-gpu SUITE_LIMIT=270 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
CUDA_VISIBLE_DEVICES=0 TAG=one-gpu SUITE_LIMIT=270 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff "$OUT/one-gpu-suite.json" "$OUT/two-gpu-suite.json" > "$OUT/diff.txt" 2>&1
tail -3 "$OUT/diff.txt" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/two-gpu-suite.json" "$OUT/one-gpu-suite.json" "$OUT/two-gpu-suite.log" "$OUT/one-gpu-suite.log"
