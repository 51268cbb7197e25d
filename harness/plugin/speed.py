"""The summary line that counts kernel compiles against distinct kernel signatures, for
backends that report them (`kernel_stats()` on their compiled function: the reference backend).
The order that starts slow items first is --durations-from's (`sharding`)."""

from __future__ import annotations

from typing import Any

import pytest

from gemmconf.plugin.stash import STATE
from gemmconf.report import perf


@pytest.hookimpl(trylast=True)  # below the outcome table
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or state.writer is None:
        return
    for line in perf.kernel_summary(state.writer.records):
        terminalreporter.write_line(line)
