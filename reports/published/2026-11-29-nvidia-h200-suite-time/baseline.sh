# shellcheck shell=bash
# Issue 43's starting point on one H200 (run from the project root, TREE=<commit>):
# the cold reference suite with a timeline of every worker, then what a lost CUDA context costs
# against a segfault on the same 71 bf16 items.
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
export PYTHONPATH="$PWD:$PYTHONPATH" TRITON_CACHE_DIR=/tmp/tcache-cold
tag=${TAG:-baseline}
L=$OUT/$tag.txt
gunzip -c reports/published/2026-11-29-nvidia-h200-kernels-ab-reference-suite/reference-suite.json.gz > /tmp/durations.json
rm -rf "$TRITON_CACHE_DIR" /tmp/timeline && mkdir -p /tmp/timeline
start=$(date +%s.%N)
GEMMCONF_TIMELINE=/tmp/timeline timeout "${SUITE_LIMIT:-300}" python3 -m pytest suites --backend reference -n auto -q -rfE \
  -p no:randomly -p tools.timeline --durations-from /tmp/durations.json \
  --results "$OUT/$tag-suite.json" --conformance-html none > "$OUT/$tag-suite.log" 2>&1
echo "suite: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$L"
python3 tools/timeline.py /tmp/timeline > "$OUT/$tag-timeline.txt" 2>&1
tail -3 "$OUT/$tag-suite.log" | tee -a "$L"
for fault in segfault illegal_address; do
  start=$(date +%s.%N)
  timeout "${FAULT_LIMIT:-240}" python3 -m pytest suites/dense suites/epilogue -m mm -n auto -q -p no:randomly \
    --backend "tools.fault_cost:$fault" --results "$OUT/$tag-$fault.json" --conformance-html none \
    > "$OUT/$tag-$fault.log" 2>&1
  echo "$fault: exit $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a "$L"
  tail -1 "$OUT/$tag-$fault.log" | tee -a "$L"
done
cd "$OUT" && tar czf "$tag.tar.gz" ./*.json ./*.log ./*-timeline.txt && rm -f ./*.json ./*-suite.log ./*-segfault.log ./*-illegal_address.log
