#!/usr/bin/env bash
# Call 2: call 1's reference_ab.py again (call 1 gave load_suite the suites folder, not a file).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
here=reports/published/2026-11-30-nvidia-h200-fp8-reference-on-device
cp "$OUT/machine.txt" "$OUT/call2-machine.txt"
/usr/bin/time -v python3 "$here/reference_ab.py" > "$OUT/call2-reference-ab.txt" 2> "$OUT/call2-reference-ab.time"
echo "reference_ab: exit $?" | tee -a "$OUT/call2-summary.txt"
cat "$OUT/call2-reference-ab.txt" | tee -a "$OUT/call2-summary.txt"
grep -E "Maximum resident|Elapsed" "$OUT/call2-reference-ab.time" | tee -a "$OUT/call2-summary.txt"
