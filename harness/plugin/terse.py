"""A run with hundreds of failures reads in a screen or two (README, "Reading a run").

By default the terminal keeps gemmconf's summary (the table, the failures grouped by cause) and
pytest's one `FAILED <node id>` line per failure; each failure's whole diagnosis goes to the
results file and the conformance page (and to JUnit XML, which keeps every report's text), not
to pytest's FAILURES section, which printed tens of lines per item (30,814 lines for one trial's
1,105 failures). pytest's own flags bring the sections back: any `--tb` style other than the
default, `-v`, or `-rA` / `-ra`. This holds on CI machines too (pytest prints whole messages in
its short summary where `CI` is set; the quiet summary keeps them to one line). Runs with
failures that are not gemmconf items (a project's own tests beside the suite, a collection
error) keep pytest's sections for everything.
"""

from __future__ import annotations

from typing import Any

import pytest

# -r characters that ask for more than the default short summary (all outcomes, passes)
_MORE = frozenset("AaPp")


def details_asked(config: pytest.Config) -> bool:
    """Whether the run asked pytest for its per-failure sections: `--tb` other than its default,
    `-v`, or `-r` with A, a, P or p."""
    option = config.option
    return (
        getattr(option, "tbstyle", "auto") != "auto"
        or getattr(option, "verbose", 0) > 0
        or bool(_MORE & set(getattr(option, "reportchars", "") or ""))
    )


def _gemmconf_report(report: Any) -> bool:
    return any(key == "gemmconf" for key, _ in getattr(report, "user_properties", ()))


def failing_reports(terminalreporter: Any) -> list[Any]:
    """The reports pytest's FAILURES and ERRORS sections would print."""
    return [*terminalreporter.getreports("failed"), *terminalreporter.getreports("error")]


@pytest.hookimpl(wrapper=True, tryfirst=True)  # around the terminal reporter's own summary
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> Any:
    failing = failing_reports(terminalreporter)
    quiet = bool(failing) and not details_asked(config) and all(map(_gemmconf_report, failing))
    saved = config.option.tbstyle, getattr(config.option, "force_short_summary", False)
    if quiet:
        config.option.tbstyle = "no"  # pytest's FAILURES and ERRORS sections: nothing to print
        # one line per FAILED entry on CI too, where pytest otherwise prints whole messages
        config.option.force_short_summary = True
    try:
        return (yield)
    finally:
        config.option.tbstyle, config.option.force_short_summary = saved
        if quiet:
            terminalreporter.write_line(
                f"gemmconf: {len(failing)} failure(s), one line each above; their details are "
                "on the conformance page and in the results file (`gemmconf explain ID "
                "--backend NAME --run` for one); --tb=short, -v or -rA print them here"
            )
