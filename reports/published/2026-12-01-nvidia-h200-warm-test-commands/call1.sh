#!/usr/bin/env bash
# Call 1, on `nvidia-h200`: the test files whose gemmconf and pytest commands fork from the
# tests' warm interpreter (tests/warm_python.py), on a CUDA machine where those commands find a
# GPU: the warm interpreter imported torch without touching CUDA, each command initialises CUDA
# after the fork.
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
mv "$OUT/machine.txt" "$OUT/call1-machine.txt"
start=$(date +%s.%N)
timeout 480 python3 -m pytest tests/test_warm_python.py tests/test_readme.py tests/test_repro.py \
  tests/test_integration_examples.py tests/test_attribution.py tests/test_bad_input.py \
  tests/test_suite_facts.py tests/test_run.py tests/test_plugin.py tests/test_outside_backend.py \
  tests/test_compile_layer.py tests/test_interrupt.py tests/test_hostile_inputs.py \
  -n 8 -q -rfEs -p no:randomly > "$OUT/call1-tests.log" 2>&1
echo "tests: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/call1-tests.log" | tee -a "$OUT/summary.txt"
