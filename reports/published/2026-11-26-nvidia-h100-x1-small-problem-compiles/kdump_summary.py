"""Distinct Triton compiles of a run, from a call's kdump (sitecustomize.py's log of every
triton.compile call): per kernel function, the distinct compiles and the seconds their first
calls took. Usage: python kdump_summary.py callN-kdump.jsonl.gz"""

import collections
import gzip
import json
import sys

records = [json.loads(line) for line in gzip.open(sys.argv[1], "rt")]
first: dict[str, dict] = {}
for r in records:
    key = json.dumps([r["fn"], r["sig"], r["const"], r["attrs"], r["opts"]], sort_keys=True)
    first.setdefault(key, r)
print(f"{len(records)} triton.compile calls, {len(first)} distinct, "
      f"{sum(r['t'] for r in records):.0f} s in all")
per_fn = collections.defaultdict(lambda: [0, 0.0])
for r in first.values():
    aligned = any(r["attrs"].values())
    name = r["fn"] if r["fn"] != "gemm_kernel" else f"gemm_kernel ({'aligned' if aligned else 'unaligned'})"
    per_fn[name][0] += 1
    per_fn[name][1] += r["t"]
for name, (n, t) in sorted(per_fn.items(), key=lambda x: -x[1][1]):
    print(f"  {name}: {n} distinct, first calls {t:.0f} s ({t / n:.2f} s each)")
