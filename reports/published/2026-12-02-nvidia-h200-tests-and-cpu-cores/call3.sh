#!/usr/bin/env bash
# Calls 3 and 4, each on `nvidia-h200`, the head (TREE) after a062e81 (the interpreter's scalar
# index under triton 3.6 and numpy 2.4, which failed call 2's 2,737 items):
# 1. on the GPU: the test call 1 failed (an sm90 code-check target on an sm90 GPU), the
#    interpreter tests (skipped on a GPU), so the fixed file's other tests ran there;
# 2. with the GPU hidden (CUDA_VISIBLE_DEVICES empty): the whole reference suite on the host's
#    CPU cores alone (Triton's interpreter), at each of WORKERS, one run after the other.
# TAG names the outputs (call3, call4).
set -u
export TREE="${TREE:-unknown}" TAG="${TAG:-call3}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cat "$OUT/machine.txt" >> "$OUT/$TAG-summary.txt"; rm "$OUT/machine.txt"
export PYTHONPATH="$PYTHONPATH:$PWD"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
python3 -c "import numpy; print('numpy', numpy.__version__)" >> "$OUT/$TAG-summary.txt"
if [ "${GPU_TESTS:-1}" = 1 ]; then
  timeout 200 python3 -m pytest tests/test_codecheck.py tests/test_reference_backend.py -n 8 -q \
    -p no:randomly -rfEs > /tmp/gpu-tests.log 2>&1
  echo "GPU tests: exit $?; $(tail -1 /tmp/gpu-tests.log)" | tee -a "$OUT/$TAG-summary.txt"
  grep -E "^(FAILED|ERROR)" /tmp/gpu-tests.log | head -10 >> "$OUT/$TAG-summary.txt"
fi
export CUDA_VISIBLE_DEVICES=""
for n in ${WORKERS:-auto 8 4}; do
  /usr/bin/time -f "%e s wall, %U s user, %S s system" -o /tmp/time-$n.txt \
    timeout -s TERM "${LIMIT:-240}" python3 -m pytest suites --backend reference -n "$n" -q -rfE \
    -p no:randomly --results "$OUT/$TAG-n$n.json" --conformance-html none > /tmp/cpu-n$n.log 2>&1
  rc=$?
  echo "-n $n: exit $rc, $(cat /tmp/time-$n.txt | tail -1); $(grep -E '^[0-9]+ (passed|failed)' /tmp/cpu-n$n.log | tail -1)" \
    | tee -a "$OUT/$TAG-summary.txt"
  grep -E "who computed" /tmp/cpu-n$n.log | head -2 >> "$OUT/$TAG-summary.txt"
  grep -E "^(FAILED|ERROR)" /tmp/cpu-n$n.log | head -10 >> "$OUT/$TAG-summary.txt"
done
tar -cJf "$OUT/$TAG-logs.tar.xz" -C /tmp $(cd /tmp && ls cpu-n*.log gpu-tests.log 2>/dev/null)
xz -9 -f "$OUT"/$TAG-n*.json
