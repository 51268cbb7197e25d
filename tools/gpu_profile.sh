#!/usr/bin/env bash
# Where the GPU suite's time goes (issue 18): one part of the suite under -n auto with the
# timeline plugin (tools/timeline.py) and nvidia-smi sampling, then the timeline's summary.
#   bash tools/gpu_profile.sh [LIMIT_S] [pytest selection...]     (from the project root)
# Writes $OUT/timeline/*.jsonl, $OUT/profile.log, $OUT/dmon.log. Nothing here is asserted.
set -uo pipefail
OUT=${OUT:-reports/gpu}
limit=${1:-240}
shift || true
selection=("$@")
[ ${#selection[@]} -eq 0 ] && selection=(suites/dense suites/tma)
mkdir -p "$OUT"
python3 -c "import gemmconf.plugin" 2>/dev/null ||
  python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . >/dev/null 2>&1 &&
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi dmon -s uc -d 1 >"$OUT/dmon.log" 2>&1 &
dmon=$!
start=$(date +%s.%N)
GEMMCONF_TIMELINE="$OUT/timeline" timeout -s TERM "$limit" python3 -m pytest "${selection[@]}" \
  --backend reference -n auto -q -p no:benchmark -p tools.timeline --conformance-html none \
  --durations-from "${DURATIONS:-reports/published/2026-11-23-nvidia-h100-x1-reference-suite/durations.json.xz}" \
  --results "$OUT/profile.json" 2>&1 | grep -v -e PytestBenchmarkWarning -e 'warner(' >"$OUT/profile.log"
echo "pytest exit ${PIPESTATUS[0]}, wall $(echo "$(date +%s.%N) - $start" | bc) s"
kill $dmon 2>/dev/null
tail -n 3 "$OUT/profile.log"
python3 tools/timeline.py "$OUT/timeline"
awk 'NR>2 && $1 ~ /^[0-9]+$/ {n++; sm+=$2; mem+=$3} END {if (n) printf "GPU: %d samples, mean SM util %.0f%%, mean mem util %.0f%%\n", n, sm/n, mem/n}' "$OUT/dmon.log"
