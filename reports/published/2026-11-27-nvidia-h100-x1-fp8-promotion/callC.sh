# session 22, call C: the overlapped fp8 promotion as benchmark items, A/B against HEAD's backend
# (kernel mode, alternating twice), then the new tree's fp8 and TMA suites and hopper tests
source .whl/prelude.sh
L=$OUT/callC.txt
git log --oneline -1 > $L; git diff --stat >> $L
rm -rf /tmp/base && cp -r . /tmp/base && git -C /tmp/base checkout -q HEAD -- backend tests
for v in base new; do
  src=$PWD; [ $v = base ] && src=/tmp/base
  rm -rf /tmp/site-$v && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site-$v $src $src/plugins/gemmconf-cutlass > /dev/null 2>&1
  PYTHONPATH=/tmp/site-$v python3 -c "from gemmconf_reference import configs; print('$v', configs.HOPPER['fp8'])" >> $L
done
for r in 1 2; do
  for v in base new; do
    PYTHONPATH="/tmp/site-$v:$PWD" timeout 110 python3 -m pytest suites/bench --backend reference --benchmark --bench-mode kernel \
      -p no:xdist -p no:randomly -q -k "fp8 and not decode" --results $OUT/callC-$v-$r.json > /tmp/callC-$v-$r.txt 2>&1
    echo "$v run $r: exit $? $(tail -1 /tmp/callC-$v-$r.txt)" >> $L
  done
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $L
export PYTHONPATH="/tmp/site-new:$PWD"
timeout 150 python3 -m pytest suites/fp8 suites/tma suites/bench --backend reference -n 12 -q -p no:randomly -k "not decode" 2>&1 | tail -4 >> $L
timeout 60 python3 -m pytest tests/test_hopper.py -q -p no:randomly 2>&1 | tail -2 >> $L
cat $L
python3 - <<'PY'
import json, math, os
out = os.environ["OUT"]
rows = {}
for v in ("base", "new"):
    for r in (1, 2):
        for rec in json.load(open(f"{out}/callC-{v}-{r}.json"))["records"]:
            rows.setdefault(rec["id"], {})[f"{v}{r}"] = rec["metrics"].get("vs_cublas")
cols = ["base1", "new1", "base2", "new2"]
lines = ["item".ljust(44) + " ".join(c.rjust(6) for c in cols)]
for k, d in sorted(rows.items()):
    lines.append(k.ljust(44) + " ".join(f"{d.get(c) or float('nan'):6.3f}" for c in cols))
for c in cols:
    v = [d[c] for d in rows.values() if d.get(c)]
    lines.append(f"{c} geomean {math.exp(sum(map(math.log, v)) / len(v)):.4f} over {len(v)}")
open(f"{out}/callC-table.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
