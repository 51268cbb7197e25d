#!/usr/bin/env bash
# Call 1 (issue 43, item 7, on the two-GPU kind: the four-GPU kind was not lent): the whole
# reference suite once unsharded on both GPUs (cold Triton cache: also the two-GPU cold time),
# then `--shard i/4` for i = 1..4, each its own pytest run on one GPU (two at a time, with the
# unsharded run's kernel cache), then `report merge` of the four and the records compared.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call1-machine.txt"
gunzip -c reports/published/2026-11-30-nvidia-h200-x4-cold-suite/call1-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=360 TAG=call1-unsharded source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
export TRITON_CACHE_DIR=/tmp/tcache-call1-unsharded
for pair in "1 2" "3 4"; do
  for i in $pair; do
    start=$(date +%s.%N)
    (CUDA_VISIBLE_DEVICES=$(((i - 1) % 2)) timeout 240 python3 -m pytest suites --backend reference \
      -n 16 -q -rfE -p no:randomly --shard "$i/4" --durations-from /tmp/durations.json \
      --results "$OUT/call1-shard-$i.json" --conformance-html none > "$OUT/call1-shard-$i.log" 2>&1
     echo "shard $i/4: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s;" \
       "$(tail -1 "$OUT/call1-shard-$i.log")" | tee -a "$OUT/summary.txt") &
  done
  wait
done
python3 -m gemmconf.cli report merge -o "$OUT/call1-merged.json" "$OUT"/call1-shard-{1,2,3,4}.json 2>&1 | tee -a "$OUT/summary.txt"
python3 -m gemmconf.cli report diff "$OUT/call1-unsharded-suite.json" "$OUT/call1-merged.json" > "$OUT/call1-diff.txt" 2>&1
echo "report diff unsharded merged: exit $?" | tee -a "$OUT/summary.txt"
python3 reports/published/2026-11-30-nvidia-h200-x2-shards-merged/same_records.py \
  "$OUT/call1-unsharded-suite.json" "$OUT/call1-merged.json" 2>&1 | tee -a "$OUT/summary.txt"
cd "$OUT" && tar czf call1-shards.tar.gz call1-shard-* call1-merged.json call1-diff.txt && rm -f call1-shard-* call1-merged.json
gzip -f call1-unsharded-suite.json call1-unsharded-suite.log
