#!/usr/bin/env bash
# Call 1, on `nvidia-h200`: where the cold run's compiles go, by Triton's stage (issue 43), and
# the head's GPU paths.
# 1. The tests the head touched, on CUDA: test_compile_once, test_speed, test_outcome,
#    test_repro_verdicts, test_oracle, test_integrity.
# 2. The whole reference suite cold (16 workers): the `gemmconf kernels:` line now sums each
#    compile's seconds by stage (kernel_build_stages_s).
# 3. One twentieth of the suite cold in one process (-p no:xdist): the same stages uncontended.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
start=$(date +%s.%N)
timeout 200 python3 -m pytest tests/test_compile_once.py tests/test_speed.py tests/test_outcome.py \
  tests/test_repro_verdicts.py tests/test_oracle.py tests/test_integrity.py -n 8 -q -rfEs \
  -p no:randomly > "$OUT/call1-tests.log" 2>&1
echo "tests: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/call1-tests.log" | tee -a "$OUT/summary.txt"
gunzip -c reports/published/2026-12-01-nvidia-h200-reference-suite-and-touched-tests/call1-cold-suite.json.gz \
  > /tmp/durations.json
busy_s() { awk '/^cpu /{printf "%.1f", ($2 + $3 + $4 + $7 + $8) / 100}' /proc/stat; }
before=$(busy_s)
SUITE_LIMIT=260 TAG=call1-cold source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
echo "call1-cold host CPU busy: $(python3 -c "print(round($(busy_s) - $before, 1))") s" | tee -a "$OUT/summary.txt"
export TRITON_CACHE_DIR=/tmp/tcache-serial
rm -rf "$TRITON_CACHE_DIR"
start=$(date +%s.%N)
timeout 150 python3 -m pytest suites --backend reference -p no:xdist -q -p no:randomly --shard 1/20 \
  --results "$OUT/call1-serial-shard.json" --conformance-html none > "$OUT/call1-serial-shard.log" 2>&1
echo "serial shard 1/20: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
grep -E "^gemmconf kernels|passed|failed" "$OUT/call1-serial-shard.log" | tail -3 | tee -a "$OUT/summary.txt"
gzip -f "$OUT"/call1-*.json "$OUT"/call1-*-suite.log
(cd "$OUT" && tar czf /tmp/call1.tgz --exclude=console.txt . 2>/dev/null; \
  find . -maxdepth 1 -type f ! -name console.txt -delete; mv /tmp/call1.tgz .)
