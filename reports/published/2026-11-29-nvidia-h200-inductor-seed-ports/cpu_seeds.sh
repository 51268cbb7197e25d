# The whole CPU suite over run seeds, on the host's cores with the GPUs hidden (issue 40: seeds
# 1..5 on eager, reference and inductor: 0 verdicts differ). BACKENDS: --backend's list; SEEDS:
# the seeds, in order; each run is stopped after LIMIT seconds (SIGTERM keeps its results so far).
# numpy 2.4.6 is carried (.whl-np): triton 3.6's interpreter fails on numpy 2.5's scalar
# conversion ("only 0-dimensional arrays can be converted to Python scalars"). Results and logs
# are packed into $OUT/cpu-seeds-FIRST-LAST.tar.gz (the device returns at most 8 files).
# FRESH_CACHE=1 gives each seed an empty TORCHINDUCTOR_CACHE_DIR, so that the seed is the only
# thing that differs between runs (on 2026-11-29 a second seed found the first's compiled graphs).
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
python3 -m pip install -q --no-index --no-deps --target /tmp/np .whl-np/*.whl >/dev/null 2>&1 &&
  export PYTHONPATH="/tmp/np:$PYTHONPATH"
python3 -c "import numpy; print('numpy', numpy.__version__)"
export CUDA_VISIBLE_DEVICES="" OMP_NUM_THREADS=1
work=/tmp/cpu-seeds && mkdir -p $work
for seed in ${SEEDS:-1 2 3 4 5}; do
  start=$(date +%s)
  [ "${FRESH_CACHE:-0}" = 1 ] && export TORCHINDUCTOR_CACHE_DIR="$work/inductor-cache-$seed"
  timeout -s TERM "${LIMIT:-100}" python3 -m pytest suites --backend "${BACKENDS:-inductor}" --seed "$seed" \
    -n "${JOBS:-auto}" -q -rfE -p no:benchmark -p no:randomly --results "$work/seed$seed.json" \
    --conformance-html none >"$work/seed$seed.log" 2>&1
  echo "seed $seed: exit $? in $(($(date +%s) - start)) s; $(tail -n 1 "$work/seed$seed.log")"
done
python3 tools/seed_stability.py results $work/seed*.json 2>&1 | tail -n 40
set -- ${SEEDS:-1 2 3 4 5}
tar czf "$OUT/cpu-seeds-$1-${!#}.tar.gz" -C $work --exclude "inductor-cache-*" .
