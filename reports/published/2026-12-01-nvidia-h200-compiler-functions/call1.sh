#!/usr/bin/env bash
# Call 1, on the one-GPU kind (`nvidia-h200`): f2ededc on the GPU. A slice of the suite on the
# reference and eager backends (the profiler's quiet kineto); a torch.compile compiler function
# given as --backend module:attr from a folder outside the checkout, in its isolation workers and
# in the pytest process (no torch trace-log lines in its report); the tests that check both.
set -u
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call1-machine.txt"
python3 -c "import pytest; print('pytest', pytest.__version__)" | tee -a "$OUT/call1-machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
summary="$OUT/call1-summary.txt"
here=$PWD

# 1. dense and epilogue, reference and eager, isolated
start=$(date +%s)
python3 -m pytest suites/dense suites/epilogue --backend reference,eager -n 16 -q -rfE \
  -p no:randomly --results "$OUT/call1-slice.json" > "$OUT/call1-slice.log" 2>&1
echo "slice: exit $? in $(($(date +%s) - start)) s: $(tail -1 "$OUT/call1-slice.log")" | tee -a "$summary"
python3 - "$OUT/call1-slice.json" <<'PY' | tee -a "$summary"
import json, sys
records = json.load(open(sys.argv[1]))["records"]
noisy = [r["id"] for r in records if "profiler_st" in (r.get("details") or "")]
print(f"slice: {len(records)} records, {len(noisy)} with kineto's profiler lines in their details")
PY

# 2. a compiler function as module:attr, outside the checkout
mkdir -p /tmp/outside && cd /tmp/outside || exit 1
cat > ktail.py <<'PY'
import torch


def _mm_without_k_tail(a, b):
    kept = a.shape[-1] - a.shape[-1] % 16
    return torch.mm(a[:, :kept], b[:kept])


def compile_graph(gm, example_inputs):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.mm:
            node.target = _mm_without_k_tail
    gm.recompile()
    return gm.forward
PY
for mode in isolated in-process; do
  extra=()
  [ "$mode" = in-process ] && extra=(--no-isolate)
  python3 -m gemmconf.cli run dense/first.yaml --backend ktail:compile_graph \
    -k "fp32-127x65x33-nn or fp32-64x64x64-nn or bf16-127x65x33-nn" -p no:xdist --tb=short \
    "${extra[@]}" > "$OUT/call1-ktail-$mode.log" 2>&1
  status=$?
  echo "ktail $mode: exit $status: $(grep -E '(passed|failed)' "$OUT/call1-ktail-$mode.log" | tail -1)" | tee -a "$summary"
  echo "ktail $mode: $(grep -c 'torch.__trace' "$OUT/call1-ktail-$mode.log") torch.__trace lines, $(grep -c 'USDT' "$OUT/call1-ktail-$mode.log") USDT lines, $(grep -c 'A K tail dropped' reports/results.json) K-tail diagnoses in results.json" | tee -a "$summary"
done
cd "$here" || exit 1

# 3. the tests of both, on the GPU
start=$(date +%s)
python3 -m pytest tests/test_bad_input.py tests/test_isolation.py -q -n 8 -p no:randomly \
  > "$OUT/call1-tests.log" 2>&1
echo "tests: exit $? in $(($(date +%s) - start)) s: $(tail -1 "$OUT/call1-tests.log")" | tee -a "$summary"
gzip -f "$OUT/call1-slice.json" "$OUT/call1-slice.log"
