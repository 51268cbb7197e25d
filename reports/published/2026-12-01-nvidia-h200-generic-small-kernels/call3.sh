#!/usr/bin/env bash
# Call 3, on `nvidia-h200`: small problems' kernel time, this tree's rule against the fully
# specialised kernel (small_kernels.py); the synchronizing CUDA operations of 137 items in one
# process (tools/sync_census.py: the 77 items of 64 draws and 60 items of two draws of
# 2026-12-01's cold run, call3-census-ids.txt); the test files this change touched.
set -u
export TREE="ff1ff76 + gemm_kernel_generic + SMALL_PROBLEM_STAGES"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call3-machine.txt"
D=reports/published/2026-12-01-nvidia-h200-generic-small-kernels
start=$(date +%s)
timeout 120 python3 "$D/small_kernels.py" > "$OUT/call3-small-kernels.txt" 2>&1
echo "small_kernels: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
start=$(date +%s)
GEMMCONF_SYNC_CENSUS="$OUT/call3-sync-census.json" timeout 240 python3 -m pytest \
  "@$D/call3-census-ids.txt" --backend reference --no-isolate -p no:xdist -p no:randomly \
  -p tools.sync_census -q --conformance-html none --results "$OUT/call3-census-items.json" \
  > "$OUT/call3-census.log" 2>&1
echo "census: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
start=$(date +%s)
PYTHONPATH="$PYTHONPATH:$PWD" timeout 200 python3 -m pytest tests/test_reference_backend.py \
  tests/test_reference_golden.py tests/test_compile_once.py -n 8 -q -p no:randomly -rfEx \
  > "$OUT/call3-tests.log" 2>&1
echo "tests: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
tail -1 "$OUT/call3-tests.log" | tee -a "$OUT/summary.txt"
