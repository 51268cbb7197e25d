# shellcheck shell=bash
# The lanes as many as the heavy items' time needs (6b98a5c) against a quarter of the workers
# (the same tree with e299d66's harness/plugin/scheduling.py, carried as .whl/old_scheduling.py):
# the whole reference suite cold on GPU 0 (32 workers), each tree once, both ordered by the
# durations of 2026-11-30-nvidia-h200-x2-compile-key call 3's one-GPU run; then report diff.
# Call 5: GPUS=0,1 RUN=two-gpu (both GPUs, that call 3's two-GPU run's durations).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
gunzip -c "reports/published/2026-11-30-nvidia-h200-x2-compile-key/call3-${RUN:-one-gpu}-suite.json.gz" \
  > /tmp/durations.json
rm -rf /tmp/old-src /tmp/gc-old && mkdir -p /tmp/old-src
tar --exclude=./reports --exclude=./.whl --exclude=./.venv -cf - . | tar -xf - -C /tmp/old-src
cp .whl/old_scheduling.py /tmp/old-src/harness/plugin/scheduling.py
python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/gc-old /tmp/old-src \
  /tmp/old-src/plugins/gemmconf-cutlass > /dev/null 2>&1 || echo "old tree: install failed"
new_path=$PYTHONPATH
export CUDA_VISIBLE_DEVICES=${GPUS:-0} SUITE_LIMIT=270
TAG=lanes-new source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
export PYTHONPATH="/tmp/gc-old:${new_path#/tmp/gc:}"
python3 -c "import gemmconf.plugin.scheduling as s; print('old tree lanes rule:', 'math.ceil' not in open(s.__file__).read())"
TAG=lanes-old source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
export PYTHONPATH=$new_path
python3 -m gemmconf.cli report diff "$OUT/lanes-old-suite.json" "$OUT/lanes-new-suite.json" > "$OUT/diff.txt" 2>&1
tail -3 "$OUT/diff.txt" | tee -a "$OUT/summary.txt"
for tag in lanes-new lanes-old; do
  echo "$tag: $(head -1 "$OUT/$tag-timeline.txt")"
  grep -o "last item ended [0-9.]* s" "$OUT/$tag-timeline.txt" | sort | uniq -c | sort -rn | head -4
done | tee -a "$OUT/summary.txt"
gzip -f "$OUT"/lanes-*-suite.json "$OUT"/lanes-*-suite.log
