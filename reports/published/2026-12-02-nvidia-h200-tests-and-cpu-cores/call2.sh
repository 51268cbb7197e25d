#!/usr/bin/env bash
# Call 2, on a fresh `nvidia-h200` with its GPU hidden (CUDA_VISIBLE_DEVICES empty): the whole
# reference suite on the host's CPU cores alone (Triton's interpreter, as on a CPU machine), at
# -n auto (16), 8, 4 and 2 workers, one run after the other: does a CPU run go faster with more
# cores? The dev CPU's make test runs the same at -n 2 (2 cores).
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cat "$OUT/machine.txt" >> "$OUT/call2-summary.txt"; rm "$OUT/machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
export CUDA_VISIBLE_DEVICES=""
lscpu | grep -E "^(Model name|Thread|Core|Socket|CPU\(s\))" >> "$OUT/call2-summary.txt"
for n in ${WORKERS:-auto 8 4 2}; do
  start=$(date +%s.%N)
  /usr/bin/time -f "%e s wall, %U s user, %S s system" -o /tmp/time-$n.txt \
    timeout -s TERM "${LIMIT:-170}" python3 -m pytest suites --backend reference -n "$n" -q -rfE \
    -p no:randomly --results "$OUT/call2-n$n.json" --conformance-html none > /tmp/cpu-n$n.log 2>&1
  rc=$?
  echo "-n $n: exit $rc, $(cat /tmp/time-$n.txt); $(grep -E '^[0-9]+ (passed|failed)' /tmp/cpu-n$n.log | tail -1)" \
    | tee -a "$OUT/call2-summary.txt"
  grep -E "workers|who computed" /tmp/cpu-n$n.log | head -3 >> "$OUT/call2-summary.txt"
  grep -E "^(FAILED|ERROR)" /tmp/cpu-n$n.log | head -10 >> "$OUT/call2-summary.txt"
done
for n in ${WORKERS:-auto 8 4 2}; do
  [ -f "$OUT/call2-n$n.json" ] && [ "$n" != auto ] && python3 -m gemmconf.cli report diff \
    "$OUT/call2-nauto.json" "$OUT/call2-n$n.json" 2>&1 | tail -1 | sed "s/^/diff -n auto -> -n $n: /" \
    | tee -a "$OUT/call2-summary.txt"
done
tar -cJf "$OUT/call2-logs.tar.xz" -C /tmp $(cd /tmp && ls cpu-n*.log)
xz -9 -f "$OUT"/call2-n*.json
