#!/usr/bin/env bash
# A kernel refactor's before/after on one sm90 GPU in one call (issue 45, item 6; about 8
# minutes on an H200), from the project root after `source .whl/prelude.sh`:
#
#   bash tools/kernel_ab_gpu.sh BASE.tar.gz [NEW.tar.gz]
#
# BASE.tar.gz is `git archive <commit>` of the tree before the change; the other tree is this
# one, or NEW.tar.gz's (two earlier commits: HASH=0 then, as this tree's kernel_ab.py may not
# run on them). Each is installed apart (pip --target); this tree's gemmconf reads the results.
# Then, writing to $OUT (default reports/kernel-ab):
#
# 1. bitwise (HASH=1, the default; HASH=0 leaves it out, for more speed pairs): tools/kernel_ab.py
#    (this tree's) runs every EVERY-th suite item (default 6) on the reference backend, compiled
#    on this GPU, with each tree on the path: SHARDS processes per tree (default 4), both trees
#    at once, each stopped after HASH_LIMIT seconds (default 150; what it did by then is
#    compared); then `kernel_ab.py diff`: 0 differences expected. suites/stress is left out (its
#    large items, in 2 x SHARDS processes on one GPU, could run out of memory in one tree and
#    not the other).
# 2. speed: `pytest suites/bench --benchmark --bench-mode kernel -k "$BENCH_K"` on BACKENDS
#    (default `reference,reference:persistent=always`; default BENCH_K: the decode rows and the
#    8192^3 anchors; `reference` runs decode on gemm_kernel and the anchors on
#    hopper_gemm_kernel, `persistent=always` every item on the Triton persistent kernel), each
#    tree from its own folder (its own suite). Trees alternate, old then new, as long as BUDGET
#    seconds (default 480, from the start) leave room for another pair; each run times every
#    item interleaved with cuBLAS. Printed: each item's vs_cublas per run; then `gemmconf report
#    ab` over all the runs in the order they ran (old-1 new-1 old-2 new-2 ...): per item and per
#    backend's geomean, new's speed over old's with its interval, and the call. It needs two
#    pairs and calls a 5% change from about four: choose BENCH_K and BUDGET so that four fit.
#
# Files in $OUT (the device tool returns 8): log.txt (everything printed), hash-old.json and
# hash-new.json (the shards merged; HASH=1), bench-runs.tar.gz (bench-old-N.json and
# bench-new-N.json, N = 1, 2, ...), ab.txt and ab.json (`report ab`, `report ab --json`).
set -uo pipefail
base_archive=$1
new_archive=${2:-}
OUT=${OUT:-reports/kernel-ab}
HASH=${HASH:-1}
BACKENDS=${BACKENDS:-reference,reference:persistent=always}
EVERY=${EVERY:-6}
SHARDS=${SHARDS:-4}
HASH_LIMIT=${HASH_LIMIT:-150}
BUDGET=${BUDGET:-480}
BENCH_K=${BENCH_K:-decode or square}
# A warm machine keeps /tmp from an earlier call: this script's own folders start empty
# (install_trees empties the trees' folders)
rm -rf /tmp/kab-new /tmp/kab-parts /tmp/kab-site-reader
mkdir -p "$OUT" /tmp/kab-new /tmp/kab-parts
OUT=$(cd "$OUT" && pwd)
log="$OUT/log.txt"
start=$(date +%s)
say() { echo "$*" | tee -a "$log"; }
elapsed() { echo $(($(date +%s) - start)); }

# shellcheck source=tools/gpu_install.sh
. "$(dirname "$0")/gpu_install.sh"
install_trees "$base_archive" /tmp/kab-base /tmp/kab-site /tmp/kab-parts old
new_src=$PWD
reader=new  # the installed tree whose gemmconf reads the results: this one
if [ -n "$new_archive" ]; then  # this tree (installed as new above) reads; NEW.tar.gz's runs
  mv /tmp/kab-site-new /tmp/kab-site-reader && reader=reader
  tar xzf "$new_archive" -C /tmp/kab-new && new_src=/tmp/kab-new
  python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/kab-site-new /tmp/kab-new \
    >/tmp/kab-parts/new-install.log 2>&1 || { cat /tmp/kab-parts/new-install.log; exit 1; }
fi
on() { local tree=$1; shift; PYTHONPATH="/tmp/kab-site-$tree${PYTHONPATH:+:$PYTHONPATH}" "$@"; }
say "+ installed both trees ($(elapsed) s); $(nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader)"
say "$(python3 -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__)')"

