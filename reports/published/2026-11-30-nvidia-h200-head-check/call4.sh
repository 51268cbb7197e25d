# shellcheck shell=bash
# Issue 41's rows before and after in one call: the 27 bench items (decode, prefill, square) in
# kernel mode, each interleaved with cuBLAS, 88e0d18 (.whl/base.tar.gz, `git archive 88e0d18`,
# reports/published left out: the tree the issue measured) then this tree, as long as the budget
# leaves room for another pair (tools/kernel_ab_gpu.sh), with the SM clock each run recorded.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD"
HASH=0 BENCH_K="bench" BACKENDS=reference BUDGET=330 OUT="$OUT/ab" \
  timeout 520 bash tools/kernel_ab_gpu.sh .whl/base.tar.gz > "$OUT/ab-stdout.txt" 2>&1
echo "kernel_ab_gpu: exit $?" | tee -a "$OUT/summary.txt"
grep -A40 "vs_cublas per item" "$OUT/ab-stdout.txt"
