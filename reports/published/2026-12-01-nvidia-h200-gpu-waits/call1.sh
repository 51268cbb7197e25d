#!/usr/bin/env bash
# Call 1, on `nvidia-h200`: how the isolation workers wait for the GPU (GEMMCONF_GPU_WAIT).
# 1. The new tests on CUDA (test_isolation's GPU-wait tests) and test_integrity.py (the side-stream
#    check's follow-ups and the aliasing guard had not run on a GPU).
# 2. The whole reference suite cold, twice: workers blocking on a synchronization primitive, then
#    the driver's default (spinning: one context a process, 16 host cores), each with the host's
#    CPU seconds (/proc/stat) and vmstat; `report diff` between the two; the side-stream metrics.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
start=$(date +%s.%N)
timeout 150 python3 -m pytest tests/test_isolation.py tests/test_integrity.py -n 8 -q -rfEs \
  -p no:randomly > "$OUT/call1-tests.log" 2>&1
echo "test_isolation + test_integrity: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
tail -6 "$OUT/call1-tests.log" | tee -a "$OUT/summary.txt"
gunzip -c reports/published/2026-12-01-nvidia-h200-reference-suite-and-touched-tests/call1-cold-suite.json.gz \
  > /tmp/durations.json
busy_s() { awk '/^cpu /{printf "%.1f", ($2 + $3 + $4 + $7 + $8) / 100}' /proc/stat; }
for wait in blocking auto; do
  before=$(busy_s)
  (vmstat -t 2 > "$OUT/call1-$wait-vmstat.txt" 2>&1 &)
  GEMMCONF_GPU_WAIT=$wait SUITE_LIMIT=240 TAG=call1-$wait \
    source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
  pkill vmstat
  echo "call1-$wait host CPU busy: $(python3 -c "print(round($(busy_s) - $before, 1))") s" | tee -a "$OUT/summary.txt"
done
python3 -m gemmconf.cli report diff "$OUT/call1-auto-suite.json" "$OUT/call1-blocking-suite.json" \
  > "$OUT/call1-diff.txt" 2>&1
echo "report diff auto -> blocking: exit $?" | tee -a "$OUT/summary.txt"
tail -2 "$OUT/call1-diff.txt" | tee -a "$OUT/summary.txt"
for wait in blocking auto; do
  python3 - "$OUT/call1-$wait-suite.json" <<'PY' | tee -a "$OUT/summary.txt"
import collections, json, sys
doc = json.load(open(sys.argv[1]))
metrics, kinds = collections.Counter(), collections.Counter()
for r in doc["records"]:
    for key in ("side_stream_copy_waited", "side_stream_inconclusive"):
        metrics[key] += r.get("metrics", {}).get(key, 0)
    if r["outcome"] == "failed":
        kinds[r.get("kind") or r.get("reason", "")[:60]] += 1
item_s = sum(r.get("duration_s", 0) for r in doc["records"])
print(sys.argv[1].rsplit("/", 1)[-1], dict(metrics), "failed:", dict(kinds), f"item time {item_s:.0f} s")
PY
done
gzip -f "$OUT"/call1-*-suite.json "$OUT"/call1-*-suite.log
(cd "$OUT" && tar czf /tmp/call1.tgz --exclude=console.txt . 2>/dev/null; \
  find . -maxdepth 1 -type f ! -name console.txt -delete; mv /tmp/call1.tgz .)
