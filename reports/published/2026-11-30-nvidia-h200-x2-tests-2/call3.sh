# shellcheck shell=bash
# Where the large items' 30-45 s go (issue 43, item 2): five of the one-GPU run's longest items,
# compiled once (a warm Triton cache), then again in one process under cProfile, GPU 0.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PYTHONPATH:$PWD" CUDA_VISIBLE_DEVICES=0
files="suites/bench/anchors.yaml suites/seeds/cutlass_backend.yaml suites/integrity/k_tails.yaml"
select="(llama3_70b and fp8 and (gate_up or down)) or (bmm and no_expand and static) or (index_width and mm_bf16)"
args=(--backend reference -q -p no:randomly --conformance-html none -k "$select")
timeout 240 python3 -m pytest $files "${args[@]}" -n 5 --results "$OUT/warm.json" > "$OUT/warm.log" 2>&1
echo "warm-up: exit $?; $(tail -1 "$OUT/warm.log")" | tee "$OUT/summary.txt"
start=$(date +%s)
timeout 300 python3 -m cProfile -o "$OUT/profile.pstats" -m pytest $files "${args[@]}" \
  -p no:xdist --no-isolate --results "$OUT/profiled.json" > "$OUT/profiled.log" 2>&1
echo "profiled: exit $? in $(( $(date +%s) - start )) s; $(tail -1 "$OUT/profiled.log")" | tee -a "$OUT/summary.txt"
python3 - "$OUT/profile.pstats" > "$OUT/profile-top.txt" <<'PY'
import pstats, sys
p = pstats.Stats(sys.argv[1])
p.sort_stats("cumulative").print_stats(r"gemmconf/", 90)
p.sort_stats("tottime").print_stats(40)
PY
python3 - "$OUT/profiled.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["records"]:
    print(r["id"], r.get("outcome"), r.get("duration_s"), r.get("phase_s"))
PY
grep -E "^ +[0-9]" "$OUT/profile-top.txt" | head -45 | cut -c1-170
