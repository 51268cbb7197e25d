#!/usr/bin/env bash
# Call 2, on a fresh `nvidia-h200`, the tree at the commit named by TREE: (1) eager over the whole
# suite (eager.yaml's crash entries name their messages since 788034a); (2) the 155 tf32 items of
# inductor-max-autotune:TRITON that call 1's 130 s did not reach, against the TF32 floor of
# 331c890, and the code-check files on inductor-max-autotune:TRITON and inductor-max-autotune
# (their sm100/sm120 items run for them on an H200 since 277f13c).
set -u
export TREE="${TREE:-unknown}"
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
cat "$OUT/machine.txt" >> "$OUT/summary.txt"; rm "$OUT/machine.txt"
site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
python3 -m compileall -q -j 16 "$site/torch" "$site/triton" "$site/sympy" "$site/numpy" \
  /tmp/site /tmp/gc > /dev/null 2>&1
here=reports/published/2026-12-02-nvidia-h200-tf32-floor-and-inductor-kinds
run() {  # TAG LIMIT pytest-args...
  local tag=$1 limit=$2; shift 2
  local start; start=$(date +%s.%N)
  timeout "$limit" python3 -m pytest "$@" -n 12 -q -rfE -p no:randomly --conformance-html none \
    --results "$OUT/$tag.json" > "/tmp/$tag.log" 2>&1
  echo "$tag: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s; $(tail -1 /tmp/$tag.log)" | tee -a "$OUT/summary.txt"
  grep -E "^(FAILED|ERROR)" "/tmp/$tag.log" | head -40 >> "$OUT/summary.txt"
  grep -E "who computed|XPASS" "/tmp/$tag.log" | head -8 >> "$OUT/summary.txt"
}
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-call2
run call2-eager 200 suites --backend eager
run call2-triton-tf32 150 @"$here/call2-triton-tf32-ids.txt" --backend inductor-max-autotune:TRITON
run call2-autotune-codecheck 100 suites/codecheck suites/tma/codecheck.yaml suites/cutlass/codegen.yaml \
  --backend inductor-max-autotune:TRITON,inductor-max-autotune
for f in "$OUT"/call2-*.json; do xz -f "$f"; done
mv "$OUT/summary.txt" "$OUT/call2-summary.txt"
