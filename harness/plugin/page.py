"""The conformance page (--conformance-html): a report written when the run finishes, through
the ``pytest_gemmconf_run_finished`` hook (gemmconf.report.page renders it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gemmconf.plugin import options

OPTIONS = (
    options.Option(
        "--conformance-html",
        metavar="PATH",
        help="the self-contained conformance page written at the end of the run "
        "(default: conformance.html beside --results; 'none' skips it)",
    ),
)
pytest_addoption = options.registrar(OPTIONS)


@pytest.hookimpl
def pytest_gemmconf_run_finished(
    results_path: Path, records: list[dict[str, Any]], config: pytest.Config
) -> str | None:
    from gemmconf.report.page import page_for_run

    return page_for_run(
        results_path,
        options.get(config, "conformance_html"),
        count_inherited=bool(options.get(config, "count_inherited")),
    )
