"""Summary of ab.py's lines: per tree and path, the median, min and max over every round."""

import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
for tree in ("old", "new"):
    mine = [r for r in rows if r["tree"] == tree]
    print(f"{tree}: {len(mine)} processes x 3 rounds")
    for path in mine[0]["host_us"]:
        values = [v for r in mine for v in r["host_us"][path]]
        print(
            f"  {path:<10} median {statistics.median(values):6.2f}  min {min(values):6.2f}  "
            f"max {max(values):6.2f}  rel_err {mine[0]['rel_err'][path]:.2e}"
        )
    # each round against its own process's eager and floor, timed next to it
    for path, base in (("GemmCall", "eager"), ("override", "eager"), ("reference", "floor")):
        ratios = [
            p / b for r in mine for p, b in zip(r["host_us"][path], r["host_us"][base])
        ]
        print(
            f"  {path}/{base:<6} median {statistics.median(ratios):5.3f}  "
            f"min {min(ratios):5.3f}  max {max(ratios):5.3f}"
        )
    diffs = [
        p - b for r in mine for p, b in zip(r["host_us"]["reference"], r["host_us"]["floor"])
    ]
    print(f"  reference - floor, us: median {statistics.median(diffs):6.2f}")
