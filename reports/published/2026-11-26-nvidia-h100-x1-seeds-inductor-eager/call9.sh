# eager as the backend under test, the whole suite on one GPU
source .whl/prelude.sh
python3 -c "import gemmconf.plugin" 2>/dev/null || {
  rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1; }
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/eager.txt
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-seeds-inductor-eager/call1-seed1.json.gz > /tmp/durations.json
start=$(date +%s)
timeout 480 python3 -m pytest suites --backend eager -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results $OUT/eager.json --conformance-html none > $OUT/eager.log 2>&1
echo "eager: exit $? in $(( $(date +%s) - start )) s" >> $L
tail -1 $OUT/eager.log >> $L
python3 - $OUT/eager.json >> $L <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["records"]:
    if r["outcome"] in ("failed", "error", "xpassed"):
        print(r["outcome"], r["id"], "|", r.get("kind"), "|", (r.get("reason") or "")[:200].replace("\n", " "))
PY
gzip $OUT/eager.json
cat $L
