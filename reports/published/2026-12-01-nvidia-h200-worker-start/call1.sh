#!/usr/bin/env bash
# Call 1 (issue 43, item 2: worker start): where a worker's 15-18 s before its first item go on
# this kind (2026-11-30's cold run: 10.6-15.2 s to its collection, the rest waiting for the
# slowest). One process alone: torch's import, CUDA's start, then a whole-suite collection under
# cProfile; then 32 collections at once, as 32 xdist workers start, timed each.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call1-machine.txt"
python3 - <<'PY' 2>&1 | tee -a "$OUT/summary.txt"
import time
t = time.perf_counter()
import torch
imported = time.perf_counter()
torch.cuda.init()
torch.zeros(1, device="cuda")
print(f"alone: import torch {imported - t:.2f} s; CUDA start and a first tensor {time.perf_counter() - imported:.2f} s")
PY
collect() {  # $1: tag; a whole-suite collection, its wall and pytest's own figure
  local start; start=$(date +%s.%N)
  python3 -m pytest suites --backend reference --collect-only -q -p no:xdist -p no:randomly "${@:2}" > "/tmp/collect-$1.log" 2>&1
  echo "$1: $(python3 -c "import time; print(round(time.time() - $start, 2))") s wall; $(tail -1 "/tmp/collect-$1.log")"
}
collect alone | tee -a "$OUT/summary.txt"
start=$(date +%s.%N)
python3 -m cProfile -o "$OUT/call1-collect.prof" -m pytest suites --backend reference --collect-only -q -p no:xdist -p no:randomly > /dev/null 2>&1
echo "alone under cProfile: $(python3 -c "import time; print(round(time.time() - $start, 2))") s" | tee -a "$OUT/summary.txt"
for i in $(seq 1 32); do collect "at-once-$i" > "/tmp/at-once-$i.txt" & done; wait
sort -t: -k2 -n /tmp/at-once-*.txt | tee "$OUT/call1-at-once.txt" | sed -n '1p;16p;32p' | tee -a "$OUT/summary.txt"
python3 - "$OUT/call1-collect.prof" <<'PY' > "$OUT/call1-collect-profile.txt"
import pstats, sys
pstats.Stats(sys.argv[1]).sort_stats("cumulative").print_stats(80)
PY
