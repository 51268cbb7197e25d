source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
timeout 200 python3 devwork/s16_overlap.py 5 2>&1 | tee $OUT/call12-overlap.txt | grep -v Warning
timeout 200 ncu --profile-from-start off --set full --import-source yes -o /tmp/both python3 tools/ncu_fp8.py > /dev/null 2>&1
echo "ncu: exit $?"
for k in hopper nvjet; do
  ncu --import /tmp/both.ncu-rep -k regex:$k --page source --csv --print-source sass > /tmp/$k.csv 2>/dev/null
done
python3 - <<'PY'
import csv, os, re, collections
out = os.environ["OUT"]
lines = []
for k in ("hopper", "nvjet"):
    rows = list(csv.reader(open(f"/tmp/{k}.csv")))
    head = next(i for i, r in enumerate(rows) if "Source" in r and any("Warp Stall Sampling (All" in c for c in r))
    cols = rows[head]; src = cols.index("Source")
    s = next(i for i, c in enumerate(cols) if c.startswith("Warp Stall Sampling (All"))
    body = [r for r in rows[head + 1:] if len(r) > s]
    num = lambda x: float(x.replace(",", "") or 0) if re.fullmatch(r"[\d,.]*", x) else 0.0
    total = sum(num(r[s]) for r in body)
    ops = collections.Counter()
    for r in body:
        ops[r[src].split()[0] if not r[src].startswith("@") else r[src].split()[1]] += num(r[s])
    lines.append(f"== {k}: {len(body)} SASS instructions, {total:.0f} stall samples")
    dep = collections.Counter(re.sub(r"\s+", " ", r[src].strip()) for r in body if "DEPBAR" in r[src] or "wait" in r[src].lower())
    lines.append("  wgmma waits in the code: " + "; ".join(f"{c}x {t}" for t, c in dep.most_common(6)))
    lines.append("  stall samples by opcode: " + ", ".join(f"{o} {v / total:.1%}" for o, v in ops.most_common(10)))
    for r in sorted(body, key=lambda r: -num(r[s]))[:12]:
        lines.append(f"  {num(r[s]) / total:6.1%}  {r[src].strip()[:100]}")
open(f"{out}/call12-sass-compare.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
