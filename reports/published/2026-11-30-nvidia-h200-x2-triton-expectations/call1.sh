#!/usr/bin/env bash
# Call 1: the 102 items of 2026-11-30's inductor-max-autotune:TRITON run that failed or
# xpassed strictly under the expectations file of that day (items.txt: their node ids), run
# again on both H200s under the file as it is now, which explains each of them
# (suites/expectations/inductor-max-autotune-TRITON.yaml): a run of the file itself, where
# `gemmconf expect` judged the old records under it without a GPU.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call1-machine.txt"
export TORCHINDUCTOR_COMPILE_THREADS=4 TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-call1
mapfile -t items < reports/published/2026-11-30-nvidia-h200-x2-triton-expectations/items.txt
start=$(date +%s.%N)
timeout -s INT -k 30 520 python3 -m pytest "${items[@]}" --backend inductor-max-autotune:TRITON -n 24 -q -rfE -p no:randomly \
  --item-timeout 400 --results "$OUT/call1.json" --conformance-html none > "$OUT/call1.log" 2>&1
echo "call1: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
tail -4 "$OUT/call1.log" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/call1.log" "$OUT/call1.json"
