"""Results: one record per finished item into --results (xdist included), the terminal summary,
and the run-finished hook that reports (the conformance page) implement."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from gemmconf.outcome import ItemOutcome, render
from gemmconf.plugin import options
from gemmconf.plugin.benchmark import bench_mode, benchmark_summary
from gemmconf.plugin.stash import STATE
from gemmconf.plugin.state import suite_version

if TYPE_CHECKING:
    from gemmconf.plugin.state import RunState
from gemmconf.report.results import ResultsWriter


def pytest_addoption(parser: pytest.Parser) -> None:
    group = options.group(parser)
    group.addoption(
        "--results",
        default="reports/results.json",
        metavar="PATH",
        help="where to write the results records (default: reports/results.json); runs that "
        "go at the same time need one each",
    )


@pytest.hookimpl(trylast=True)  # after state's pytest_configure made the RunState
def pytest_configure(config: pytest.Config) -> None:
    state = config.stash[STATE]
    if _run_by_gemmconf(config):
        # pytest prints node ids and file names relative to the current folder: from a
        # project folder, `FAILED ../../venv/lib/.../gemmconf/suites/dense/first.yaml::mm[...]`.
        # As the suite names them (`dense/first.yaml::mm[...]`) they read better and paste back
        # into `gemmconf run`, which finds suite files in the suite.
        config.cwd_relative_nodeid = lambda nodeid: nodeid  # type: ignore[method-assign]
        # and the progress lines' file names likewise (`dense/first.yaml ....`)
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.startpath = config.rootpath
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


def _run_by_gemmconf(config: pytest.Config) -> bool:
    """`gemmconf run`: pytest configured by gemmconf's run.ini, rooted at the suite folder."""
    from gemmconf.cli import RUN_INI

    return config.inipath is not None and config.inipath.resolve() == RUN_INI.resolve()


class JsonRecord(dict):
    """A record as a `gemmconf` user property. pytest's JUnit XML writes a property as
    `str(value)`, which for a dict is Python's repr (single quotes, True, None); this one's is
    the JSON a results.json record has, which a CI tool can parse."""

    def __str__(self) -> str:
        return json.dumps(self, sort_keys=True)


class Recorder:
    """Controller-side plugin object: one results record per finished item (xdist included).
    The record was built once, where the item ran (`build_record`); this writes it, and puts it
    on the item's teardown report, whose properties pytest's JUnit XML writes."""

    def __init__(self, state: RunState, writer: ResultsWriter):
        self.state = state
        self.writer = writer
        self.finished: dict[str, dict[str, Any]] = {}  # node id -> its record, until teardown

    @pytest.hookimpl(tryfirst=True)  # before junitxml reads the teardown report's properties
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = next((v for k, v in report.user_properties if k == "gemmconf"), None)
        if record is None:
            return
        if "outcome" in record:
            record = dict(record)
            self.finished[report.nodeid] = record
            self.writer.add(record)
            self.state.config.hook.pytest_gemmconf_record(record=record, config=self.state.config)
        elif report.when == "teardown":  # the item's identity only: the verdict replaces it
            record = self.finished.pop(report.nodeid, record)
        report.user_properties = [
            (k, JsonRecord(record) if k == "gemmconf" else v) for k, v in report.user_properties
        ]


@dataclass(frozen=True)
class Decision:
    """An item's outcome, decided from what its run found (items.ScenarioItem.decide)."""

    outcome: str  # passed | failed | xfailed | xpassed | skipped | error
    run: ItemOutcome | None = None  # what run_item found, when the item ran
    kind: str | None = None  # None: the run's own kind (a passed or skipped item has none)
    reason: str | None = None  # None: the run's rendered reason
    note: str | None = None  # a paragraph the record's details end with (eager fails it too)
    xpass: str | None = None  # an xpassed item's expectation: "strict" (fails) or "non-strict"
    eager_fails: bool = False  # a failed or xfailed item eager's expectations fail here too


@dataclass(frozen=True)
class Record:
    """One results.json record: the item's fields, built once (`build_record`), then a dict."""

    id: str
    suite: str
    backend: str
    scenario: str
    op: str
    dtype: str
    shape: str
    dims: dict[str, int]
    axes: dict[str, str]
    markers: list[str]
    source: str
    nodeid: str
    outcome: str
    duration_s: float
    environment: dict[str, Any]
    phase_s: dict[str, float] | None = None
    kind: str | None = None
    reason: str | None = None
    details: str | None = None
    metrics: dict[str, Any] | None = None
    code_excerpt: str | None = None
    skip_class: str | None = None
    suite_error: bool = False
    xpass: str | None = None  # on xpassed records: "strict" (a failure) or "non-strict" (not)
    # failed and xfailed records of an item eager is expected to fail too on this hardware
    # (suites/expectations/eager.yaml): a backend that leaves the op to aten inherits it
    eager_fails: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The JSON record: fields without a value are left out (as they always were)."""
        record = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: v for k, v in record.items() if v is not None and v is not False}


def build_record(
    static: dict[str, Any], decision: Decision, *, duration_s: float, environment: dict[str, Any]
) -> dict[str, Any]:
    """The item's record: its scenario fields, the decided outcome, and what the run found."""
    run = decision.run
    message = render(run) if run is not None and not run.passed else None
    reason = decision.reason or (message.reason if message is not None else None)
    # every failed or xfailed record has details, even where they are the one-line reason
    details = None if message is None else _capped(message.details, DETAILS_CHARS)
    if decision.note:
        details = f"{details}\n\n{decision.note}" if details else decision.note
    record = Record(
        **{k: static[k] for k in STATIC_FIELDS},
        skip_class=static.get("skip_class"),
        outcome=decision.outcome,
        duration_s=round(run.duration_s if run is not None and run.duration_s else duration_s, 4),
        environment=environment,
        phase_s=None if run is None else run.phase_s,
        kind=decision.kind or (run.kind if run is not None else None),
        reason=reason,
        details=details,
        metrics=dict(run.metrics) if run is not None and run.metrics else None,
        code_excerpt=None if run is None else run.code_excerpt,
        suite_error=run is not None and run.suite_error,
        xpass=decision.xpass,
        eager_fails=decision.eager_fails,
    )
    return record.as_dict()


STATIC_FIELDS = (
    "id",
    "suite",
    "backend",
    "scenario",
    "op",
    "dtype",
    "shape",
    "dims",
    "axes",
    "markers",
    "source",
    "nodeid",
)
DETAILS_CHARS = 8000  # a failed record's `details`: every failed check, tracebacks included


def _capped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... ({len(text) - limit} more characters in pytest's output)"


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
