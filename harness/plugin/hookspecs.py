"""gemmconf's own hooks: a new report is a plugin implementing these, not an edit of the core.

Registered by `state` through ``pytest_addhooks``. Implement them in a conftest.py or a plugin,
named ``pytest_gemmconf_*`` like the specs (pytest only collects hooks named ``pytest_*``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.hookspec
def pytest_gemmconf_record(record: dict[str, Any], config: pytest.Config) -> None:
    """Called in the controlling process once per finished item, with its final results record
    (the dict written to results.json). Do not modify it."""


@pytest.hookspec
def pytest_gemmconf_run_finished(
    results_path: Path, records: list[dict[str, Any]], config: pytest.Config
) -> str | None:
    """Called once when the run's results file is written (complete or not). Return a line for
    the terminal summary (e.g. where a report went), or None."""
