# Session 21 call F (ran as devwork/s21/callF2.sh): the decode benchmark items in wall mode (host + device, as a user sees a
# call), HEAD 7ef0a8f's backend ("old") and ca10523's ("new") alternating twice on one machine,
# each run pinned to cores 4-5; then report diff between them (the regression gate's noise model)
source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > $OUT/pip.log 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
NEWPP="$PYTHONPATH"; OLDPP="$PWD/devwork/s21/oldpkg:$PYTHONPATH"
L=$OUT/callF.txt
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader > $L
bench() {  # tree round
  local pp=$OLDPP; [ $1 = new ] && pp=$NEWPP
  local start=$(date +%s)
  PYTHONPATH="$pp" timeout 150 taskset -c 4,5 python3 -m pytest suites/bench --backend reference \
    --benchmark --bench-mode wall -p no:xdist -p no:randomly -q -k decode \
    --results $OUT/callF-$1$2.json --conformance-html none > $OUT/callF-$1$2.log 2>&1
  echo "$1 round $2: exit $? in $(( $(date +%s) - start )) s" >> $L
}
for r in 1 2; do bench old $r; bench new $r; done
G="python3 -c 'import sys; from gemmconf.cli import main; sys.exit(main())'"
for pair in "old1 new1" "old2 new2" "old1 old2" "new1 new2"; do
  set -- $pair
  eval $G report diff $OUT/callF-$1.json $OUT/callF-$2.json --fail-on-regression > $OUT/callF-diff-$1-$2.txt 2>&1
  echo "diff $1 -> $2: exit $?" >> $L
done
python3 - $OUT <<'PY' >> $L
import json, sys
out = sys.argv[1]
for name in ("old1", "new1", "old2", "new2"):
    doc = json.load(open(f"{out}/callF-{name}.json"))
    row = []
    for r in sorted(doc["records"], key=lambda r: r["id"]):
        m = r.get("metrics") or {}
        row.append(f"{r['id'].split('[')[1].rstrip(']')}={m.get('vs_cublas', float('nan')):.2f}x/{m.get('time_ms', float('nan'))*1e3:.0f}us")
    print(name, " ".join(row))
PY
cat $L; tail -12 $OUT/callF-diff-old1-new1.txt
