#!/usr/bin/env bash
# Issue 17's new GEMM families on one sm90 GPU in one device call (planned to end within
# DEADLINE seconds, default 560, so it fits the device tool's 10-minute call with timeout_s 590),
# from the project root, after the carried wheels are installed (source .whl/prelude.sh; see
# ../shared/device/prepare.sh). Writes under $OUT (default reports/families), at most 5 files:
#
#   log.txt                          every command and what it printed
#   families-reference.json          the families on the reference backend (-n 8)
#   families-inductor-mat.json       the same selection's grouped_mm, scaled_grouped_mm, mx,
#                                    nvfp4, backward and out items on inductor-max-autotune:TRITON
#   families-inductor-mat-rest.json  the rest of the selection on that backend, in the time left
#   (a run stopped at its limit may leave NAME.json.partial instead of NAME.json: gemmconf report
#   reads both)
#
# Every run has --require-hardware sm90: an item skipped for want of the GPU fails the run. The
# closing summary prints, per file, the outcomes and each failing item's id, kind and reason.
# Nothing here is asserted; BENCHMARKS.md and the expectations files record what it shows.
set -uo pipefail
OUT=${OUT:-reports/families}
DEADLINE=${DEADLINE:-560}
mkdir -p "$OUT"
log="$OUT/log.txt"
export PYTHONUNBUFFERED=1
start=$(date +%s)
left() { echo $((DEADLINE - ($(date +%s) - start))); }

# shellcheck source=tools/gpu_install.sh
. "$(dirname "$0")/gpu_install.sh"
install_gemmconf "$log"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.version.cuda)"
  git log --oneline -1 2>/dev/null | cut -c1-100
} 2>&1 | tee -a "$log"

sel=(suites/grouped suites/blockscaled suites/backward suites/out suites/dense/broadcast_decode.yaml
  suites/codecheck suites/zero_size)
new='grouped_mm or scaled_grouped_mm or mx or nvfp4 or backward or out'
common=(-n "${JOBS:-8}" -q -rfE --require-hardware sm90 --conformance-html none -p no:benchmark)

# run SECONDS NAME [pytest args]: one pytest run, stopped by SIGTERM after SECONDS (it writes the
# records finished so far), killed 20 s later if its teardown hangs
run() {
  local limit=$1 name=$2
  shift 2
  if [ "$limit" -lt 30 ]; then
    echo "skipped $name: ${limit} s left" | tee -a "$log"
    return 0
  fi
  echo "+ timeout ${limit}s pytest $* --results=$OUT/$name.json" | tee -a "$log"
  local t0=$(date +%s)
  timeout --foreground -k 20 -s TERM "$limit" python3 -m pytest "$@" "${common[@]}" \
    --results="$OUT/$name.json" 2>&1 | grep -v -e PytestBenchmarkWarning -e 'warner(' |
    tee -a "$log" | tail -n 40
  echo "$name: pytest exit ${PIPESTATUS[0]}, $(($(date +%s) - t0)) s" | tee -a "$log"
}

# reference first, with at most 240 s; inductor's max-autotune compiles are slow: its new
# families next, with at most 300 s, then the rest of the selection until the deadline
# REFERENCE=0: the reference backend's part is left out (a full-suite run covered it)
if [ "${REFERENCE:-1}" != 0 ]; then
  lim=$(left); run $((lim - 330 < 240 ? lim - 330 : 240)) families-reference "${sel[@]}" --backend reference
fi
lim=$(($(left) - 30)); run $((lim < 300 ? lim : 300)) families-inductor-mat "${sel[@]}" \
  --backend inductor-max-autotune:TRITON -m "$new"
run $(($(left) - 25)) families-inductor-mat-rest "${sel[@]}" \
  --backend inductor-max-autotune:TRITON -m "not ($new)"

python3 - "$OUT" <<'PY' 2>&1 | tee -a "$log"
import sys
from collections import Counter
from pathlib import Path

from gemmconf.report.results import ResultsError, read

for name in ("families-reference", "families-inductor-mat", "families-inductor-mat-rest"):
    for path in (Path(sys.argv[1]) / f"{name}.json", Path(sys.argv[1]) / f"{name}.json.partial"):
        if path.exists():
            break
    else:
        print(f"{name}: no results file")
        continue
    try:
        document = read(path)
    except ResultsError as exc:
        print(exc)
        continue
    records = document["records"]
    print(f"{path.name}: complete={document.get('complete')} {len(records)} records",
          dict(Counter(r["outcome"] for r in records)))
    for r in records:
        if r["outcome"] in ("failed", "error", "xpassed"):
            print(f"  {r['outcome']} {r['id']} [{r.get('kind')}] {(r.get('reason') or '')[:240]}")
PY
echo "gpu_families.sh: $(($(date +%s) - start)) s" | tee -a "$log"
