"""Where the one-GPU run's item time went against the two-GPU run's (issue 43, item 2): the
records of 2026-11-30-nvidia-h200-x2-compile-key call 3 (9194bf6, the whole reference suite cold
on one machine: both GPUs, then GPU 0 alone, 32 workers each), by the draws each judgment took,
with their phases, and the longest items of the one-GPU run beside their two-GPU times."""

import collections
import gzip
import json
import sys
from pathlib import Path

FOLDER = Path(sys.argv[1] if len(sys.argv) > 1 else ".")


def records(name: str) -> dict[str, dict]:
    with gzip.open(FOLDER / name) as handle:
        document = json.load(handle)
    return {r["id"]: r for r in document["records"] if r.get("duration_s")}


def phases(record: dict) -> dict[str, float]:
    return {k: round(v, 1) for k, v in (record.get("phase_s") or {}).items() if v >= 0.5}


runs = {
    "one GPU": records("call3-one-gpu-suite.json.gz"),
    "two GPUs": records("call3-two-gpu-suite.json.gz"),
}
for label, run in runs.items():
    total = sum(r["duration_s"] for r in run.values())
    print(f"{label}: {len(run)} items, {total:.0f} s of item time")
    groups: dict = collections.defaultdict(lambda: [0, 0.0, collections.Counter()])
    for r in run.values():
        group = groups[(r.get("metrics") or {}).get("draws")]
        group[0] += 1
        group[1] += r["duration_s"]
        group[2].update(r.get("phase_s") or {})
    for draws, (count, seconds, by_phase) in sorted(groups.items(), key=lambda g: -g[1][1])[:5]:
        split = ", ".join(f"{p} {v:.0f}" for p, v in by_phase.most_common())
        print(f"  {count:5d} items of {draws} draws: {seconds:6.0f} s ({split})")
one, two = runs["one GPU"], runs["two GPUs"]
print("longest items of the one-GPU run (s, phases), and the same item on two GPUs:")
for r in sorted(one.values(), key=lambda r: -r["duration_s"])[:14]:
    other = two[r["id"]]
    print(
        f"  {r['id'][:46]:<46} {r['duration_s']:5.1f} {phases(r)} | "
        f"{other['duration_s']:5.1f} {phases(other)}"
    )
