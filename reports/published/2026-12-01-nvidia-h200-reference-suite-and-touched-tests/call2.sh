#!/usr/bin/env bash
# Call 2, on the one-GPU kind (`nvidia-h200`), tree ad42eca: the test files 56080b9 and ad42eca
# touched (the summary's wrapped group titles; inductor-max-autotune's CPP family, which a GPU
# machine reports unavailable), then `gemmconf backends` and a run of `:CPP` that it refuses.
set -u
export TREE=ad42eca
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cp "$OUT/machine.txt" "$OUT/call2-machine.txt"
export PATH="/tmp/site/bin:$PATH"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
start=$(date +%s)
PYTHONPATH="$PYTHONPATH:$PWD" python3 -m pytest tests/test_backends_builtin.py \
  tests/test_failure_triage.py tests/test_report_summary.py tests/test_expectations.py -n 8 -q \
  -p no:randomly -rfEx > "$OUT/call2-tests.log" 2>&1
echo "tests: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/summary.txt"
grep -E "^(FAILED|ERROR|XFAIL|XPASS)" "$OUT/call2-tests.log" | cut -c1-300 | tee -a "$OUT/summary.txt"
tail -1 "$OUT/call2-tests.log" | tee -a "$OUT/summary.txt"
python3 -m gemmconf.cli backends 2>&1 | grep -E "^inductor|^  inductor" > "$OUT/call2-backends.txt"
cat "$OUT/call2-backends.txt"
python3 -m gemmconf.cli run dense/first.yaml --backend inductor-max-autotune:CPP -p no:xdist \
  > "$OUT/call2-cpp-run.txt" 2>&1
echo "gemmconf run --backend inductor-max-autotune:CPP: exit $?" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/call2-cpp-run.txt"
