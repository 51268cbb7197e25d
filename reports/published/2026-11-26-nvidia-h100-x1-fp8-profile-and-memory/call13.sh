source .whl/prelude.sh
rm -rf /tmp/site2 && python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site2 . plugins/gemmconf-cutlass > /dev/null 2>&1
export PYTHONPATH="/tmp/site2:$PWD:$PYTHONPATH"
timeout 200 ncu --profile-from-start off --set full --import-source yes -k regex:hopper -o /tmp/h python3 tools/ncu_fp8.py > /dev/null 2>&1
echo "ncu: exit $?"
ncu --import /tmp/h.ncu-rep --page source --csv --print-source sass > /tmp/h.csv 2>/dev/null
python3 - <<'PY'
import csv, os, re
out = os.environ["OUT"]
rows = list(csv.reader(open("/tmp/h.csv")))
head = next(i for i, r in enumerate(rows) if "Source" in r and any("Warp Stall Sampling (All" in c for c in r))
cols = rows[head]; src = cols.index("Source"); addr = cols.index("Address")
s = next(i for i, c in enumerate(cols) if c.startswith("Warp Stall Sampling (All"))
ex = cols.index("Instructions Executed") if "Instructions Executed" in cols else None
body = [r for r in rows[head + 1:] if len(r) > s]
num = lambda x: float(x.replace(",", "") or 0) if re.fullmatch(r"[\d,.]*", x) else 0.0
total = sum(num(r[s]) for r in body)
top = sorted(range(len(body)), key=lambda i: -num(body[i][s]))[:8]
lines = [f"{len(body)} SASS instructions, {total:.0f} samples; context of the 8 most-sampled (samples %, executed, instruction)"]
done = set()
for i in sorted(top):
    if i in done: continue
    lines.append(f"--- around {body[i][addr]}")
    for j in range(max(0, i - 14), min(len(body), i + 6)):
        done.add(j)
        mark = ">>" if j in top else "  "
        e = body[j][ex] if ex is not None else ""
        lines.append(f"{mark} {num(body[j][s]) / total:6.1%} {e:>12} {body[j][src].strip()[:90]}")
open(f"{out}/call13-context.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
