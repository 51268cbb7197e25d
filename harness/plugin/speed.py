"""The summary line that counts kernel compiles against distinct kernel signatures, for
backends that report them (`kernel_stats()` on their compiled function: the reference backend).
The order that starts slow items first is --durations-from's (`sharding`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gemmconf.report import perf

RECORDS = pytest.StashKey[list[dict[str, Any]]]()  # the run's, once its results are written


def pytest_gemmconf_run_finished(
    results_path: Path, records: list[dict[str, Any]], config: pytest.Config
) -> None:
    config.stash[RECORDS] = records


@pytest.hookimpl(trylast=True)  # below the outcome table
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for line in perf.kernel_summary(config.stash.get(RECORDS, [])):
        terminalreporter.write_line(line)
