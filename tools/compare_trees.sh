#!/usr/bin/env bash
# Runs one pytest command over two trees on one machine, at the same time, and diffs the records:
# the behaviour check of a refactor ("every record id and every outcome identical").
#
#   SHARDS=7 bash tools/compare_trees.sh BASE.tar.gz NAME [pytest options...]
#   SHARDS=0 bash tools/compare_trees.sh BASE.tar.gz NAME -n 16 [pytest options...]
#
# BASE.tar.gz is `git archive <commit>` of the tree to compare against; the other tree is this
# one. Each tree is installed apart (pip --target); then each runs `pytest suites OPTIONS` as
# SHARDS processes (--shard i/SHARDS, no xdist), both trees at once, and merges its shards
# (gemmconf report merge). SHARDS=0 runs the trees one after the other, each as one pytest
# (give it -n N: xdist shares a GPU's memory between its workers; separate processes do not). Writes $OUT/NAME-base.json and $OUT/NAME-new.json, the logs, and
# prints `gemmconf report diff` of the two. LIMIT (seconds, default 500) stops a slow shard.
set -uo pipefail
base_archive=$1
name=$2
shift 2
OUT=${OUT:-reports/compare}
SHARDS=${SHARDS:-4}
mkdir -p "$OUT" /tmp/cmp-base /tmp/cmp-parts
# shellcheck source=tools/gpu_install.sh
. "$(dirname "$0")/gpu_install.sh"
install_trees "$base_archive" /tmp/cmp-base /tmp/site /tmp/cmp-parts base
gemmconf() { PYTHONPATH="/tmp/site-$1${PYTHONPATH:+:$PYTHONPATH}" python3 -c 'import sys; from gemmconf.cli import main; sys.exit(main(sys.argv[1:]))' "${@:2}"; }
shard() {
  local tree=$1 src=$2 i=$3
  shift 3
  (cd "$src" && PYTHONPATH="/tmp/site-$tree${PYTHONPATH:+:$PYTHONPATH}" timeout -s TERM "${LIMIT:-500}" \
    python3 -m pytest suites -q --tb=no -p no:xdist -p no:cacheprovider --conformance-html none \
    --shard "$i/$SHARDS" --results "/tmp/cmp-parts/$tree-$i.json" "$@" \
    >"/tmp/cmp-parts/$tree-$i.log" 2>&1
  echo "$tree shard $i: pytest exit $?" >>"/tmp/cmp-parts/$tree-$i.log")
}
start=$(date +%s)
if [ "$SHARDS" = 0 ]; then
  for tree in base new; do
    src=$([ $tree = base ] && echo /tmp/cmp-base || echo "$PWD")
    (cd "$src" && PYTHONPATH="/tmp/site-$tree${PYTHONPATH:+:$PYTHONPATH}" timeout -s TERM "${LIMIT:-500}" \
      python3 -m pytest suites -q --tb=no -p no:cacheprovider --conformance-html none \
      --results "/tmp/cmp-parts/$tree-1.json" "$@" >"/tmp/cmp-parts/$tree-1.log" 2>&1
    echo "$tree: pytest exit $?, $(($(date +%s) - start)) s since the start" >>"/tmp/cmp-parts/$tree-1.log")
  done
fi
for i in $(seq 1 "$SHARDS"); do
  shard base /tmp/cmp-base "$i" "$@" &
  shard new "$PWD" "$i" "$@" &
done
wait
echo "all shards done in $(($(date +%s) - start)) s"
for tree in base new; do
  tail -q -n 2 /tmp/cmp-parts/$tree-*.log | tee -a "$OUT/$name-$tree.log"
  gemmconf $tree report merge /tmp/cmp-parts/$tree-*.json -o "$OUT/$name-$tree.json" >>"$OUT/$name-$tree.log" 2>&1 ||
    tail -n 5 "$OUT/$name-$tree.log"
done
gemmconf new report diff "$OUT/$name-base.json" "$OUT/$name-new.json" >"$OUT/$name-diff.txt" 2>&1
echo "report diff exit $?"
tail -n 25 "$OUT/$name-diff.txt"
