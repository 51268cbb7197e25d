#!/usr/bin/env bash
# Call 1: where the largest items' time goes on an H200 (issue 43, item 2): the five items that
# took longest in 2026-11-30-nvidia-h200-gpu-tests call 3, run in one pytest process as an xdist
# worker of a 16-worker run would (one torch thread, four while drawing large inputs): first
# cold (their compiles), then warm under cProfile. Then the pristine check's tests on CUDA
# (3fe6399 looks at the CUDA keys only where the process has CUDA).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export OMP_NUM_THREADS=1 GEMMCONF_LARGE_DRAW_THREADS=4
FILES="suites/bench/anchors.yaml suites/seeds/cutlass_backend.yaml suites/integrity/k_tails.yaml"
PICK="(llama3_70b and fp8 and (gate_up or down) and not decode) or (bmm and no_expand and dynamic and bf16) or index_width"
for run in cold warm; do
  prof=()
  [ "$run" = warm ] && prof=(-m cProfile -o "$OUT/call1-warm.prof")
  /usr/bin/time -f "$run: %e s wall, %U s user, %S s sys, %M KiB max RSS" \
    timeout 240 python3 "${prof[@]}" -m pytest $FILES -k "$PICK" --backend reference \
    -p no:xdist -p no:randomly --no-isolate -q -rfE --results "$OUT/call1-$run.json" \
    --conformance-html none > "$OUT/call1-$run.log" 2>&1
  echo "$run: exit $?" | tee -a "$OUT/summary.txt"
  tail -4 "$OUT/call1-$run.log" | tee -a "$OUT/summary.txt"
done
python3 - "$OUT" <<'PY' | tee "$OUT/call1-phases.txt"
import json, pstats, sys
out = sys.argv[1]
for run in ("cold", "warm"):
    for r in json.load(open(f"{out}/call1-{run}.json"))["records"]:
        phases = {k: round(v, 2) for k, v in (r.get("phase_s") or {}).items()}
        print(run, r["id"], r["outcome"], round(r.get("duration_s") or 0, 2), phases)
stats = pstats.Stats(f"{out}/call1-warm.prof", stream=open(f"{out}/call1-profile.txt", "w"))
stats.sort_stats("cumulative").print_stats(120)
stats.sort_stats("tottime").print_stats(60)
PY
timeout 200 python3 -m pytest tests/test_pristine.py tests/test_attribution.py -q -p no:randomly \
  -p no:cacheprovider > "$OUT/call1-tests.log" 2>&1
echo "pristine/attribution tests: exit $?" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/call1-tests.log" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/call1-warm.prof"
