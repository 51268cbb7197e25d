#!/usr/bin/env bash
# Call 1: the whole reference suite, cold Triton cache, on all four H200s of an nvidia-h200-x4
# machine (issue 43, item 3), with the last of the session's device time: the run is stopped at
# SUITE_LIMIT seconds (SIGTERM: the results so far, marked incomplete, still written).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call1-machine.txt"
gunzip -c reports/published/2026-11-30-nvidia-h200-fp8-reference-on-device/call3-suite.json.gz > /tmp/durations.json
TAG=call1 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
gzip -f "$OUT/call1-suite.json" "$OUT/call1-suite.log"
