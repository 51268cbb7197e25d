# session 22, call D: on another machine, the fp8 benchmark items once more (new, HEAD's
# backend, new; kernel mode), then the cold one-GPU suite with the new kernel, diffed against
# session 21's call C
source .whl/prelude.sh
L=$OUT/callD.txt
nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm --format=csv,noheader > $L
rm -rf /tmp/base && cp -r . /tmp/base && git -C /tmp/base checkout -q HEAD -- backend tests
for v in base new; do
  src=$PWD; [ $v = base ] && src=/tmp/base
  rm -rf /tmp/site-$v && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site-$v $src $src/plugins/gemmconf-cutlass > /dev/null 2>&1
done
for run in new-1 base-1 new-2; do
  v=${run%-*}
  PYTHONPATH="/tmp/site-$v:$PWD" timeout 110 python3 -m pytest suites/bench --backend reference --benchmark --bench-mode kernel \
    -p no:xdist -p no:randomly -q -k "fp8 and not decode" --results $OUT/callD-$run.json > /tmp/callD-$run.txt 2>&1
  echo "$run: exit $? $(tail -1 /tmp/callD-$run.txt)" >> $L
done
export PYTHONPATH="/tmp/site-new:$PWD"
export TRITON_CACHE_DIR=/tmp/tcache-D; rm -rf $TRITON_CACHE_DIR
gunzip -c reports/published/2026-11-26-nvidia-h100-x1-small-problem-compiles/call6-cold.json.gz > /tmp/durations.json
start=$(date +%s)
TIMEFORMAT="tree cpu: real %R user %U sys %S"
{ time timeout 320 python3 -m pytest suites --backend reference -n auto -q -rfE -p no:benchmark -p no:randomly \
  --durations-from /tmp/durations.json --results /tmp/callD-suite.json --conformance-html none \
  > /tmp/callD-suite.log 2>&1 ; } 2>> $L
echo "suite: exit $? in $(( $(date +%s) - start )) s" >> $L
tail -4 /tmp/callD-suite.log >> $L
gunzip -c reports/published/2026-11-27-nvidia-h100-x1-c-launch/callC-suite.json.gz > /tmp/prev.json
python3 -c "import sys; from gemmconf.cli import main; sys.exit(main())" report diff /tmp/prev.json /tmp/callD-suite.json > /tmp/callD-diff.txt 2>&1
echo "diff: exit $?" >> $L
tail -3 /tmp/callD-diff.txt >> $L
gzip -c /tmp/callD-suite.json > $OUT/callD-suite.json.gz; cp /tmp/callD-diff.txt /tmp/callD-suite.log $OUT/
cat $L
python3 - <<'PY'
import json, math, os
out = os.environ["OUT"]
rows = {}
cols = ["new-1", "base-1", "new-2"]
for c in cols:
    for rec in json.load(open(f"{out}/callD-{c}.json"))["records"]:
        rows.setdefault(rec["id"], {})[c] = rec["metrics"].get("vs_cublas")
lines = ["item".ljust(44) + " ".join(c.rjust(7) for c in cols)]
for k, d in sorted(rows.items()):
    lines.append(k.ljust(44) + " ".join(f"{d.get(c) or float('nan'):7.3f}" for c in cols))
for c in cols:
    v = [d[c] for d in rows.values() if d.get(c)]
    lines.append(f"{c} geomean {math.exp(sum(map(math.log, v)) / len(v)):.4f} over {len(v)}")
open(f"{out}/callD-table.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
