#!/usr/bin/env bash
# Call 3: whether this image's Python writes bytecode, and what torch's import and a parallel
# run's start cost with and without torch's and triton's bytecode compiled ahead
# (`compileall`, as an installed wheel has it); then the whole reference suite cold on both
# GPUs with it (against call 1 of 2026-11-30-nvidia-h200-x2-shards-merged, ede633e, without).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call3-machine.txt"
here=reports/published/2026-12-01-nvidia-h200-worker-start
{
  echo "PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE-<unset>}"
  python3 -c "import sys; print('sys.flags.dont_write_bytecode', sys.flags.dont_write_bytecode)"
  for _ in 1 2; do python3 -c "import time; t = time.perf_counter(); import torch; print(f'import torch {time.perf_counter() - t:.2f} s')"; done
} 2>&1 | tee -a "$OUT/summary.txt"
run() {  # $1 tag: the start-up of a parallel run on six items (as call 2)
  rm -rf "/tmp/tl-$1"
  local start; start=$(date +%s.%N)
  GEMMCONF_TIMELINE="/tmp/tl-$1" python3 -m pytest suites --backend reference -n 32 -q -p no:randomly \
    -p tools.timeline -k "first and fp32 and (64x64x64 or 127x65x33)" --results "/tmp/$1.json" \
    --conformance-html none > "$OUT/call3-$1.log" 2>&1
  echo "$1: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s; $(tail -1 "$OUT/call3-$1.log")" | tee -a "$OUT/summary.txt"
  python3 "$here/starts.py" "/tmp/tl-$1" | tee -a "$OUT/summary.txt"
}
run before-1; run before-2
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
start=$(date +%s.%N)
python3 -m compileall -q -j 32 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" > /dev/null 2>&1
echo "compileall torch, triton, sympy, numpy: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
for _ in 1 2; do python3 -c "import time; t = time.perf_counter(); import torch; print(f'import torch {time.perf_counter() - t:.2f} s')"; done 2>&1 | tee -a "$OUT/summary.txt"
run after-1; run after-2
gunzip -c reports/published/2026-11-30-nvidia-h200-x4-cold-suite/call1-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=300 TAG=call3-cold source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
gzip -f "$OUT/call3-cold-suite.json" "$OUT/call3-cold-suite.log"
cd "$OUT" && tar czf call3-starts.tar.gz call3-before-* call3-after-* && rm -f call3-before-* call3-after-*
