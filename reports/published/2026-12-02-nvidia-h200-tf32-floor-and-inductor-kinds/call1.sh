#!/usr/bin/env bash
# Call 1, on a fresh `nvidia-h200`, the tree at 0782e60: (1) the whole reference suite cold at
# -n auto, `report diff` against 43ba574's cold run of the same day (the TF32 floor changed in
# 331c890: 2^-8 * RMS(ref) at every K, where it grew with sqrt(K)); (2) the tf32 items on eager
# and inductor-max-autotune:TRITON against that floor; (3) default inductor over the families
# whose inductor.yaml entries name no failure kind, and eager, inductor on the code-check files
# (a code-check target binds only the backends its checks are for since 277f13c).
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cat "$OUT/machine.txt" >> "$OUT/summary.txt"; rm "$OUT/machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
cp reports/published/2026-12-02-nvidia-h200-head-reliability-and-suite/call2-cold-suite.json.xz /tmp/durations.json.xz
xz -dkf /tmp/durations.json.xz
SUITE_LIMIT=230 TAG=call1-reference source reports/published/2026-11-29-nvidia-h200-suite-time/cold_suite.sh
tail -25 "$OUT/call1-reference-timeline.txt" >> "$OUT/summary.txt"; rm "$OUT/call1-reference-timeline.txt"
python3 -m gemmconf.cli report diff /tmp/durations.json "$OUT/call1-reference-suite.json" > "$OUT/call1-reference-diff.txt" 2>&1
echo "report diff 43ba574 -> this tree: exit $?; $(tail -1 "$OUT/call1-reference-diff.txt")" | tee -a "$OUT/summary.txt"
run() {  # TAG LIMIT pytest-args...
  local tag=$1 limit=$2; shift 2
  local start; start=$(date +%s.%N)
  timeout "$limit" python3 -m pytest "$@" -n 12 -q -rfE -p no:randomly --conformance-html none \
    --results "$OUT/$tag.json" > "/tmp/$tag.log" 2>&1
  echo "$tag: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s; $(tail -1 /tmp/$tag.log)" | tee -a "$OUT/summary.txt"
  grep -E "^(FAILED|ERROR)" "/tmp/$tag.log" | head -40 >> "$OUT/summary.txt"
}
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-call1
run call1-tf32 130 suites -k tf32 --backend eager,inductor-max-autotune:TRITON
run call1-inductor 150 suites/grouped suites/codecheck suites/integrity/integrity.yaml \
  suites/errors/errors.yaml suites/fp8 suites/zero_size suites/blockscaled --backend inductor
run call1-codecheck 60 suites/codecheck suites/tma/codecheck.yaml suites/cutlass/codegen.yaml \
  --backend eager
for f in "$OUT"/call1-*.json; do xz -f "$f"; done
gzip -f "$OUT/call1-reference-suite.log"
mv "$OUT/summary.txt" "$OUT/call1-summary.txt"
