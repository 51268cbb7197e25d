#!/usr/bin/env bash
# Call 3: the whole reference suite on one H200, cold Triton cache, at 2442b4e (the sequential
# test's spread in floats, the ledger's one-transaction admission); `report diff` against the
# stream-K call 3 of 2026-11-30 (7e5c65d), which also gives the durations.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
gunzip -c reports/published/2026-11-30-nvidia-h200-stream-k/call3-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=420 TAG=call3 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call3-suite.json" > "$OUT/call3-diff.txt" 2>&1
echo "report diff: exit $?" | tee -a "$OUT/summary.txt"
head -12 "$OUT/call3-diff.txt" | tee -a "$OUT/summary.txt"
head -1 "$OUT/call3-timeline.txt" | tee -a "$OUT/summary.txt"
tail -2 "$OUT/call3-timeline.txt" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/call3-suite.json" "$OUT/call3-suite.log"
