"""gemmconf's own hooks: a new report is a plugin implementing these, not an edit of the core.

Registered by the plugin package (`gemmconf.plugin`) through ``pytest_addhooks``. Implement them
in a conftest.py or a plugin, named ``pytest_gemmconf_*`` like the specs (pytest only collects
hooks named ``pytest_*``).

The last five are how gemmconf's own features ask each other what only one of them knows
(`gemmconf.plugin.facts` holds the facts they publish); a plugin may answer or add to them too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.hookspec
def pytest_gemmconf_record(record: dict[str, Any], config: pytest.Config) -> None:
    """Called in the controlling process once per finished item, with its final results record
    (the dict written to results.json; `gemmconf.record.Record.from_json(record)` reads it
    typed). Do not modify it."""


@pytest.hookspec
def pytest_gemmconf_run_finished(
    results_path: Path, records: list[dict[str, Any]], config: pytest.Config
) -> str | None:
    """Called once when the run's results file is written (complete or not). Return a line for
    the terminal summary (e.g. where a report went), or None."""


@pytest.hookspec
def pytest_gemmconf_results_fields(
    records: list[dict[str, Any]], config: pytest.Config
) -> dict[str, Any] | None:
    """Called once, just before the run's results file is written: return top-level fields to
    add to it (the benchmark's "benchmark" block), or None. Do not modify the records."""


@pytest.hookspec
def pytest_gemmconf_summary_lines(
    records: list[dict[str, Any]], config: pytest.Config
) -> list[str] | None:
    """Called once in the terminal summary, with the run's records: lines to print below the
    outcome table, above the line that says where the results went (the benchmark table)."""


@pytest.hookspec(firstresult=True)
def pytest_gemmconf_autotuning_backends(config: pytest.Config) -> list[str] | None:
    """The --backend names whose backend declares `autotunes = True`, asked before the run is
    configured (xdist's -n auto); a name that does not resolve is left out."""


@pytest.hookspec(firstresult=True)
def pytest_gemmconf_memory_budget(config: pytest.Config) -> int | None:
    """The GPU memory (bytes) the run may use per GPU, where --gpu-memory-budget gives one;
    asked before the run is configured (xdist's -n auto)."""


@pytest.hookspec(firstresult=True)
def pytest_gemmconf_earlier_results(config: pytest.Config) -> dict[str, Any] | None:
    """The earlier run's results document that --durations-from names (None: not given), read
    once; asked before the run is configured (xdist's -n auto sizes workers by its measured
    peaks). A file that cannot be read is a usage error."""
