#!/usr/bin/env bash
# Call 2, on `nvidia-h200`: the side-stream check with the default stream held (gemmconf.stream_hold)
# instead of slept for 10 ms.
# 1. test_integrity.py on CUDA (the two new tests among them).
# 2. The slow default-stream backend under the old way (the driver's operations hidden: the
#    check falls back to the sleep), then under the hold.
# 3. The check census of call 1's shard (1/20, one process, warm cache): the side-stream check's time.
# 4. The whole reference suite cold (isolated, as users run it) with the host's CPU and the
#    GPU's utilization sampled; `report diff` against call 1's run.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
here=reports/published/2026-12-01-nvidia-h200-check-phase
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
start=$(date +%s.%N)
timeout 200 python3 -m pytest tests/test_integrity.py -n 8 -q -rfEs -p no:randomly > "$OUT/call2-tests.log" 2>&1
echo "test_integrity: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
tail -12 "$OUT/call2-tests.log" | tee -a "$OUT/summary.txt"
timeout 120 python3 - > "$OUT/call2-sleep-vs-hold.txt" 2>&1 <<'PY'
import sys
sys.path.insert(0, "tests")
import planted_backends
from gemmconf import stream_hold
from gemmconf.outcome import StreamMismatch
from gemmconf.runner import run_item
from gemmconf.scenario import load_suite

item = next(i for i in load_suite("suites/dense/first.yaml") if i.id == "first/mm[fp32-64x64x64-nn]")
for name, driver in (("the sleep (driver hidden)", lambda: None), ("the hold", stream_hold._driver)):
    stream_hold._driver = driver
    for backend in (planted_backends.default_stream_launch, planted_backends.slow_default_stream_launch):
        caught = []
        for seed in range(5):
            outcome = run_item(item, backend, seed=seed, device="cuda", target=None)
            caught.append(any(isinstance(p, StreamMismatch) for p in outcome.problems))
        print(f"{name}: {backend.name}: caught on {sum(caught)} of 5 seeds")
PY
cat "$OUT/call2-sleep-vs-hold.txt" | tee -a "$OUT/summary.txt"
gunzip -c reports/published/2026-12-01-nvidia-h200-reference-suite-and-touched-tests/call1-cold-suite.json.gz \
  > /tmp/durations.json
GEMMCONF_CHECK_CENSUS=$OUT/call2-shard-census.json timeout 150 python3 -m pytest suites --backend reference \
  -p no:xdist -q -p no:randomly --no-isolate -p tools.check_census --shard 1/20 \
  --results /tmp/shard.json --conformance-html none > "$OUT/call2-shard.log" 2>&1
echo "census shard: exit $?" | tee -a "$OUT/summary.txt"
grep -E "side stream|checks \(all\)" "$OUT/call2-shard.log" | tee -a "$OUT/summary.txt"
(vmstat -t 2 > "$OUT/call2-vmstat.txt" 2>&1 &)
(nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory,memory.used,power.draw \
  --format=csv -lms 1000 > "$OUT/call2-gpu.csv" 2>&1 &)
SUITE_LIMIT=300 TAG=call2-cold source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
pkill vmstat; pkill -f "nvidia-smi --query-gpu"
gunzip -c $here/call1-census-suite.json.gz > /tmp/call1.json
python3 -m gemmconf.cli report diff /tmp/call1.json "$OUT/call2-cold-suite.json" > "$OUT/call2-diff.txt" 2>&1
echo "report diff call 1 -> call 2: exit $?" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/call2-diff.txt" | tee -a "$OUT/summary.txt"
gzip -f "$OUT"/call2-cold-suite.json "$OUT"/call2-cold-suite.log
# the device tool brings back few files: everything but the console in one archive
cd "$OUT" && tar czf call2.tgz --exclude=call2.tgz --exclude=console.txt . && \
  find . -maxdepth 1 -type f ! -name call2.tgz ! -name console.txt -delete && rm -rf census
