#!/usr/bin/env bash
# Call 2, on `nvidia-h200` (the machine of call 1, warm): the whole reference suite cold with
# fewer workers than -n auto's 16 (one per host core): 8, then 12, each with a fresh Triton cache
# and `vmstat 2` beside it. Is the one-GPU run bound by its workers' contention for the cores?
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
mv "$OUT/machine.txt" "$OUT/call2-machine.txt"
gunzip -c reports/published/2026-12-01-nvidia-h200-head-suite-and-tests/call2-cold-suite.json.gz > /tmp/durations.json
for jobs in 8 12; do
  vmstat -t 2 > "$OUT/call2-n$jobs-vmstat.txt" &
  watcher=$!
  JOBS=$jobs SUITE_LIMIT=280 TAG=call2-n$jobs source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
  kill $watcher
  python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call2-n$jobs-suite.json" > "$OUT/call2-n$jobs-diff.txt" 2>&1
  echo "report diff 344eaa8 -> head at -n $jobs: exit $?; $(tail -1 "$OUT/call2-n$jobs-diff.txt")" | tee -a "$OUT/summary.txt"
  gzip -f "$OUT/call2-n$jobs-suite.json" "$OUT/call2-n$jobs-suite.log"
done
mv "$OUT/summary.txt" "$OUT/call2-summary.txt"
