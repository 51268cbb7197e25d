#!/usr/bin/env bash
# Call 1: stream-K on the Llama-3 8B decode projections (bf16, fp8 rowwise), against cuBLAS and
# the backend's own plan (`tools/tune_sm90.py --stream`); the split-K tests on the GPU; the
# decode and integrity suites with stream-K forced on every GEMM the dense kernel runs.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee "$OUT/call1-clocks.txt"
timeout 330 python3 tools/tune_sm90.py --stream 2>&1 | tee "$OUT/call1-stream.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee -a "$OUT/call1-clocks.txt"
timeout 120 python3 -m pytest tests/test_splitk.py -q -p no:randomly -p no:cacheprovider 2>&1 | tail -5 | tee "$OUT/call1-tests.txt"
timeout 150 python3 -m pytest suites/dense/broadcast_decode.yaml suites/integrity suites/epilogue \
  --backend reference:split_k=stream -n 12 -q -p no:randomly -p no:cacheprovider \
  --results "$OUT/call1-suites.json" --conformance-html none 2>&1 | tail -15 | tee "$OUT/call1-suites.txt"
gzip -f "$OUT/call1-suites.json"
