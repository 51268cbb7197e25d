#!/usr/bin/env bash
# Call 3 on `nvidia-h200-x2` (issue 43, item 7), from the project root with .whl carried:
#   TREE=<commit> bash reports/published/2026-11-29-nvidia-h200-x2-suite-scaling/call3.sh
# Shards 1..4 of the whole reference suite, each its own pytest run over both GPUs
# (--shard i/4 --durations-from call 1's two-GPU run, one Triton cache for the four, cold at the
# first), then `gemmconf report merge` of the four and `report diff` of the merge against call
# 1's unsharded two-GPU run: the same records and outcomes.
set -u
here=reports/published/2026-11-29-nvidia-h200-x2-suite-scaling
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
gunzip -c "$here/call1-two-gpu-suite.json.gz" > /tmp/unsharded.json
export TRITON_CACHE_DIR=/tmp/tcache-shards
rm -rf "$TRITON_CACHE_DIR"
for i in 1 2 3 4; do
  start=$(date +%s.%N)
  timeout 150 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:randomly \
    --shard "$i/4" --durations-from /tmp/unsharded.json --results "/tmp/shard-$i.json" \
    --conformance-html none > "/tmp/shard-$i.log" 2>&1
  echo "shard $i/4: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s; $(tail -1 "/tmp/shard-$i.log")" | tee -a "$OUT/summary.txt"
done
python3 -m gemmconf.cli report merge /tmp/shard-1.json /tmp/shard-2.json /tmp/shard-3.json \
  /tmp/shard-4.json -o "$OUT/merged.json" 2>&1 | tail -3 | tee -a "$OUT/summary.txt"
python3 -m gemmconf.cli report diff /tmp/unsharded.json "$OUT/merged.json" > "$OUT/diff.txt" 2>&1
tail -3 "$OUT/diff.txt" | tee -a "$OUT/summary.txt"
python3 - "$OUT/merged.json" /tmp/unsharded.json <<'PY' | tee -a "$OUT/summary.txt"
import collections, json, sys
def outcomes(path):
    records = json.load(open(path))["records"]
    return {(r["id"], r["backend"]): r["outcome"] for r in records}
merged, whole = outcomes(sys.argv[1]), outcomes(sys.argv[2])
print("merged:", len(merged), dict(collections.Counter(merged.values())))
print("unsharded:", len(whole), dict(collections.Counter(whole.values())))
print("same records and outcomes:", merged == whole)
PY
tar czf "$OUT/shard-logs.tar.gz" -C /tmp shard-1.log shard-2.log shard-3.log shard-4.log
gzip -f "$OUT/merged.json"
