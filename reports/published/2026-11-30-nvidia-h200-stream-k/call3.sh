#!/usr/bin/env bash
# Call 3: the whole reference suite on one H200, cold Triton cache, with fp8 decode on stream-K;
# `report diff` against the head check's cold run of 2026-11-30 (1555f56, harness d2f936f's).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
gunzip -c reports/published/2026-11-30-nvidia-h200-head-check/call2-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=420 TAG=call3 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call3-suite.json" > "$OUT/call3-diff.txt" 2>&1
echo "report diff: exit $?" | tee -a "$OUT/summary.txt"
head -12 "$OUT/call3-diff.txt" | tee -a "$OUT/summary.txt"
head -1 "$OUT/call3-timeline.txt" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/call3-suite.json" "$OUT/call3-suite.log"
