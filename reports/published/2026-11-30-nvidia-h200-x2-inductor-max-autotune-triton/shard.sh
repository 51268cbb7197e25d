#!/usr/bin/env bash
# One shard of the whole suite on inductor-max-autotune:TRITON over both H200s of an
# nvidia-h200-x2 machine (issue 43, item 6). SHARD is i/n (hash shards: an item's shard depends
# on its id alone, so 2/3 and 3/3 are exactly what 2026-11-22's shard 1/3 did not run); LIMIT the
# seconds before the run is interrupted (SIGINT: the results written so far, marked incomplete).
# 12 workers a GPU, inductor's compile pool at 4 processes each (32 host cores): correctness,
# not the autotuner's choice, is what is judged here, so the timings may share the GPU.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
tag=${TAG:?}
cp "$OUT/machine.txt" "$OUT/$tag-machine.txt"
export TORCHINDUCTOR_COMPILE_THREADS=4 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-$tag
start=$(date +%s.%N)
timeout -s INT -k 30 "${LIMIT:-520}" python3 -m pytest suites \
  --backend inductor-max-autotune:TRITON --shard "${SHARD:?}" -n "${JOBS:-24}" -q -rfE \
  -p no:randomly --item-timeout 400 --results "$OUT/$tag.json" --conformance-html none \
  > "$OUT/$tag.log" 2>&1
echo "$tag ($SHARD): exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/$tag.log" | tee -a "$OUT/summary.txt"
[ -f "$OUT/$tag.json" ] || { echo "no results file: the .partial kept"; gzip -f "$OUT/$tag.json.partial"; }
[ -f "$OUT/$tag.json" ] && python3 - "$OUT/$tag.json" <<'PY' | tee -a "$OUT/summary.txt"
import collections, json, sys
d = json.load(open(sys.argv[1]))
c = collections.Counter(r["outcome"] for r in d["records"])
print(f"{len(d['records'])} records, complete={d.get('complete')}: {dict(c)}")
PY
gzip -f "$OUT/$tag.log"; [ -f "$OUT/$tag.json" ] && gzip -f "$OUT/$tag.json"; rm -f "$OUT/$tag.json.partial"
