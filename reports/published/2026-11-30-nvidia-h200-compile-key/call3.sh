# Call 3 on `nvidia-h200` (issue 43 item 1, issue 41), from the project root with .whl carried:
#   TREE=<commit> bash reports/published/2026-11-30-nvidia-h200-compile-key/call3.sh
# 1. ptxas_pinned.py: with the harness's pin, one inductor compile changes neither the ptxas nor
#    the Triton cache key of a later compile;
# 2. the Llama-3 8B decode bench items (kernel mode, interleaved with cuBLAS) with Triton's own
#    ptxas (TRITON_PTXAS_PATH set to it) and then with torch's (the pin's choice), each from a
#    cold Triton cache;
# 3. the whole reference suite, cold, -n auto, with the pin; `report diff` against call 1's run.
set -u
here=reports/published/2026-11-30-nvidia-h200-compile-key
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
python3 "$here/ptxas_pinned.py" 2>&1 | tee "$OUT/ptxas-pinned.txt"
triton_ptxas=$(python3 -c "import triton, os; print(os.path.join(os.path.dirname(triton.__file__), 'backends/nvidia/bin/ptxas'))")
torch_ptxas=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'bin/ptxas'))")
for which in triton torch; do
  path=$triton_ptxas; [ "$which" = torch ] && path=$torch_ptxas
  start=$(date +%s)
  TRITON_PTXAS_PATH=$path TRITON_CACHE_DIR=/tmp/tcache-decode-$which timeout 110 python3 -m pytest \
    suites/bench -k decode --backend reference --benchmark --bench-mode kernel -p no:xdist -q -rfE \
    --results "$OUT/decode-$which.json" --conformance-html none > "/tmp/decode-$which.log" 2>&1
  echo "decode, $which's ptxas ($path): exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
  grep -E "llama3_8b\[|ptxas" "/tmp/decode-$which.log" | tee -a "$OUT/summary.txt"
done
gunzip -c reports/published/2026-11-29-nvidia-h200-x2-suite-scaling/call1-one-gpu-suite.json.gz > /tmp/durations.json
TAG=pinned SUITE_LIMIT=300 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
gunzip -c "$here/call1-probe-suite.json.gz" > /tmp/call1.json
python3 -m gemmconf.cli report diff /tmp/call1.json "$OUT/pinned-suite.json" 2>&1 | tail -3 | tee -a "$OUT/summary.txt"
grep -E "ptxas" "$OUT/pinned-suite.log" | head -2 | tee -a "$OUT/summary.txt"
gzip -f "$OUT/pinned-suite.json" "$OUT/pinned-suite.log" "$OUT/decode-triton.json" "$OUT/decode-torch.json"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee -a "$OUT/summary.txt"
