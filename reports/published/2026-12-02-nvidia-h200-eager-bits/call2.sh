#!/usr/bin/env bash
# Call 2, on a fresh `nvidia-h200`, the head (TREE):
# 1. why call 1's test_aten_s_weight_only_gemm_is_seen_and_the_backend_s failed on CUDA: aten's
#    `_weight_int8pack_mm` on CUDA tensors (fp32 and bf16 activations), then the test with -rA;
# 2. issue 41, item 1: the bf16 and fp8 decode bench items, kernel mode, cuBLAS interleaved, three
#    runs one after another, with the SM clock each item ran at.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cat "$OUT/machine.txt" >> "$OUT/summary.txt"; rm "$OUT/machine.txt"
python3 - <<'PY' 2>&1 | tee -a "$OUT/summary.txt"
import torch
for dtype in (torch.float32, torch.bfloat16):
    a = torch.randn(64, 64, device="cuda", dtype=dtype)
    w = torch.randint(-127, 127, (64, 64), device="cuda", dtype=torch.int8)
    s = torch.rand(64, device="cuda", dtype=dtype)
    try:
        torch.ops.aten._weight_int8pack_mm(a, w, s)
        print(f"_weight_int8pack_mm on CUDA, {dtype}: ran")
    except Exception as exc:
        print(f"_weight_int8pack_mm on CUDA, {dtype}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
PY
timeout 120 python3 -m pytest tests/test_attribution.py -k weight_only -p no:randomly -q -rA -n 0 \
  > "$OUT/call2-weight-only-test.log" 2>&1
echo "weight-only test: exit $?; $(tail -1 "$OUT/call2-weight-only-test.log")" | tee -a "$OUT/summary.txt"
for run in 1 2 3; do
  start=$(date +%s)
  TRITON_CACHE_DIR=/tmp/tcache-decode timeout 120 python3 -m pytest suites/bench -k decode \
    --backend reference --benchmark --bench-mode kernel -p no:xdist -q -rfE \
    --results "$OUT/call2-decode-$run.json" --conformance-html none > "/tmp/decode-$run.log" 2>&1
  echo "decode run $run: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
  python3 - "$OUT/call2-decode-$run.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
for r in json.load(open(sys.argv[1]))["records"]:
    m = r.get("metrics") or {}
    if "vs_cublas" in m:
        print(f"  {r['id']}: {m['vs_cublas']:.3f}x cuBLAS (spread {m.get('vs_cublas_spread')}), "
              f"{m.get('time_ms')} ms, SM {m.get('gpu_sm_clock_mhz')} MHz")
PY
done
xz -f "$OUT"/call2-decode-*.json
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee -a "$OUT/summary.txt"
mv "$OUT/summary.txt" "$OUT/call2-summary.txt"
