"""Where an item's check phase spends its time: a pytest plugin that times each check of
`gemmconf.checks.CHECKS`, and inside them the pieces every check is made of (drawing inputs,
eager, the backend's call, the fp64 reference, the oracle's judgment).

    pytest suites ... --no-isolate -p tools.check_census   # items in the pytest process
    python -m tools.check_census census-*.json              # several workers' files, summed

Items must run in the pytest process (`--no-isolate`; xdist's workers are fine): an isolated
item's checks run in a child process this plugin does not reach. With CUDA, each timed piece
begins and ends with `torch.cuda.synchronize()`, so a piece is charged the GPU work it queued and
not the work queued before it (the synchronizations themselves cost a little and make the run a
bit slower than an unprofiled one). Pieces nest: a backend call inside a fresh draw inside the
`fresh_draw` check is counted in all three. Where `GEMMCONF_CHECK_CENSUS` names a file, each
process writes its figures there (an xdist worker's id is put before the suffix); the module's
command line sums such files. `GEMMCONF_CHECK_PROFILE` names a file for a cProfile of the check
phase (the checks' runs only), in pstats format, per process likewise. A profiling aid: nothing
here is asserted.
"""

from __future__ import annotations

import collections
import cProfile
import functools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# (row name) -> seconds of each timed run; rows of one item are summed before they are kept
_item: collections.defaultdict[str, float] = collections.defaultdict(float)
_rows: collections.defaultdict[str, list[float]] = collections.defaultdict(list)
_profile: cProfile.Profile | None = None


def _synchronize() -> None:
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _timed(row: str, fn: Callable[..., Any], *, profiled: bool = False) -> Callable[..., Any]:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        _synchronize()
        start = time.perf_counter()
        if profiled and _profile is not None:
            _profile.enable()
        try:
            return fn(*args, **kwargs)
        finally:
            _synchronize()
            if profiled and _profile is not None:
                _profile.disable()
            _item[row] += time.perf_counter() - start

    return timed


def _wrap(owner: Any, attribute: str, row: str) -> None:
    setattr(owner, attribute, _timed(row, getattr(owner, attribute)))


def pytest_configure(config: pytest.Config) -> None:
    global _profile
    from gemmconf import chunked, inputs, oracle, runner
    from gemmconf.item import ItemRun

    for check in runner.CHECKS:  # one object per check: its run is wrapped on the object
        check.run = _timed(f"check {check.name}", check.run, profiled=True)
    _wrap(runner, "_checked", "checks (all)")
    _wrap(ItemRun, "call", "piece: the backend's call (with its guards)")
    _wrap(ItemRun, "eager", "piece: eager")
    _wrap(ItemRun, "draw", "piece: one fresh draw (inputs, eager, call)")
    _wrap(inputs, "build_copies", "piece: drawing inputs")
    _wrap(chunked.Evaluator, "__call__", "piece: the fp64 reference")
    _wrap(oracle, "judge", "piece: the oracle's judgment")
    if os.environ.get("GEMMCONF_CHECK_PROFILE"):
        _profile = cProfile.Profile()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    _item.clear()
    yield
    for row, seconds in _item.items():
        _rows[row].append(seconds)


def _per_process(path: str) -> Path:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    file = Path(path)
    return file.with_name(f"{file.stem}-{worker}{file.suffix}") if worker else file


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not _rows:
        return
    out = os.environ.get("GEMMCONF_CHECK_CENSUS")
    if out:
        _per_process(out).write_text(json.dumps({"rows": _rows}))
    profile = os.environ.get("GEMMCONF_CHECK_PROFILE")
    if profile and _profile is not None:
        _profile.dump_stats(_per_process(profile))
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        print("\n" + table(_rows), file=sys.stderr)


def table(rows: dict[str, list[float]]) -> str:
    """Each row's total seconds, items, median and largest milliseconds, largest total first."""
    lines = [f"{'seconds':>9} {'items':>6} {'median ms':>9} {'max ms':>9}  row"]
    for row, runs in sorted(rows.items(), key=lambda kv: -sum(kv[1])):
        lines.append(
            f"{sum(runs):9.1f} {len(runs):6d} {statistics.median(runs) * 1e3:9.2f} "
            f"{max(runs) * 1e3:9.1f}  {row}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    rows: collections.defaultdict[str, list[float]] = collections.defaultdict(list)
    for name in argv:
        for row, runs in json.loads(Path(name).read_text())["rows"].items():
            rows[row] += runs
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
