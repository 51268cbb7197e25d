#!/usr/bin/env bash
# Call 3, on a fresh `nvidia-h200`: the whole reference suite cold at -n 12, then at -n auto (16
# workers, one per host core), each with a fresh Triton cache and `vmstat 2` beside it: the pair
# of calls 1 and 2 in the other order.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
mv "$OUT/machine.txt" "$OUT/call3-machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
gunzip -c reports/published/2026-12-01-nvidia-h200-head-suite-and-tests/call2-cold-suite.json.gz > /tmp/durations.json
for jobs in 12 auto; do
  vmstat -t 2 > "$OUT/call3-n$jobs-vmstat.txt" &
  watcher=$!
  JOBS=$jobs SUITE_LIMIT=260 TAG=call3-n$jobs source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
  kill $watcher
  python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call3-n$jobs-suite.json" > "$OUT/call3-n$jobs-diff.txt" 2>&1
  echo "report diff 344eaa8 -> head at -n $jobs: exit $?; $(tail -1 "$OUT/call3-n$jobs-diff.txt")" | tee -a "$OUT/summary.txt"
  gzip -f "$OUT/call3-n$jobs-suite.json"
  rm -f "$OUT/call3-n$jobs-suite.log"
done
mv "$OUT/summary.txt" "$OUT/call3-summary.txt"
