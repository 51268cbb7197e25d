"""Reads the probe's JSON lines (sitecustomize.py): per gemmconf signature id, the Triton hashes
met, and for ids with several, which parts of Triton's key differ."""

import collections
import json
import pathlib
import sys

events = []
for path in pathlib.Path(sys.argv[1]).glob("*.jsonl"):
    events += [json.loads(line) for line in path.read_text().splitlines()]
by_ours = collections.defaultdict(list)
for e in events:
    by_ours[e["ours"]].append(e)
hashes = {e["metadata"].get("hash") for e in events}
print(
    f"{len(events)} events from {len({e['pid'] for e in events})} processes; "
    f"{len(by_ours)} signature ids (None: launches outside the launcher); {len(hashes)} hashes"
)
multi = {s: es for s, es in by_ours.items() if len({e["metadata"].get("hash") for e in es}) > 1}
print(f"signature ids with more than one hash: {len(multi)}")
parts = collections.Counter()
shown = 0
for sig, es in multi.items():
    firsts = {}
    for e in es:
        firsts.setdefault(e["metadata"].get("hash"), e)
    a, b = list(firsts.values())[:2]
    differ = [k for k in ("name", "fn_key", "attrs", "signature", "constants") if a[k] != b[k]]
    meta = sorted(
        k
        for k in set(a["metadata"]) | set(b["metadata"])
        if a["metadata"].get(k) != b["metadata"].get(k) and k != "hash"
    )
    parts[tuple(differ + ["metadata." + k for k in meta])] += 1
    if shown < 6:
        shown += 1
        head = f"{sig} ({len(firsts)} hashes, {a['name']})"
        print(f"\n{head}: differ in {differ} and metadata {meta}")
        for k in differ:
            print(f"  {k}:\n    {a[k][:600]}\n    {b[k][:600]}")
        for k in meta[:8]:
            left, right = str(a["metadata"].get(k))[:300], str(b["metadata"].get(k))[:300]
            print(f"  metadata.{k}: {left} | {right}")
print("\nwhat differs, over all such ids:")
for key, n in parts.most_common():
    print(f"  {n:4d}  {key}")
