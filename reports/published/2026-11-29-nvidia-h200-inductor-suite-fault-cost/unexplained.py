"""Print a run's outcome counts and every record the expectations do not explain.

    python3 unexplained.py RESULTS.json

A record is unexplained when it failed, errored or passed where a failure was expected
(xpassed): an expected failure is `xfailed`, an expected pass-or-fail (`status: either`) is
`passed` or `xfailed`, so only these three outcomes are left to explain.
"""

import json
import sys
from collections import Counter

records = json.load(open(sys.argv[1]))["records"]
print("outcomes:", dict(sorted(Counter(r["outcome"] for r in records).items())))
unexplained = [r for r in records if r["outcome"] in ("failed", "error", "xpassed")]
print(f"unexplained: {len(unexplained)}")
for r in unexplained:
    reason = (r.get("reason") or "").replace("\n", " ")[:220]
    print(f"  {r['outcome']} {r['id']} | {r.get('kind')} | {reason}")
