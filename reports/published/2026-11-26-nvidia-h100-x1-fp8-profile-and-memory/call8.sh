source .whl/prelude.sh
L=$OUT/call8.txt
git log --oneline -1 > $L; git diff --stat >> $L
rm -rf /tmp/base && cp -r . /tmp/base && git -C /tmp/base checkout -q HEAD -- backend/configs.py
git -C /tmp/base diff --stat >> $L
for v in base new; do
  src=$PWD; [ $v = base ] && src=/tmp/base
  rm -rf /tmp/site-$v && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site-$v $src $src/plugins/gemmconf-cutlass > /dev/null 2>&1
  PYTHONPATH=/tmp/site-$v python3 -c "from gemmconf_reference import configs; print('$v', configs.HOPPER['fp8'])" >> $L
done
for r in 1 2; do
  for v in base new; do
    PYTHONPATH="/tmp/site-$v:$PWD" timeout 110 python3 -m pytest suites/bench --backend reference --benchmark --bench-mode kernel \
      -p no:xdist -p no:randomly -q -k "fp8 and not decode" --results $OUT/call8-$v-$r.json > $OUT/call8-$v-$r.txt 2>&1
    echo "$v run $r: exit $?" >> $L
  done
done
cat $L
python3 - <<'PY'
import json, math, os
out = os.environ["OUT"]
rows = {}
for v in ("base", "new"):
    for r in (1, 2):
        for rec in json.load(open(f"{out}/call8-{v}-{r}.json"))["records"]:
            rows.setdefault(rec["id"], {})[f"{v}{r}"] = rec["metrics"].get("vs_cublas")
cols = ["base1", "new1", "base2", "new2"]
print("item".ljust(40), *cols)
for k, d in sorted(rows.items()):
    print(k.ljust(40), *(f"{d.get(c, float('nan')):.3f}" for c in cols))
for c in cols:
    v = [d[c] for d in rows.values() if d.get(c)]
    print(c, "geomean", round(math.exp(sum(map(math.log, v)) / len(v)), 4))
PY
