#!/usr/bin/env bash
# A kernel refactor's before/after on one sm90 GPU in one call (issue 45, item 6; about 8
# minutes on an H200), from the project root after `source .whl/prelude.sh`:
#
#   bash tools/kernel_ab_gpu.sh BASE.tar.gz
#
# BASE.tar.gz is `git archive <commit>` of the tree before the change; the other tree is this
# one. Each is installed apart (pip --target). Then, writing to $OUT (default reports/kernel-ab):
#
# 1. bitwise: tools/kernel_ab.py (this tree's) runs every EVERY-th suite item (default 6) on the
#    reference backend, compiled on this GPU, with each tree on the path: SHARDS processes per
#    tree (default 4), both trees at once, each stopped after HASH_LIMIT seconds (default 150;
#    what it did by then is compared); then `kernel_ab.py diff`: 0 differences expected.
#    suites/stress is left out (its large items, in 2 x SHARDS processes on one GPU, could run
#    out of memory in one tree and not the other).
# 2. speed: `pytest suites/bench --benchmark --bench-mode kernel -k "$BENCH_K"` on
#    `reference,reference:persistent=always` (default BENCH_K: the decode rows and the 8192^3
#    anchors; `reference` runs decode on gemm_kernel and the anchors on hopper_gemm_kernel, the
#    Gluon kernel this change leaves alone, as a control; `persistent=always` runs every item on
#    the Triton persistent kernel). Trees alternate, old then new, as long as BUDGET seconds
#    (default 480, from the start) leave room for another pair; each run times every item
#    interleaved with cuBLAS. Printed: each item's vs_cublas per run, and per pair new / old.
#
# Files in $OUT (at most 8): log.txt (everything printed), hash-old.json and hash-new.json
# (the shards merged), bench-old-N.json and bench-new-N.json (N = 1, 2, ...).
set -uo pipefail
base_archive=$1
OUT=${OUT:-reports/kernel-ab}
EVERY=${EVERY:-6}
SHARDS=${SHARDS:-4}
HASH_LIMIT=${HASH_LIMIT:-150}
BUDGET=${BUDGET:-480}
BENCH_K=${BENCH_K:-decode or square}
mkdir -p "$OUT" /tmp/kab-base /tmp/kab-parts
OUT=$(cd "$OUT" && pwd)
log="$OUT/log.txt"
start=$(date +%s)
say() { echo "$*" | tee -a "$log"; }
elapsed() { echo $(($(date +%s) - start)); }

# shellcheck source=tools/gpu_install.sh
. "$(dirname "$0")/gpu_install.sh"
install_trees "$base_archive" /tmp/kab-base /tmp/kab-site /tmp/kab-parts old
on() { local tree=$1; shift; PYTHONPATH="/tmp/kab-site-$tree${PYTHONPATH:+:$PYTHONPATH}" "$@"; }
say "+ installed both trees ($(elapsed) s); $(nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader)"
say "$(python3 -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__)')"

# 1. bitwise: both trees at once, SHARDS processes each
tool="$PWD/tools/kernel_ab.py"
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

# 2. speed: old, new, old, new, ... while a pair fits in the budget
bench() {
  local tree=$1 n=$2
  (cd "$([ "$tree" = old ] && echo /tmp/kab-base || echo "$PWD")" && on "$tree" python3 -m pytest \
    suites/bench --benchmark --bench-mode kernel -p no:xdist -p no:cacheprovider -q --tb=line \
    --conformance-html none -k "$BENCH_K" --backend reference,reference:persistent=always \
    --results "$OUT/bench-$tree-$n.json") >"/tmp/kab-parts/bench-$tree-$n.log" 2>&1
  say "bench $tree $n: $(tail -n 1 "/tmp/kab-parts/bench-$tree-$n.log") ($(elapsed) s)"
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
python3 - "$OUT" "$n" <<'PY' 2>&1 | tee -a "$log"
import json, math, sys
out, pairs = sys.argv[1], int(sys.argv[2])
def vs(path):
    try:
        records = json.load(open(path))["records"]
    except (OSError, ValueError, KeyError):
        return {}
    return {(r["id"], r["backend"]): r.get("metrics", {}).get("vs_cublas") for r in records}
runs = {f"{t}-{n}": vs(f"{out}/bench-{t}-{n}.json") for n in range(1, pairs + 1) for t in ("old", "new")}
keys = sorted(set().union(*runs.values()))
print("vs_cublas per item and run (kernel mode); new/old: per pair")
print(f"{'item':64} " + " ".join(f"{k:>7}" for k in runs) + "  new/old")
logs = {n: [] for n in range(1, pairs + 1)}
for key in keys:
    row = [runs[k].get(key) for k in runs]
    ratios = []
    for n in range(1, pairs + 1):
        o, w = runs[f"old-{n}"].get(key), runs[f"new-{n}"].get(key)
        if o and w:
            ratios.append(w / o)
            logs[n].append(math.log(w / o))
    cells = " ".join(f"{v:7.3f}" if v else "      -" for v in row)
    print(f"{key[0][:52] + ' ' + key[1]:64} {cells}  " + " ".join(f"{r:.3f}" for r in ratios))
for n, values in logs.items():
    if values:
        print(f"pair {n}: geomean new/old {math.exp(sum(values) / len(values)):.4f} over {len(values)} items")
PY
for i in $(seq 1 "$n"); do
  say "+ gemmconf report diff bench-old-$i.json bench-new-$i.json"
  on new python3 -c 'import sys; from gemmconf.cli import main; sys.exit(main(sys.argv[1:]))' \
    report diff "$OUT/bench-old-$i.json" "$OUT/bench-new-$i.json" 2>&1 | tail -n 30 | tee -a "$log"
done
say "done in $(elapsed) s"
