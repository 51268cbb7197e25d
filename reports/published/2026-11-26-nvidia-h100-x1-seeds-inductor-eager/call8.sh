# inductor on the whole suite on one GPU under the new expectations: both shards, one call
source .whl/prelude.sh
python3 -c "import gemmconf.plugin" 2>/dev/null || {
  rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1; }
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/verify.txt
git diff --stat HEAD > $L
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-seeds-inductor-eager/call1-seed1.json.gz > /tmp/durations.json
for part in 1 2; do
  start=$(date +%s)
  timeout 270 python3 -m pytest suites --backend inductor -n auto -q -rfE -p no:benchmark -p no:randomly \
    --shard $part/2 --durations-from /tmp/durations.json --results $OUT/verify-$part.json --conformance-html none \
    > $OUT/verify-$part.log 2>&1
  echo "inductor shard $part/2: exit $? in $(( $(date +%s) - start )) s" >> $L
  tail -1 $OUT/verify-$part.log >> $L
done
python3 - $OUT/verify-1.json $OUT/verify-2.json >> $L <<'PY'
import json, sys
from collections import Counter
c = Counter()
for f in sys.argv[1:]:
    for r in json.load(open(f))["records"]:
        c[r["outcome"]] += 1
        if r["outcome"] in ("failed", "error"):
            print("FAILED", r["id"], "|", r.get("kind"), "|", (r.get("reason") or "")[:200].replace("\n", " "))
print(dict(c))
PY
gzip $OUT/verify-1.json $OUT/verify-2.json
cat $L
