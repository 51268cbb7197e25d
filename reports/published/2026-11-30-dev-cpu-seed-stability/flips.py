"""The (id, backend) pairs whose outcome or kind differs across results files: each file's
outcome, rounds, borderline shape sets, err_ratio, the rounds' median over the bar (3.0), their
spread in log(err_ratio), and each round's err_ratio (metrics.err_ratio_rounds).

    python flips.py A.json B.json ..."""

import json
import math
import statistics
import sys

files = sys.argv[1:]
runs = [{(r["id"], r["backend"]): r for r in json.load(open(f))["records"]} for f in files]
common = set.intersection(*(set(r) for r in runs))
diff = sorted(k for k in common if len({(r[k]["outcome"], r[k].get("kind")) for r in runs}) > 1)
for k in diff:
    print(k[0])
    for f, r in zip(files, runs):
        m = r[k].get("metrics") or {}
        rr = m.get("err_ratio_rounds") or []
        logs = [math.log(x / 3.0) for x in rr[1:]] if len(rr) > 2 else []
        print(
            f"   {f.split('/')[-1]}: {r[k]['outcome']:6} rounds {m.get('rounds')} borderline {m.get('borderline')} err_ratio {m.get('err_ratio')} median/bar {statistics.median(rr) / 3 if rr else None:.3} sd(log) {statistics.stdev([math.log(x) for x in rr]) if len(rr) > 2 else 0:.2f}  {rr}"
        )
