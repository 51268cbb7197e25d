"""Harness speed: --slow-first (the slowest items of a previous run start first, so that a
parallel run does not end waiting on one long item) and the summary line that counts kernel
compiles against distinct kernel signatures (backends that report them: the reference backend).

The reliability work adds `--durations-from` for balancing shards by time; both read the same
`duration_s` of a results file (`report.perf.durations`)."""

from __future__ import annotations

from typing import Any

import pytest

from gemmconf.plugin.stash import STATE
from gemmconf.report import perf


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gemmconf", "gemmconf conformance suite")
    group.addoption(
        "--slow-first",
        default=None,
        metavar="RESULTS.json",
        help="order the items by how long each took in that earlier results file, slowest "
        "first (items it lacks count as its median item); with xdist, long items then start "
        "first instead of ending the run",
    )


@pytest.hookimpl(trylast=True)  # after --shard and -k/-m have chosen the items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = config.getoption("slow_first")
    if not path:
        return
    from gemmconf.report.merge import load
    from gemmconf.report.results import ResultsError

    try:
        seconds = perf.durations(load(path))
    except ResultsError as exc:
        raise pytest.UsageError(f"--slow-first: {exc}") from None
    keys = [_key(item) for item in items]
    items[:] = [items[i] for i in perf.slow_first(keys, seconds)]


def _key(item: pytest.Item) -> tuple[str, str]:
    from gemmconf.plugin.items import ScenarioItem

    if isinstance(item, ScenarioItem):
        return (item.instance.id, item.label)
    return (item.nodeid, "")


@pytest.hookimpl(trylast=True)  # below the outcome table
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or state.writer is None:
        return
    for line in perf.kernel_summary(state.writer.records):
        terminalreporter.write_line(line)