# 1. bitwise: both trees at once, SHARDS processes each
tool="$PWD/tools/kernel_ab.py"
if [ "$HASH" != 0 ]; then
mapfile -t files < <(find "$PWD/suites" -name '*.yaml' | sort |
  grep -v -e /bench/ -e /cutlass/ -e /seeds/ -e /expectations/ -e /stress/)
for tree in old new; do
  for i in $(seq 0 $((SHARDS - 1))); do
    (cd /tmp && on $tree timeout -s TERM -k 30 "$HASH_LIMIT" python3 "$tool" run "${files[@]}" \
      --every "$EVERY" --shard "$i/$SHARDS" --out "/tmp/kab-parts/hash-$tree-$i.json" \
      >"/tmp/kab-parts/hash-$tree-$i.log" 2>&1) &
  done
done
wait
for tree in old new; do
  shard_files=$(ls /tmp/kab-parts/hash-$tree-*.json 2>/dev/null | paste -sd,)
  tail -qn 1 /tmp/kab-parts/hash-$tree-*.log | sed "s/^/$tree: /" | tee -a "$log"
  [ -n "$shard_files" ] && python3 - "$shard_files" "$OUT/hash-$tree.json" <<'PY'
import json, sys
sys.path.insert(0, "tools")
from kernel_ab import load
json.dump(load(sys.argv[1]), open(sys.argv[2], "w"), indent=1, sort_keys=True)
PY
done
say "+ python3 tools/kernel_ab.py diff hash-old.json hash-new.json ($(elapsed) s)"
python3 tools/kernel_ab.py diff "$OUT/hash-old.json" "$OUT/hash-new.json" 2>&1 | tail -n 60 | tee -a "$log"
say "diff exit status ${PIPESTATUS[0]}"
fi

# 2. speed: old, new, old, new, ... while a pair fits in the budget
runs=()
bench() {
  local tree=$1 n=$2
  local result=/tmp/kab-parts/bench-$tree-$n.json
  (cd "$([ "$tree" = old ] && echo /tmp/kab-base || echo "$new_src")" && on "$tree" python3 -m pytest \
    suites/bench --benchmark --bench-mode kernel -p no:xdist -p no:cacheprovider -q --tb=line \
    --conformance-html none -k "$BENCH_K" --backend "$BACKENDS" \
    --results "$result") >"/tmp/kab-parts/bench-$tree-$n.log" 2>&1
  say "bench $tree $n: $(tail -n 1 "/tmp/kab-parts/bench-$tree-$n.log") ($(elapsed) s)"
  runs+=("bench-$tree-$n.json")
}
n=0
pair_s=0
while [ $(($(elapsed) + pair_s)) -lt "$BUDGET" ]; do
  n=$((n + 1))
  before=$(elapsed)
  bench old $n
  bench new $n
  pair_s=$(($(elapsed) - before))
done
tar czf "$OUT/bench-runs.tar.gz" -C /tmp/kab-parts "${runs[@]}"
python3 - /tmp/kab-parts "${runs[@]}" <<'PY' 2>&1 | tee -a "$log"
import json, sys
folder, names = sys.argv[1], sys.argv[2:]
def vs(name):
    try:
        records = json.load(open(f"{folder}/{name}"))["records"]
    except (OSError, ValueError, KeyError):
        return {}
    return {(r["id"], r["backend"]): r.get("metrics", {}).get("vs_cublas") for r in records}
runs = {name[6:-5]: vs(name) for name in names}
keys = sorted(set().union(*runs.values()))
print("vs_cublas per item and run (kernel mode)")
print(f"{'item':64} " + " ".join(f"{k:>7}" for k in runs))
for key in keys:
    cells = " ".join(f"{v:7.3f}" if v else "      -" for v in (runs[k].get(key) for k in runs))
    print(f"{key[0][:52] + ' ' + key[1]:64} {cells}")
PY
# this tree's gemmconf, from the runs' folder (the files named as they ran)
report() {
  (cd /tmp/kab-parts && on "$reader" python3 -c \
    'import sys; from gemmconf.cli import main; sys.exit(main(sys.argv[1:]))' report ab "$@")
}
say "+ gemmconf report ab ${runs[*]}"
report "${runs[@]}" 2>&1 | tee "$OUT/ab.txt" | tee -a "$log"
say "report ab exit status ${PIPESTATUS[0]} (0: nothing called slower; 3: new called slower)"
report --json "${runs[@]}" >"$OUT/ab.json" 2>/dev/null
say "done in $(elapsed) s"
