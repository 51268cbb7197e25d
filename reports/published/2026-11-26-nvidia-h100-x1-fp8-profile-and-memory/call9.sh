source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
timeout 200 ncu --profile-from-start off --set full --import-source yes -k regex:hopper -o /tmp/fp8-src python3 tools/ncu_fp8.py > $OUT/call9-log.txt 2>&1
echo "ncu: exit $?"
ncu --import /tmp/fp8-src.ncu-rep --page source --csv --print-source sass > /tmp/sass.csv 2> $OUT/call9-err.txt
ncu --import /tmp/fp8-src.ncu-rep --page source --csv --print-source cuda > /tmp/src.csv 2>> $OUT/call9-err.txt
wc -l /tmp/sass.csv /tmp/src.csv
head -2 /tmp/sass.csv | cut -c1-600
python3 - <<'PY'
import csv, os
out = os.environ["OUT"]
for name, path in (("sass", "/tmp/sass.csv"), ("source", "/tmp/src.csv")):
    rows = list(csv.reader(open(path)))
    head = next(i for i, r in enumerate(rows) if any("Warp Stall Sampling (All" in c for c in r))
    cols = rows[head]
    s = next(i for i, c in enumerate(cols) if c.startswith("Warp Stall Sampling (All"))
    body = [r for r in rows[head + 1:] if len(r) > s]
    def num(x):
        try: return float(x.replace(",", ""))
        except ValueError: return 0.0
    total = sum(num(r[s]) for r in body)
    top = sorted(body, key=lambda r: -num(r[s]))[:25]
    with open(f"{out}/call9-top-{name}.txt", "w") as f:
        f.write(f"columns: {cols[:8]} ... stall column {cols[s]!r}; total samples {total:.0f}\n")
        for r in top:
            f.write(f"{num(r[s]) / total:6.1%}  " + " | ".join(c.strip()[:110] for c in r[:3]) + "\n")
    print(open(f"{out}/call9-top-{name}.txt").read()[:3000])
PY
