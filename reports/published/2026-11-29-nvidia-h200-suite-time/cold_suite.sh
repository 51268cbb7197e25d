# shellcheck shell=bash
# One cold run of the whole reference suite on this machine's GPUs (issue 43): a fresh Triton
# cache, every worker's timeline, the kernel line. Sourced with TAG (names the outputs), from the
# root of the tree under test, with that tree's gemmconf first on PYTHONPATH.
export TRITON_CACHE_DIR=/tmp/tcache-$TAG
rm -rf "$TRITON_CACHE_DIR" "/tmp/timeline-$TAG" && mkdir -p "/tmp/timeline-$TAG"
start=$(date +%s.%N)
GEMMCONF_TIMELINE=/tmp/timeline-$TAG timeout "${SUITE_LIMIT:-300}" python3 -m pytest suites \
  --backend reference -n "${JOBS:-auto}" -q -rfE -p no:randomly -p tools.timeline \
  --durations-from /tmp/durations.json --results "$OUT/$TAG-suite.json" --conformance-html none \
  > "$OUT/$TAG-suite.log" 2>&1
echo "$TAG suite: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
python3 tools/timeline.py "/tmp/timeline-$TAG" > "$OUT/$TAG-timeline.txt" 2>&1
grep -E "^gemmconf (kernels|:.*waited)|passed|failed" "$OUT/$TAG-suite.log" | tail -4 | tee -a "$OUT/summary.txt"
if [ -d "$TRITON_CACHE_DIR/gemmconf-compile-locks" ]; then
  echo "$TAG lock files: $(find "$TRITON_CACHE_DIR/gemmconf-compile-locks" -type f | wc -l)" | tee -a "$OUT/summary.txt"
fi
