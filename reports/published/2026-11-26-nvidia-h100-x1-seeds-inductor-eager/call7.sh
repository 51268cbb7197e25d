source .whl/prelude.sh
python3 -c "import gemmconf.plugin" 2>/dev/null || {
  rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1; }
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
L=$OUT/pad.txt
timeout 100 python3 tools/repro_inductor.py default_padded 2>&1 | grep default_padded > $L
# the suite's padded items: alone (one process, idle GPU), then the whole file with 16 workers
K="127x65x33 or 2b17x9x65 or padded_odd or 2b4x4x4096"
for i in 1; do
  timeout 100 python3 -m pytest suites/dense/first.yaml suites/dense/ops.yaml suites/stress --backend inductor -p no:xdist -p no:randomly -q -k "$K" --conformance-html none --results /tmp/alone$i.json 2>&1 | tail -1 | sed "s/^/alone $i: /" >> $L
  timeout 100 python3 -m pytest suites/dense suites/stress --backend inductor -n auto -p no:randomly -q -k "$K or 3b127x65x33" --conformance-html none --results /tmp/many$i.json 2>&1 | tail -1 | sed "s/^/16 workers, same items $i: /" >> $L
done
timeout 200 python3 -m pytest suites/dense suites/stress suites/integrity --backend inductor -n auto -p no:randomly -q --conformance-html none --results $OUT/many-all.json 2>&1 | tail -1 | sed "s/^/16 workers, dense+stress+integrity: /" >> $L
python3 - >> $L <<'PY'
import json
for f in ["/tmp/alone1.json", "/tmp/many1.json", "/tmp/alone2.json", "/tmp/many2.json", __import__("os").environ["OUT"] + "/many-all.json"]:
    try:
        recs = json.load(open(f))["records"]
    except Exception as e:
        print(f, e); continue
    bad = [r["id"] for r in recs if r.get("kind") == "wrong layout"]
    print(f, len(recs), "records,", len(bad), "wrong layout:", bad)
PY
cat $L
