#!/usr/bin/env bash
# Call 2, on a fresh `nvidia-h200`, the tree at 43ba574 (issue 43, items 1 and 3): how much of a
# cold run of the whole reference suite a compile-first phase could save. The suite cold
# (`cold_suite.sh`, -n auto), then again on the same machine with the Triton cache it left
# (every kernel loaded, none compiled), each with its timeline and `report diff` against call 1.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
mv "$OUT/machine.txt" "$OUT/call2-machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
gunzip -c reports/published/2026-12-02-nvidia-h200-head-reliability-and-suite/call1-nauto-suite.json.gz > /tmp/durations.json
SUITE_LIMIT=280 TAG=call2-cold source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
# the same run with the cache the cold run left (cold_suite.sh would empty it)
export TRITON_CACHE_DIR=/tmp/tcache-call2-cold
rm -rf /tmp/timeline-call2-warm && mkdir -p /tmp/timeline-call2-warm
start=$(date +%s.%N)
GEMMCONF_TIMELINE=/tmp/timeline-call2-warm timeout 280 python3 -m pytest suites --backend reference \
  -n auto -q -rfE -p no:randomly -p tools.timeline --durations-from /tmp/durations.json \
  --results "$OUT/call2-warm-suite.json" --conformance-html none > "$OUT/call2-warm-suite.log" 2>&1
echo "call2-warm suite: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
python3 tools/timeline.py /tmp/timeline-call2-warm > "$OUT/call2-warm-timeline.txt" 2>&1
grep -E "^gemmconf (kernels|:.*waited)|passed|failed" "$OUT/call2-warm-suite.log" | tail -4 | tee -a "$OUT/summary.txt"
for tag in cold warm; do
  python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call2-$tag-suite.json" > "$OUT/call2-$tag-diff.txt" 2>&1
  echo "report diff call 1 -> $tag: exit $?; $(tail -1 "$OUT/call2-$tag-diff.txt")" | tee -a "$OUT/summary.txt"
  gzip -f "$OUT/call2-$tag-suite.json"
  rm -f "$OUT/call2-$tag-suite.log"
done
mv "$OUT/summary.txt" "$OUT/call2-summary.txt"
