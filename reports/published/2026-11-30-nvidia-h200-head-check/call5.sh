# shellcheck shell=bash
# The whole reference suite cold on one H200 at the session's last head (after the seed-stability
# and explain changes), ordered by call 2's durations, then `report diff` against call 2's run.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
gunzip -c reports/published/2026-11-30-nvidia-h200-head-check/call2-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=225 TAG=last source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/last-suite.json" > "$OUT/diff.txt" 2>&1
echo "report diff: exit $?" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/diff.txt" | tee -a "$OUT/summary.txt"
head -1 "$OUT/last-timeline.txt" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/last-suite.json" "$OUT/last-suite.log"
