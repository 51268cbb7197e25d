# inductor (default torch.compile) on the whole suite on one GPU: shard $1 of 2
source .whl/prelude.sh
python3 -c "import gemmconf.plugin" 2>/dev/null || {
  rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1; }
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
part=$1; limit=${2:-480}
L=$OUT/indfull-$part.txt
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-seeds-inductor-eager/call1-seed1.json.gz > /tmp/durations.json
start=$(date +%s)
timeout $limit python3 -m pytest suites --backend inductor -n auto -q -rfE -p no:benchmark -p no:randomly \
  --shard $part/2 --durations-from /tmp/durations.json --results $OUT/indfull-$part.json --conformance-html none \
  > $OUT/indfull-$part.log 2>&1
echo "inductor shard $part/2: exit $? in $(( $(date +%s) - start )) s" >> $L
tail -2 $OUT/indfull-$part.log >> $L
cat $L
python3 - $OUT/indfull-$part.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["records"]:
    if r["outcome"] in ("failed", "error", "xpassed"):
        print(r["outcome"], r["id"], "|", r.get("kind"), "|", (r.get("reason") or "")[:160].replace("\n", " "))
PY
