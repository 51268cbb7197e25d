# shellcheck shell=bash
# Where an item's host time goes on a GPU machine (issue 43, item 2), warm Triton cache: the
# files once with -n 16 to compile, then again in one process (-p no:xdist --no-isolate) under
# cProfile; the top of the profile by own and by cumulative time.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD" CUDA_VISIBLE_DEVICES=0
files="suites/dense/first.yaml suites/epilogue"
args=(--backend reference -q -p no:randomly --conformance-html none)
timeout 200 python3 -m pytest $files "${args[@]}" -n 16 --results "$OUT/warm.json" > "$OUT/warm.log" 2>&1
echo "warm-up: exit $?; $(tail -1 "$OUT/warm.log")" | tee "$OUT/summary.txt"
start=$(date +%s)
timeout 300 python3 -m cProfile -o "$OUT/profile.pstats" -m pytest $files "${args[@]}" \
  -p no:xdist --no-isolate --results "$OUT/profiled.json" > "$OUT/profiled.log" 2>&1
echo "profiled: exit $? in $(( $(date +%s) - start )) s; $(tail -1 "$OUT/profiled.log")" | tee -a "$OUT/summary.txt"
python3 - "$OUT/profile.pstats" > "$OUT/profile-top.txt" <<'PY'
import pstats, sys
p = pstats.Stats(sys.argv[1])
p.sort_stats("tottime").print_stats(50)
p.sort_stats("cumulative").print_stats(r"gemmconf|backend|harness", 80)
p.sort_stats("cumulative").print_stats(r"torch/_dynamo/convert_frame|torch/cuda|cudagraph|synchron", 30)
PY
grep -E "function calls|^ +[0-9]" "$OUT/profile-top.txt" | head -30 | cut -c1-200
