# Call 1 on `nvidia-h200` (issue 43, item 1), from the project root with .whl carried:
#   TREE=<commit> bash reports/published/2026-11-30-nvidia-h200-compile-key/call1.sh
# The whole reference suite, cold Triton cache, -n auto, with this folder's sitecustomize.py
# logging the parts of Triton's cache key at every compile or load; then analyse.py.
set -u
here=reports/published/2026-11-30-nvidia-h200-compile-key
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
gunzip -c reports/published/2026-11-29-nvidia-h200-x2-suite-scaling/call1-one-gpu-suite.json.gz > /tmp/durations.json
export GEMMCONF_KEY_PROBE=/tmp/key-probe PYTHONPATH="$PWD/$here:$PYTHONPATH"
rm -rf "$GEMMCONF_KEY_PROBE" && mkdir -p "$GEMMCONF_KEY_PROBE"
TAG=probe SUITE_LIMIT=330 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 "$here/analyse.py" "$GEMMCONF_KEY_PROBE" > "$OUT/analysis.txt" 2>&1
head -c 6000 "$OUT/analysis.txt"
tar czf "$OUT/probe-events.tar.gz" -C /tmp key-probe
gzip -f "$OUT/probe-suite.json" "$OUT/probe-suite.log"
ls -la "$OUT"
