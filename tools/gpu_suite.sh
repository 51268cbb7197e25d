#!/usr/bin/env bash
# Issue 16's GPU check: one shard of the full reference suite on one GPU, from the project root,
# after the carried wheels are installed (source .whl/prelude.sh; see ../shared/device/prepare.sh).
#
#   bash tools/gpu_suite.sh NAME SHARD [pytest options...]
#   bash tools/gpu_suite.sh auto 1/2                              # -n auto, the GPU's own memory
#   bash tools/gpu_suite.sh b24 1/2 --gpu-memory-budget 24        # a simulated 24 GB GPU
#
# Shards are balanced, and items ordered longest first, by the durations of the published H100
# runs (DURATIONS=FILE for another). Writes
# $OUT/NAME-I.json (the results), $OUT/NAME-I.log (the run's output, warnings of other plugins
# left out) and prints the summary and the harness errors, if any. LIMIT (default 540 s) stops
# the run with SIGTERM, which keeps the results so far. Nothing here is asserted.
set -uo pipefail
name=$1
shard=$2
shift 2
OUT=${OUT:-reports/gpu}
mkdir -p "$OUT"
part=${shard%%/*}
export PYTHONUNBUFFERED=1
python3 -c "import gemmconf.plugin" 2>/dev/null ||
  python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . >/dev/null 2>&1 &&
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
python3 -c "import gemmconf.plugin" || { echo "gemmconf does not import"; exit 1; }
git log --oneline -1 2>/dev/null | cut -c1-80
nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv,noheader
start=$(date +%s)
timeout -s TERM "${LIMIT:-540}" python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark \
  --shard "$shard" --durations-from "${DURATIONS:-reports/published/2026-11-23-nvidia-h100-x1-reference-suite/durations.json.xz}" \
  --results "$OUT/$name-$part.json" --conformance-html none "$@" 2>&1 |
  grep -v -e PytestBenchmarkWarning -e 'warner(' >"$OUT/$name-$part.log"
status=${PIPESTATUS[0]}
tail -n 30 "$OUT/$name-$part.log"
python3 - "$OUT/$name-$part.json" <<'PY'
import json, sys
from collections import Counter
records = json.load(open(sys.argv[1]))["records"]
print("outcomes:", dict(Counter(r["outcome"] for r in records)))
print("kinds:", dict(Counter(r.get("kind") for r in records if r.get("kind"))))
for r in records:
    if r["outcome"] == "error" or r.get("kind") == "harness error":
        print("HARNESS ERROR", r["id"], (r.get("reason") or "")[:300])
for ident in ("seed_cutlass/bmm[fp16-no_expand-static]", "seed_cutlass/subproc_bmm"):
    found = [r for r in records if r["id"] == ident]
    print(ident, [(r["outcome"], r.get("duration_s")) for r in found] or "not in this shard")
PY
echo "shard $shard: pytest exit $status, $(($(date +%s) - start)) s"
