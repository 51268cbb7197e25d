# Call 4 on `nvidia-h200` (issue 43 item 1, issue 41), from the project root with .whl carried:
#   TREE=<commit> bash reports/published/2026-11-30-nvidia-h200-compile-key/call4.sh
# 1. the 27 bench items (kernel mode, interleaved with cuBLAS), each from a cold Triton cache,
#    with the ptxas the harness now pins (Triton's own), then with torch's (TRITON_PTXAS_PATH);
# 2. the whole reference suite, cold, -n auto, with the pin; `report diff` against call 1's run.
set -u
here=reports/published/2026-11-30-nvidia-h200-compile-key
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
torch_ptxas=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'bin/ptxas'))")
for which in triton torch; do
  start=$(date +%s)
  env_ptxas=(); [ "$which" = torch ] && env_ptxas=(TRITON_PTXAS_PATH="$torch_ptxas")
  env "${env_ptxas[@]}" TRITON_CACHE_DIR=/tmp/tcache-bench-$which timeout 170 python3 -m pytest \
    suites/bench --backend reference --benchmark --bench-mode kernel -p no:xdist -rfE \
    --results "$OUT/bench-$which.json" --conformance-html none > "/tmp/bench-$which.log" 2>&1
  echo "bench, $which's ptxas: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
  grep -E "ptxas|\] +reference|passed|failed" "/tmp/bench-$which.log" | tee -a "$OUT/summary.txt"
done
gunzip -c reports/published/2026-11-29-nvidia-h200-x2-suite-scaling/call1-one-gpu-suite.json.gz > /tmp/durations.json
TAG=pinned SUITE_LIMIT=280 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
gunzip -c "$here/call1-probe-suite.json.gz" > /tmp/call1.json
python3 -m gemmconf.cli report diff /tmp/call1.json "$OUT/pinned-suite.json" 2>&1 | tail -1 | tee -a "$OUT/summary.txt"
tar czf "$OUT/bench-logs.tar.gz" -C /tmp bench-triton.log bench-torch.log
gzip -f "$OUT/pinned-suite.json" "$OUT/pinned-suite.log" "$OUT/bench-triton.json" "$OUT/bench-torch.json"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee -a "$OUT/summary.txt"
