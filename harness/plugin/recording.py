"""Results: one record per finished item into --results (xdist included), the terminal summary,
and the run-finished hook that reports (the conformance page) implement."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from gemmconf.plugin import options
from gemmconf.plugin.benchmark import bench_mode, benchmark_summary
from gemmconf.plugin.stash import STATE
from gemmconf.plugin.state import suite_version

if TYPE_CHECKING:
    from gemmconf.plugin.state import RunState
from gemmconf.report.results import FAILING, ResultsWriter


def pytest_addoption(parser: pytest.Parser) -> None:
    group = options.group(parser)
    group.addoption(
        "--results",
        default="reports/results.json",
        metavar="PATH",
        help="where to write the results records (default: reports/results.json)",
    )


@pytest.hookimpl(trylast=True)  # after state's pytest_configure made the RunState
def pytest_configure(config: pytest.Config) -> None:
    state = config.stash[STATE]
    if not hasattr(config, "workerinput") and not config.option.collectonly:
        state.writer = ResultsWriter(
            Path(options.get(config, "results")),
            run={
                "command": shlex.join(["pytest", *config.invocation_params.args]),
                "seed": state.seed,
                "backends": state.backend_specs,
                "target_arch": state.target_arch,
                "environment": state.capability.as_record(),
                "suite_version": suite_version(state.suites_dir),
                "backend_specs": state.specs,
                "shard": None if state.shard is None else str(state.shard),
                "isolated": state.isolate,
                "item_timeout": state.timeouts.describe(),
            },
        )
        config.pluginmanager.register(Recorder(state, state.writer), "gemmconf-recorder")


class Recorder:
    """Controller-side plugin object: one results record per finished item (xdist included)."""

    def __init__(self, state: RunState, writer: ResultsWriter):
        self.state = state
        self.writer = writer
        self.environment = state.capability.as_record()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = next((v for k, v in report.user_properties if k == "gemmconf"), None)
        outcome = _outcome(report) if record is not None else None
        if outcome is None:
            return
        record = dict(record)
        record["outcome"] = outcome
        record.setdefault("duration_s", round(report.duration, 4))
        if outcome in ("skipped", "xfailed") and "reason" not in record:
            record["reason"] = _skip_reason(report)
        elif outcome in FAILING and "reason" not in record:
            record["reason"] = _first_line(report)
        record["environment"] = self.environment
        self.writer.add(record)
        self.state.config.hook.pytest_gemmconf_record(record=record, config=self.state.config)


def _outcome(report: pytest.TestReport) -> str | None:
    """The final outcome once per item: from setup when it did not pass, else from call,
    and an error in teardown overrides."""
    xfail = hasattr(report, "wasxfail")
    if report.when == "setup":
        if report.skipped:
            return "xfailed" if xfail else "skipped"
        return "error" if report.failed else None
    if report.when == "call":
        if report.skipped:
            return "xfailed" if xfail else "skipped"
        if report.failed:
            text = str(report.longrepr)
            if "[XPASS(strict)]" in text:
                return "xpassed"
            record = next((v for k, v in report.user_properties if k == "gemmconf"), {})
            return "error" if record.get("suite_error") else "failed"
        return "xpassed" if xfail else "passed"
    if report.when == "teardown" and report.failed:
        return "error"
    return None


def _skip_reason(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return report.wasxfail
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _first_line(report: pytest.TestReport) -> str:
    text = str(report.longrepr or "").strip()
    return text.splitlines()[0][:500] if text else report.outcome


@pytest.hookimpl(tryfirst=True)  # before xdist tears its nodes down: that may raise on SIGTERM
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(STATE, None)
    if state is None or state.writer is None:
        return
    if exitstatus == pytest.ExitCode.USAGE_ERROR and not state.writer.records:
        state.writer.abandon()  # bad input: leave no results file at all
        return
    complete = exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or (
        exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and state.shard is not None
    )
    state.results_path = state.writer.finish(complete=complete, exit_status=int(exitstatus))
    state.report_lines = [
        line
        for line in session.config.hook.pytest_gemmconf_run_finished(
            results_path=state.results_path, records=state.writer.records, config=session.config
        )
        if line
    ]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or state.writer is None or not state.writer.records:
        return
    from gemmconf.report.summary import render_terminal_summary

    for line in render_terminal_summary(state.writer.records, state.capability):
        terminalreporter.write_line(line)
    for line in leak_warnings(state.writer.records) + eager_warnings(state.writer.records):
        terminalreporter.write_line(line, yellow=True)
    if state.benchmark:
        for line in benchmark_summary(state.writer.records, bench_mode(config)):
            terminalreporter.write_line(line)
    path = state.results_path
    if path is not None:
        terminalreporter.write_line(f"gemmconf: results in {path}")
    for line in state.report_lines:
        terminalreporter.write_line(line)


def leak_warnings(records: list[dict[str, Any]]) -> list[str]:
    """One line per backend whose items left GPU memory allocated (metrics.leaked_bytes)."""
    leaks: dict[str, list[int]] = {}
    for record in records:
        leaked = (record.get("metrics") or {}).get("leaked_bytes")
        if leaked:
            leaks.setdefault(record["backend"], []).append(leaked)
    return [
        f"  warning: backend {backend} left GPU memory allocated after {len(sizes)} item(s) "
        f"(up to {max(sizes) / 2**20:.1f} MiB, {sum(sizes) / 2**20:.1f} MiB in all); see "
        "metrics.leaked_bytes in the results"
        for backend, sizes in sorted(leaks.items())
    ]


def eager_warnings(records: list[dict[str, Any]]) -> list[str]:
    """One line naming the items where the fp64 reference proved eager wrong (metrics.eager_wrong):
    findings about PyTorch itself, whatever the backend under test did."""
    ids = sorted(
        {record["id"] for record in records if (record.get("metrics") or {}).get("eager_wrong")}
    )
    if not ids:
        return []
    shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    return [
        f"  warning: eager returned NaN/Inf that fp64 refutes on {len(ids)} item(s) ({shown});"
        " those elements were judged against fp64; see metrics.eager_wrong in the results"
    ]
