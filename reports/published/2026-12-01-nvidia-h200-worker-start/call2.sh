#!/usr/bin/env bash
# Call 2: the start-up of a parallel run, controller and workers, on a handful of items (a run's
# fixed cost): `pytest suites --backend reference -n 32 -k <4 items> -p tools.timeline`, three
# times (the first warms the caches), then three times with PYTHONPYCACHEPREFIX set (bytecode
# written to a folder of /tmp: whether the image's site-packages lacks it), then whether torch's
# folder holds bytecode and is writable.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call2-machine.txt"
here=reports/published/2026-12-01-nvidia-h200-worker-start
python3 - <<'PY' | tee -a "$OUT/summary.txt"
import os, torch
d = os.path.dirname(torch.__file__)
print(f"torch at {d}: writable {os.access(d, os.W_OK)}, __pycache__ {os.path.isdir(os.path.join(d, '__pycache__'))}")
PY
run() {  # $1 tag
  rm -rf "/tmp/tl-$1"
  local start; start=$(date +%s.%N)
  GEMMCONF_TIMELINE="/tmp/tl-$1" python3 -m pytest suites --backend reference -n 32 -q -p no:randomly \
    -p tools.timeline -k "first and fp32 and (64x64x64 or 127x65x33)" --results "/tmp/$1.json" \
    --conformance-html none > "$OUT/call2-$1.log" 2>&1
  echo "$1: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s; $(tail -1 "$OUT/call2-$1.log")" | tee -a "$OUT/summary.txt"
  python3 "$here/starts.py" "/tmp/tl-$1" | tee -a "$OUT/summary.txt"
}
for i in 1 2 3; do run "plain-$i"; done
export PYTHONPYCACHEPREFIX=/tmp/pycache
for i in 1 2 3; do run "pycache-$i"; done
