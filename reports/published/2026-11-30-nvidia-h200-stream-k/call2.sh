#!/usr/bin/env bash
# Call 2: fp8 decode on stream-K by default. The split-K tests on the GPU; the suites that hold
# decode, fp8, integrity and epilogue items on `reference` (the default plan) and the decode
# suite with stream-K forced; then the A/B of the bench decode rows, 2d662e7 against this tree
# (kernel mode, interleaved with cuBLAS, trees alternating).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
timeout 120 python3 -m pytest tests/test_splitk.py -q -p no:randomly -p no:cacheprovider 2>&1 | tail -5 | tee "$OUT/call2-tests.txt"
timeout 150 python3 -m pytest suites/dense/broadcast_decode.yaml suites/integrity suites/epilogue suites/fp8 \
  --backend reference -n 14 -q -p no:randomly -p no:cacheprovider \
  --results "$OUT/call2-suites.json" --conformance-html none 2>&1 | tail -25 | tee "$OUT/call2-suites.txt"
timeout 60 python3 -m pytest suites/dense/broadcast_decode.yaml --backend reference:split_k=stream \
  -n 14 -q -p no:randomly -p no:cacheprovider --results "$OUT/call2-stream.json" \
  --conformance-html none 2>&1 | tail -8 | tee "$OUT/call2-stream.txt"
gzip -f "$OUT/call2-suites.json" "$OUT/call2-stream.json"
OUT=$OUT/ab HASH=0 BENCH_K=decode BACKENDS=reference BUDGET=260 timeout 290 \
  bash tools/kernel_ab_gpu.sh .whl/head-2d662e7.tar.gz > /dev/null 2>&1
tail -40 "$OUT/ab/log.txt"
