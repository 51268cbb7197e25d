# shellcheck shell=bash
# Issue 41 on one H200: (1) the 8192^3 anchors called back to back for seconds at free clocks,
# the reference's kernel and cuBLAS's alternating, with the SM clock and power sampled
# (tools/sustained_clock.py): where both kernels keep the tensor pipe equally busy at locked
# clocks (call 2's Nsight Compute), what is left is the clock the power limit allows; (2) item 4:
# f115ea6's one helper for the fp8 K loop's triplets, the tree before it (.whl/base.tar.gz,
# `git archive f115ea6^`) against this one: the hopper kernel's 8192^3 results bit for bit
# (tools/hopper_bits.py, each tree first on the path), then tools/kernel_ab_gpu.sh's kernel-mode
# runs of the fp8 bench items that are not decode, trees alternating, and `report ab`.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD"
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv | tee -a "$OUT/summary.txt"
timeout 150 python3 tools/sustained_clock.py bf16 fp8 2>&1 | grep -v Warning | tee "$OUT/sustained.txt"
HASH=0 BENCH_K="fp8 and not decode" BACKENDS=reference BUDGET=330 OUT="$OUT/ab" \
  timeout 420 bash tools/kernel_ab_gpu.sh .whl/base.tar.gz > "$OUT/ab-stdout.txt" 2>&1
echo "kernel_ab_gpu: exit $?" | tee -a "$OUT/summary.txt"
for tree in old new; do
  PYTHONPATH="/tmp/kab-site-$tree:$PYTHONPATH" timeout 90 python3 tools/hopper_bits.py bf16 fp8 \
    2>&1 | grep -v Warning | sed "s/^/$tree: /" | tee -a "$OUT/bits.txt"
done
tail -n 30 "$OUT/ab/ab.txt" 2>/dev/null
