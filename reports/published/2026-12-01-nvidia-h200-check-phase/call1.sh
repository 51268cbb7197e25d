#!/usr/bin/env bash
# Call 1, on `nvidia-h200` (one H200, 16 host cores): where the check phase's time goes (issue 43).
# 1. The whole reference suite cold, 16 workers, items in the workers (--no-isolate) under
#    tools/check_census.py: every check and piece timed, synchronized at its ends.
# 2. A twentieth of the suite (--shard 1/20), warm cache, one process, the checks under cProfile.
# 3. The tests of what last ran only on a CPU (who computed a pass, the device rule, repro files).
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
start=$(date +%s)
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
echo "compileall: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
gunzip -c reports/published/2026-12-01-nvidia-h200-reference-suite-and-touched-tests/call1-cold-suite.json.gz \
  > /tmp/durations.json
export TRITON_CACHE_DIR=/tmp/tcache-census
rm -rf "$TRITON_CACHE_DIR" && mkdir -p "$OUT/census"
start=$(date +%s.%N)
GEMMCONF_CHECK_CENSUS=$OUT/census/census.json timeout 300 python3 -m pytest suites \
  --backend reference -n 16 -q -rfE -p no:randomly --no-isolate -p tools.check_census \
  --durations-from /tmp/durations.json --results "$OUT/census-suite.json" --conformance-html none \
  > "$OUT/census-suite.log" 2>&1
echo "census suite: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/census-suite.log" | tee -a "$OUT/summary.txt"
python3 -m tools.check_census "$OUT"/census/census-*.json | tee "$OUT/census-table.txt"
start=$(date +%s.%N)
GEMMCONF_CHECK_CENSUS=$OUT/profile-census.json GEMMCONF_CHECK_PROFILE=/tmp/checks.prof \
  timeout 150 python3 -m pytest suites --backend reference -p no:xdist -q -p no:randomly \
  --no-isolate -p tools.check_census --shard 1/20 --results /tmp/profile-suite.json \
  --conformance-html none > "$OUT/profile-suite.log" 2>&1
echo "profiled shard: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
python3 - > "$OUT/profile-top.txt" 2>&1 <<'PY'
import pstats
s = pstats.Stats("/tmp/checks.prof")
s.sort_stats("cumulative").print_stats(70)
s.sort_stats("tottime").print_stats(40)
PY
start=$(date +%s.%N)
timeout 150 python3 -m pytest tests/test_attribution.py tests/test_compile_layer.py tests/test_repro.py \
  -n 8 -q -rfE -p no:randomly > "$OUT/tests.log" 2>&1
echo "tests (attribution, compile layer, repro): exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/tests.log" | tee -a "$OUT/summary.txt"
gzip -f "$OUT/census-suite.json" "$OUT/census-suite.log"
