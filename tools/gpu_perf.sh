#!/usr/bin/env bash
# Issue 18's GPU figures in one call on one sm90 GPU (about 5-6 minutes on an H100 or H200),
# from the project root, after the carried wheels are installed (source .whl/prelude.sh; see
# ../shared/device/prepare.sh). Everything lands in $OUT (default reports/perf), at most 6 files:
#
#   log.txt             every command and what it printed, the tables included
#   host.json           tools/host_overhead.py --gpu: host us per call of a 16x6144x4096 bf16
#                       F.linear (eager, inductor, inductor reduce-overhead, reference,
#                       reference:cudagraphs), with wall and kernel times
#   bench-wall.json     pytest suites/bench --backend reference --benchmark (wall mode): the
#                       anchor table, the Llama-3 prefill and decode rows, bf16 and fp8
#   bench-rerun.json    decode and square items again, reference and reference:cudagraphs:
#                       the second recorded run for the regression gate, and decode with graphs
#   bench-kernel.json   decode items in kernel mode (device time only)
#   diff.txt            gemmconf report diff between the two runs (--fail-on-regression: its
#                       exit status is printed) and against the published 2026-11-22 H200 run
#
# No figure here is asserted; BENCHMARKS.md records them with this command, machine and date.
set -uo pipefail
OUT=${OUT:-reports/perf}
mkdir -p "$OUT"
log="$OUT/log.txt"
export PYTHONUNBUFFERED=1

step() {
  echo "+ $*" | tee -a "$log"
  "$@" 2>&1 | tee -a "$log"
  local status=${PIPESTATUS[0]}
  echo "exit status $status" | tee -a "$log"
  return 0
}

start=$(date +%s)
# shellcheck source=tools/gpu_install.sh
. "$(dirname "$0")/gpu_install.sh"
install_gemmconf "$log"
step nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
step python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.version.cuda)"
step git log --oneline -1

step python3 tools/host_overhead.py --gpu --calls 2000 --json "$OUT/host.json"

bench=(python3 -m pytest suites/bench --benchmark -p no:xdist -q -rfE --conformance-html none)
step "${bench[@]}" --backend reference --results "$OUT/bench-wall.json"
step "${bench[@]}" -k "decode or square" --backend reference,reference:cudagraphs \
  --results "$OUT/bench-rerun.json"
step "${bench[@]}" -k decode --backend reference --bench-mode kernel \
  --results "$OUT/bench-kernel.json"

{
  echo "+ gemmconf report diff bench-wall.json bench-rerun.json --fail-on-regression"
  python3 -m gemmconf.cli report diff "$OUT/bench-wall.json" "$OUT/bench-rerun.json" \
    --fail-on-regression
  echo "exit status $? (0: no regression, 3: slower beyond the noise, 1: outcome regression)"
  echo
  echo "+ gemmconf report diff <published 2026-11-22 H200 run> bench-wall.json"
  python3 -m gemmconf.cli report diff \
    reports/published/2026-11-22-nvidia-h200-suites-and-bench/bench-reference.json "$OUT/bench-wall.json"
  echo "exit status $?"
} >"$OUT/diff.txt" 2>&1
cat "$OUT/diff.txt" >>"$log"
tail -n 25 "$OUT/diff.txt"
echo "gpu_perf.sh: $(($(date +%s) - start)) s" | tee -a "$log"
