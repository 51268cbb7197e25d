# A call on `nvidia-h200-x2` (issue 43, item 1), from the project root with .whl carried:
#   TREE=<commit> CALL=<n> bash reports/published/2026-11-30-nvidia-h200-x2-compile-key/call.sh
# The whole reference suite, cold Triton cache, -n auto over both GPUs, with the probe of
# 2026-11-30-nvidia-h200-compile-key (its sitecustomize.py first on PYTHONPATH: every compile or
# disk-cache load logs the parts of Triton's key and our signature id), then its analyse.py, and
# `report diff` against that folder's call 1 (one H200, b02eb01).
set -u
probe=reports/published/2026-11-30-nvidia-h200-compile-key
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
gunzip -c reports/published/2026-11-29-nvidia-h200-x2-suite-scaling/call1-one-gpu-suite.json.gz > /tmp/durations.json
export GEMMCONF_KEY_PROBE=/tmp/key-probe-$CALL PYTHONPATH="$PWD/$probe:$PYTHONPATH"
rm -rf "$GEMMCONF_KEY_PROBE" && mkdir -p "$GEMMCONF_KEY_PROBE"
TAG=call$CALL SUITE_LIMIT=330 source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
python3 "$probe/analyse.py" "$GEMMCONF_KEY_PROBE" > "$OUT/call$CALL-analysis.txt" 2>&1
head -c 5000 "$OUT/call$CALL-analysis.txt"
gunzip -c "$probe/call1-probe-suite.json.gz" > /tmp/one-h200.json
python3 -m gemmconf.cli report diff /tmp/one-h200.json "$OUT/call$CALL-suite.json" 2>&1 | tail -3 | tee -a "$OUT/summary.txt"
tar czf "$OUT/call$CALL-probe-events.tar.gz" -C /tmp "key-probe-$CALL"
gzip -f "$OUT/call$CALL-suite.json" "$OUT/call$CALL-suite.log"
mv "$OUT/summary.txt" "$OUT/call$CALL-summary.txt"; mv "$OUT/machine.txt" "$OUT/call$CALL-machine.txt"
ls -la "$OUT"
