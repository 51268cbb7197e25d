"""A timeline folder's start-up, from `tools.timeline`'s lines: when the controller's plugins
loaded (0), when its workers' did, when each finished collecting and began its first item."""

import json
import statistics
import sys
from pathlib import Path

events = [json.loads(line) for f in Path(sys.argv[1]).glob("*.jsonl") for line in f.open()]
zero = min(e["at"] for e in events if e["who"] == "controller" and e["event"] == "process")
workers = sorted({e["who"] for e in events} - {"controller"})


def first(who, kind, key="at"):
    times = [e[key] for e in events if e["who"] == who and e["event"] == kind]
    return min(times) - zero if times else float("nan")


born = [first(w, "process") for w in workers]
collected = [first(w, "collected") for w in workers]
started = [t for t in (first(w, "item", "begin") for w in workers) if t == t]  # those with items
for name, values in (("born", born), ("collected", collected), ("first item", started)):
    print(
        f"{len(values)} workers {name}: {min(values):.1f}-{max(values):.1f} s "
        f"(median {statistics.median(values):.1f}) after the controller's plugins loaded"
    )
