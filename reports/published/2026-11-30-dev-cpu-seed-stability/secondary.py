"""Finer than outcome and kind: per (id, backend), whether the values failed (details hold
'Tensor-likes are not close') and whether any shape set was borderline, across results files."""

import json
import sys

files = sys.argv[1:]
runs = [{(r["id"], r["backend"]): r for r in json.load(open(f))["records"]} for f in files]
common = set.intersection(*(set(r) for r in runs))


def values_failed(r):
    return "Tensor-likes are not close" in str(r.get("details") or "")


vd = sorted(k for k in common if len({values_failed(r[k]) for r in runs}) > 1)
bd = sorted(
    k
    for k in common
    if len({bool((r[k].get("metrics") or {}).get("borderline")) for r in runs}) > 1
)
print(
    f"{len(common):,} compared; values failing in some runs only: {len(vd)}; borderline in some only: {len(bd)}"
)
for k in vd:
    print(
        "  values",
        k[0],
        [
            (
                r[k]["outcome"],
                r[k].get("kind"),
                values_failed(r[k]),
                (r[k].get("metrics") or {}).get("rounds"),
            )
            for r in runs
        ],
    )
