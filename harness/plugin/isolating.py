"""Where items run: --no-isolate and --item-timeout (the runners are gemmconf.isolation)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from gemmconf import isolation
from gemmconf.plugin import options
from gemmconf.plugin.stash import STATE


def pytest_addoption(parser: pytest.Parser) -> None:
    group = options.group(parser)
    group.addoption(
        "--no-isolate",
        action="store_true",
        default=False,
        help="run items in the pytest process (for a debugger; implied by --pdb and "
        "--trace): no per-item timeout, and a backend that crashes ends the run. By "
        "default each item runs in a worker process that is replaced when a backend "
        "crashes, hangs or faults the GPU, so that costs only the item",
    )
    group.addoption(
        "--item-timeout",
        default="auto",
        metavar="SECONDS",
        help="fail an item that takes longer (its worker is killed and replaced); "
        "0: no timeout; default 'auto': scaled to the item (shape sets, size) with "
        "room for a first compile, plus the backend's compile_timeout_s per compile; "
        "ignored with --no-isolate",
    )


def parse_item_timeout(text: str) -> isolation.TimeoutPolicy:
    try:
        return isolation.parse_timeout(text)
    except ValueError as exc:
        raise pytest.UsageError(f"--item-timeout: {exc}") from None


def pytest_collection_finish(session: pytest.Session) -> None:
    from gemmconf.plugin.items import ScenarioItem  # items imports compile_allowance

    state = session.config.stash[STATE]
    if (
        state.isolate
        and not session.config.option.collectonly
        and any(isinstance(item, ScenarioItem) for item in session.items)
    ):
        state.runner().prestart()  # the worker imports torch while pytest gets going


def compile_allowance(backend: Any) -> float:
    """The backend's optional `compile_timeout_s` (harness/backends/base.py); 0 unless it is a
    positive finite number."""
    try:
        value = float(getattr(backend, "compile_timeout_s", 0.0) or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) and value > 0 else 0.0
