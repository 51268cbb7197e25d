#!/usr/bin/env bash
# Call 5: the pytest header's bytecode line (4910f7f) on this image: a run's header before and
# after torch's bytecode is compiled.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call5-machine.txt"
header() {  # $1 tag
  python3 -m pytest suites --backend reference -p no:xdist -p no:randomly -k "first and fp32 and 64x64x64" \
    --results "/tmp/$1.json" --conformance-html none > "$OUT/call5-$1.log" 2>&1
  echo "$1: exit $?; $(tail -1 "$OUT/call5-$1.log")" | tee -a "$OUT/summary.txt"
  grep "bytecode" "$OUT/call5-$1.log" | tee -a "$OUT/summary.txt"
}
header before
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" > /dev/null 2>&1
header after
echo "lines naming bytecode after compileall: $(grep -c bytecode "$OUT/call5-after.log")" | tee -a "$OUT/summary.txt"
