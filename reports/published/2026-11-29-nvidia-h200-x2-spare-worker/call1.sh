#!/usr/bin/env bash
# One call on `nvidia-h200-x2` (issue 43, items 2, 3 and 5), from the project root with .whl
# carried:  TREE=<commit> bash reports/published/2026-11-29-nvidia-h200-x2-spare-worker/call1.sh
# 1. what a lost CUDA context costs against a segfault, on GPU 0 with 16 workers (the shape of
#    the 2026-11-29 730de9b run): tools.fault_cost's two backends over the 246 items of
#    `suites/dense suites/epilogue -m mm`, each from a fresh Triton cache;
# 2. the whole reference suite, cold Triton cache, -n auto over both GPUs, --durations-from
#    the 2026-11-29 b293491 two-GPU run (GPU peaks, no host peaks), and `report diff` against it;
# 3. the same again, cold, --durations-from run 2 (which measured each item's host peak too).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
for round in 1; do
  for fault in illegal_address segfault; do
    start=$(date +%s.%N)
    CUDA_VISIBLE_DEVICES=0 TRITON_CACHE_DIR=/tmp/triton-$fault-$round timeout 120 python3 -m pytest \
      suites/dense suites/epilogue -m mm --backend "tools.fault_cost:$fault" -n 16 -q -rN \
      -p no:benchmark -p no:randomly --results "/tmp/fault-$fault-$round.json" \
      --conformance-html none > "/tmp/fault-$fault-$round.log" 2>&1
    echo "$fault round $round: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s; $(tail -n 1 "/tmp/fault-$fault-$round.log")" | tee -a "$OUT/summary.txt"
    python3 - "/tmp/fault-$fault-$round.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
from collections import Counter
records = json.load(open(sys.argv[1]))["records"]
lost = [r for r in records if r["outcome"] == "failed"]
kept = [r for r in records if r["outcome"] == "passed"]
print("  outcomes:", dict(Counter(r["outcome"] for r in records)),
      "| item time: failed %.1f s (%.2f each), passed %.1f s" % (
          sum(r["duration_s"] for r in lost), sum(r["duration_s"] for r in lost) / max(1, len(lost)),
          sum(r["duration_s"] for r in kept)))
PY
  done
done
tar czf "$OUT/fault-runs.tar.gz" -C /tmp $(cd /tmp && ls fault-*.json fault-*.log)
gunzip -c reports/published/2026-11-29-nvidia-h200-x2-suite-scaling/call1-two-gpu-suite.json.gz > /tmp/durations.json
TAG=two-gpu SUITE_LIMIT=200 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/two-gpu-suite.json" > "$OUT/diff.txt" 2>&1
tail -3 "$OUT/diff.txt" | tee -a "$OUT/summary.txt"
cp "$OUT/two-gpu-suite.json" /tmp/durations.json
rm -f "$OUT/two-gpu-timeline.txt"  # eight files come back: the host-peaks run's timeline is kept
TAG=host-peaks SUITE_LIMIT=200 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/host-peaks-suite.json" 2>&1 | tail -1 | tee -a "$OUT/summary.txt"
grep -E "waited for memory|host memory admitted" "$OUT/host-peaks-suite.log" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/two-gpu-suite.json" "$OUT/host-peaks-suite.json"
tar czf "$OUT/suite-logs.tar.gz" -C "$OUT" two-gpu-suite.log host-peaks-suite.log && rm -f "$OUT"/*-suite.log
