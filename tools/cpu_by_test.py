"""Where the project's own tests spend CPU, by test and by process: a pytest plugin that takes
each test's CPU (user + system) in the test process and in the child processes it waited for
(`getrusage` SELF and CHILDREN around the test's whole protocol), and a summary by file.

Run the tests stage with it, then summarize (BENCHMARKS.md, History, "7767e99 and 15c509f"):

    rm -rf /tmp/test-cpu && PYTHONPATH=tools .venv/bin/python -m pytest tests \\
        plugins/gemmconf-cutlass/tests -n 3 --dist loadgroup -q -p cpu_by_test
    python tools/cpu_by_test.py /tmp/test-cpu

Every pytest process (xdist's workers too) appends a JSON line per test to
`$GEMMCONF_TEST_CPU_DIR/<pid>.jsonl` (default /tmp/test-cpu). A child's CPU counts once it has
been waited for: a long-lived process (an isolation worker, a fork server) counts in the test
during which it ends, a process another one waits for counts there too, and one nobody waits
for (a forked worker its server reaps) counts in the server's.
"""

from __future__ import annotations

import collections
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

OUT_ENV = "GEMMCONF_TEST_CPU_DIR"
DEFAULT_OUT = "/tmp/test-cpu"


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Iterator[None]:
    own, children = _cpu()
    start = time.monotonic()
    yield
    own_after, children_after = _cpu()
    folder = Path(os.environ.get(OUT_ENV, DEFAULT_OUT))
    folder.mkdir(parents=True, exist_ok=True)
    line = {
        "id": item.nodeid,
        "self": round(own_after - own, 3),
        "children": round(children_after - children, 3),
        "wall": round(time.monotonic() - start, 3),
    }
    with (folder / f"{os.getpid()}.jsonl").open("a") as out:
        out.write(json.dumps(line) + "\n")


def summary(folder: Path, most: int = 25) -> list[str]:
    """The totals, then the files by CPU (own + children), most first."""
    rows = [json.loads(line) for f in sorted(folder.glob("*.jsonl")) for line in f.open()]
    files: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for row in rows:
        total = files[row["id"].split("::")[0]]
        total[0] += row["self"]
        total[1] += row["children"]
        total[2] += row["wall"]
        total[3] += 1
    own = sum(r["self"] for r in rows)
    children = sum(r["children"] for r in rows)
    lines = [
        f"{len(rows)} tests: {own + children:.1f} s of CPU, {own:.1f} s in the test "
        f"processes, {children:.1f} s in children they waited for"
    ]
    lines.append("    CPU s   own s  child s   wall s  tests  file")
    ranked = sorted(files.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
    for name, (mine, theirs, wall, count) in ranked[:most]:
        lines.append(
            f"  {mine + theirs:7.1f} {mine:7.1f} {theirs:8.1f} {wall:8.1f} {count:6d}  {name}"
        )
    return lines


if __name__ == "__main__":
    print("\n".join(summary(Path(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT))))
