#!/usr/bin/env bash
# Call 3, on the one-GPU kind (`nvidia-h200`), tree cf79fdd: the CPP family's availability read
# from where the harness runs items (capability.detect); test_backends_builtin on the GPU and
# `gemmconf backends`.
set -u
export TREE=cf79fdd
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call3-machine.txt"
start=$(date +%s)
PYTHONPATH="$PYTHONPATH:$PWD" python3 -m pytest tests/test_backends_builtin.py \
  tests/test_failure_triage.py -n 8 -q -p no:randomly -rfEx > "$OUT/call3-tests.log" 2>&1
echo "tests: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
grep -E "^(FAILED|ERROR)" "$OUT/call3-tests.log" | cut -c1-300 | tee -a "$OUT/summary.txt"
tail -1 "$OUT/call3-tests.log" | tee -a "$OUT/summary.txt"
python3 -m gemmconf.cli backends 2>&1 | grep -E "max-autotune:CPP" | tee "$OUT/call3-backends.txt"
