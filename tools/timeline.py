"""Where a parallel run's time goes: a pytest plugin that writes one line per item and per
process milestone, and a summary of those lines.

    pytest suites ... -n 16 -p tools.timeline            # writes $GEMMCONF_TIMELINE/*.jsonl
    python tools/timeline.py DIR                         # prints the summary

Each xdist worker (and the controller) appends JSON lines to its own file: when the process
started, when its collection finished, and for every item when its run protocol began and
ended (wall clock), with the item's own `duration_s` where the gemmconf record has one. The
summary says, per worker, how long it lived, how much of that it spent inside items, before
its first item, and idle between items; over all workers, the parallel efficiency
(sum of item time / (workers x wall)) and the gap between items' protocol time and the
runner's own duration (the isolation round trip). A profiling aid: nothing here is asserted.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

STARTED = time.time()  # this module is imported as the process starts its plugins


def _out() -> Path | None:
    folder = os.environ.get("GEMMCONF_TIMELINE")
    return Path(folder) if folder else None


def _who() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "controller")


def _write(entry: dict) -> None:
    folder = _out()
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    entry = {"who": _who(), "pid": os.getpid(), **entry}
    with open(folder / f"{_who()}.jsonl", "a") as stream:
        stream.write(json.dumps(entry) + "\n")


def pytest_configure(config) -> None:
    _write({"event": "process", "at": STARTED})


def pytest_collection_finish(session) -> None:
    _write({"event": "collected", "at": time.time(), "items": len(session.items)})


def pytest_runtest_protocol(item, nextitem):
    begin = time.time()
    _pending[item.nodeid] = begin
    return None  # pytest runs the item as usual


_pending: dict[str, float] = {}


def pytest_runtest_logfinish(nodeid, location) -> None:
    begin = _pending.pop(nodeid, None)
    if begin is None:
        return
    _write({"event": "item", "nodeid": nodeid, "begin": begin, "end": time.time()})


def pytest_gemmconf_record(record, config) -> None:
    _write(
        {
            "event": "record",
            "nodeid": record.get("nodeid"),
            "duration_s": record.get("duration_s"),
            "at": time.time(),
        }
    )


def summarize(folder: Path) -> None:
    events: dict[str, list[dict]] = defaultdict(list)
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            events[entry["who"]].append(entry)
    durations = {
        e["nodeid"]: e["duration_s"]
        for entries in events.values()
        for e in entries
        if e["event"] == "record" and e.get("duration_s") is not None
    }
    first = min(e["at"] for es in events.values() for e in es if e["event"] == "process")
    last = max(e.get("end", e.get("at", 0.0)) for entries in events.values() for e in entries)
    wall = last - first
    print(f"wall {wall:.1f} s from the first process start to the last item's end")
    busy_all = runner_all = 0.0
    workers = [w for w in events if w != "controller"] or list(events)
    for who in sorted(workers, key=lambda w: (len(w), w)):
        entries = events[who]
        born = min(e["at"] for e in entries if e["event"] == "process")
        collected = [e["at"] for e in entries if e["event"] == "collected"]
        items = sorted((e for e in entries if e["event"] == "item"), key=lambda e: e["begin"])
        if not items:
            print(f"{who}: no items")
            continue
        busy = sum(e["end"] - e["begin"] for e in items)
        runner = sum(durations.get(e["nodeid"], 0.0) for e in items)
        gaps = sum(max(0.0, b["begin"] - a["end"]) for a, b in itertools.pairwise(items))
        busy_all += busy
        runner_all += runner
        print(
            f"{who}: {len(items)} items; start->collected "
            f"{(collected[0] - born) if collected else float('nan'):.1f} s; start->first item "
            f"{items[0]['begin'] - born:.1f} s; in items {busy:.1f} s (runner's own "
            f"{runner:.1f} s); idle between items {gaps:.1f} s; last item ended "
            f"{items[-1]['end'] - first:.1f} s into the run"
        )
    n = len(workers)
    print(
        f"{n} workers: items' protocol time {busy_all:.1f} s, runner's durations {runner_all:.1f}"
        f" s; efficiency (protocol time / (workers x wall)) {busy_all / (n * wall):.0%}"
    )


if __name__ == "__main__":
    summarize(Path(sys.argv[1]))
