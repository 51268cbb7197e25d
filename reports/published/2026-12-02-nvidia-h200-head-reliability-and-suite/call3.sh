#!/usr/bin/env bash
# Call 3, on a fresh `nvidia-h200`, the tree at 43ba574 (issue 43, item 3): where a warm item's
# host time goes on a GPU, by function. One twentieth of the reference suite in one process,
# items in the pytest process (--no-isolate), run once to fill the Triton cache, then again under
# py-spy (100 samples a second; its wheel carried in .whl) with every kernel loaded.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
mv "$OUT/machine.txt" "$OUT/call3-machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
export TRITON_CACHE_DIR=/tmp/tcache-call3
rm -rf "$TRITON_CACHE_DIR"
args=(suites --backend reference --shard 1/20 -p no:xdist --no-isolate -q -rfE -p no:randomly
  --conformance-html none)
for run in cold warm; do
  start=$(date +%s.%N)
  if [ $run = warm ]; then
    timeout 250 /tmp/site/bin/py-spy record -r 100 -f raw -o "$OUT/call3-warm-pyspy.txt" -- \
      python3 -m pytest "${args[@]}" --results "$OUT/call3-$run-suite.json" > "$OUT/call3-$run.log" 2>&1
  else
    timeout 250 python3 -m pytest "${args[@]}" --results "$OUT/call3-$run-suite.json" > "$OUT/call3-$run.log" 2>&1
  fi
  echo "call3 $run: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s; $(grep -E "^gemmconf kernels" "$OUT/call3-$run.log"); $(tail -1 "$OUT/call3-$run.log")" | tee -a "$OUT/summary.txt"
done
gzip -f "$OUT"/call3-*-suite.json "$OUT/call3-warm-pyspy.txt"
rm -f "$OUT/call3-cold.log"
mv "$OUT/summary.txt" "$OUT/call3-summary.txt"
