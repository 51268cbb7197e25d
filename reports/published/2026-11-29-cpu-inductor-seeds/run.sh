# Default inductor over the whole CPU suite, --seed 1..5 (issue 40), on the 2-core dev CPU
# (Python 3.11.7, torch 2.13.0+cpu, triton 3.7.1), tree c048011, from a worktree at that commit.
# Seed 1 on an empty inductor cache; seeds 2-5 on the cache seed 1 left (the compiled graphs are
# the same for every seed: only the drawn values differ).
out=${OUT:-.}
for seed in 1 2 3 4 5; do
  start=$(date +%s)
  TORCHINDUCTOR_CACHE_DIR=/tmp/ind-cache-1 CUDA_VISIBLE_DEVICES="" python -m pytest suites \
    --backend inductor --seed "$seed" -n 2 -q -rfE -p no:benchmark -p no:randomly \
    --results "$out/seed$seed.json" --conformance-html none >"$out/seed$seed.log" 2>&1
  echo "seed $seed: exit $? in $(($(date +%s) - start)) s; $(tail -n 1 "$out/seed$seed.log")"
done
python tools/seed_stability.py results "$out"/seed{1,2,3,4,5}.json
