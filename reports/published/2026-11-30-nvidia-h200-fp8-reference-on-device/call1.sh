#!/usr/bin/env bash
# Call 1: the fp64 reference of the largest fp8 bench items from values and scales multiplied out
# on the GPU, against host fp64 copies (reference_ab.py: one plan, bit for bit, timed); then the
# tests of the touched modules on the GPU (the chunked reference on CUDA).
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
here=reports/published/2026-11-30-nvidia-h200-fp8-reference-on-device
cp "$OUT/machine.txt" "$OUT/call1-machine.txt"
/usr/bin/time -v python3 "$here/reference_ab.py" > "$OUT/call1-reference-ab.txt" 2> "$OUT/call1-reference-ab.time"
echo "reference_ab: exit $?" | tee -a "$OUT/call1-summary.txt"
cat "$OUT/call1-reference-ab.txt" | tee -a "$OUT/call1-summary.txt"
grep -E "Maximum resident|Elapsed" "$OUT/call1-reference-ab.time" | tee -a "$OUT/call1-summary.txt"
timeout 200 python3 -m pytest tests/test_memory.py tests/test_gemm.py tests/test_inputs.py \
  tests/test_repro.py tests/test_diagnoses.py tests/test_reference_golden.py -n 8 -q -p no:randomly \
  -rfE > "$OUT/call1-tests.log" 2>&1
echo "tests: exit $?" | tee -a "$OUT/call1-summary.txt"
tail -3 "$OUT/call1-tests.log" | tee -a "$OUT/call1-summary.txt"
