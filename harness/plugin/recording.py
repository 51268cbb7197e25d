"""Results: one record per finished item into --results (xdist included), the terminal summary,
and the run-finished hook that reports (the conformance page) implement. The results file is
started only once the run gets going, and a run interrupted (Ctrl-C, SIGTERM) keeps what it
wrote."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gemmconf import provenance
from gemmconf.plugin import facts, options
from gemmconf.record import Record, typed
from gemmconf.report.results import ResultsWriter, writable, writer_of
from gemmconf.scenario import SUITE_SUFFIXES

DEFAULT_RESULTS = "reports/results.json"
OPTIONS = (
    options.Option(
        "--results",
        default=DEFAULT_RESULTS,
        metavar="PATH",
        help="where to write the results records (default: reports/results.json, where the "
        "previous run's file is kept as reports/results.previous.json); runs that go at the "
        "same time need one each",
    ),
    options.flag(
        "--count-inherited",
        help="count failures inherited from eager or torch.compile among the backend's own in "
        "the summary and on the conformance page (by default they are counted apart; pytest's "
        "outcome and the exit status count them as failed either way)",
    ),
)
pytest_addoption = options.registrar(OPTIONS)


class Results:
    """This feature's state: the run's results file, from start to end."""

    def __init__(self, writer: ResultsWriter | None):
        self.writer = writer  # None in xdist's workers and with --collect-only
        self.path: Path | None = None  # once the file is written
        # from the final file's write on (`path` is set after it): a SIGTERM lets the run finish
        self.finishing = False
        self.report_lines: list[str] = []  # from pytest_gemmconf_run_finished (the page, ...)
        self.kept = False  # the run wrote no results file: the previous one stays


RESULTS = pytest.StashKey[Results]()


@pytest.hookimpl(trylast=True)  # after the features that publish what the run's header holds
def pytest_configure(config: pytest.Config) -> None:
    collects_only = hasattr(config, "workerinput") or config.option.collectonly
    if not collects_only:
        check_results_path(config)
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
    results = Results(None if collects_only else _writer(config))
    config.stash[RESULTS] = results
    if results.writer is not None:
        config.pluginmanager.register(Recorder(config, results.writer), "gemmconf-recorder")
    _handle_sigterm(config)
    if config.pluginmanager.hasplugin("html"):
        from gemmconf.report.html import HtmlColumns

        config.pluginmanager.register(HtmlColumns(), "gemmconf-html")


def _writer(config: pytest.Config) -> ResultsWriter:
    selection = config.stash[facts.SELECTION]
    machine = config.stash[facts.MACHINE]
    execution = config.stash[facts.EXECUTION]
    shard = config.stash.get(facts.SHARD, None)
    path = options.get(config, "results")
    return ResultsWriter(
        Path(path),
        keep_previous=path == DEFAULT_RESULTS,
        run={
            "command": shlex.join(["pytest", *config.invocation_params.args]),
            "seed": selection.seed,
            "backends": selection.backend_specs,
            "target_arch": machine.target_arch,
            "environment": machine.capability.as_record(),
            "suite_version": suite_version(selection.suites_dir),
            # the same dict the selection fills as it resolves the backends, at collection
            "backend_specs": selection.specs,
            "backend_packages": selection.packages,  # filled as the file starts (name_packages)
            "gemmconf": provenance.gemmconf_source(),
            "shard": None if shard is None else str(shard),
            "isolated": execution.isolate,
            "item_timeout": execution.timeouts.describe(),
        },
    )


def check_results_path(config: pytest.Config) -> None:
    """--results: a usage error naming the path, before anything runs, when no file can be
    written there. Only `reports/` of the current folder (the default's) is made when missing."""
    given = options.get(config, "results")
    path = config.invocation_params.dir / given
    problem = writable(path, creatable=config.invocation_params.dir / "reports")
    if problem:
        raise pytest.UsageError(f"--results {given}: {problem}")
    other = writer_of(path)
    if other is not None:
        raise pytest.UsageError(
            f"--results {given}: another run is writing it now ({other}); give each run that "
            "goes at the same time its own --results"
        )


def suite_version(suites_dir: Path) -> str:
    """A short hash of every suite and expectation file: runs of different suites differ."""
    digest = hashlib.sha256()
    for path in sorted(p for p in suites_dir.rglob("*") if p.suffix in SUITE_SUFFIXES):
        digest.update(str(path.relative_to(suites_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _run_by_gemmconf(config: pytest.Config) -> bool:
    """`gemmconf run`: pytest configured by gemmconf's run.ini, rooted at the suite folder."""
    from gemmconf.cli import RUN_INI

    return config.inipath is not None and config.inipath.resolve() == RUN_INI.resolve()


# A SIGTERM this soon after the first is the same request, sent again. The window is timed where
# each reaches our handler, not where it was sent: at 2 s, a fresh clone's make test on a loaded
# 2-core box (2026-12-02) died of GNU timeout's pair as test_interrupt plays it, 0.3 s apart
# (status -15, an xdist run). A deliberate second SIGTERM still ends the run after the window;
# process managers escalate to SIGKILL after their own grace (docker 10 s, Kubernetes 30 s).
SIGTERM_REPEAT_S = 10.0


def _handle_sigterm(config: pytest.Config, clock: Callable[[], float] = time.monotonic) -> None:
    """SIGTERM ends the run like Ctrl-C: pytest unwinds, and the results written so far are
    kept, marked incomplete. A SIGTERM more than SIGTERM_REPEAT_S after the first gets the
    previous handler (by default: die); one sooner is the same request again (GNU `timeout`
    signals its child and then the child's whole process group, so the pytest process gets two
    at once: the second used to kill it before it wrote its results).

    Ours goes first even where a handler is already installed (a plugin or a site hook of the
    environment that exits at once would otherwise lose the run's final results file); only an
    ignored SIGTERM stays ignored. A first SIGTERM once the results file is being written lets
    the run finish it and its summary: nothing is left to keep, and the exit status stays the one
    the file records (during the summary it used to end in a KeyboardInterrupt traceback and
    status 130; during the write, on an H200 on 2026-11-30, with only the .partial file left).
    Once a run that got a SIGTERM has ended, further ones are ignored while the process exits.
    `clock` times the window (a test's own clock)."""
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN:
        return
    restored = signal.SIG_DFL if previous is None else previous
    first: list[float] = []

    def on_sigterm(signum: int, frame: Any) -> None:
        now = clock()
        if not first:
            first.append(now)
            results = config.stash.get(RESULTS, None)
            if results is not None and results.finishing:
                return  # the results are being written, or are: the run is all but over
            raise KeyboardInterrupt(f"{signal.Signals(signum).name}: the run was asked to stop")
        if now - first[0] <= SIGTERM_REPEAT_S:
            return  # the same request, delivered twice
        signal.signal(signal.SIGTERM, restored)
        if callable(restored):
            restored(signum, frame)
        else:
            os.kill(os.getpid(), signum)  # the default action, now restored: die

    def restore() -> None:
        # After a SIGTERM its repeat (GNU timeout's, to the group) must not kill the run as it
        # exits, whose status says it was interrupted (a loaded CI box lost that race twice): a
        # SIGTERM is ignored from here on, not left to our handler, which the interpreter's
        # finalization puts back to the default action before it tears the modules down.
        signal.signal(signal.SIGTERM, signal.SIG_IGN if first else restored)

    signal.signal(signal.SIGTERM, on_sigterm)
    config.add_cleanup(restore)


@pytest.hookimpl(tryfirst=True)  # before the terminal reporter renders the traceback
def pytest_keyboard_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    """An interrupt (Ctrl-C, or the KeyboardInterrupt our SIGTERM handler raises) can land on
    an instruction that has no line number (Python 3.11: a frame's `tb_lineno` is None inside
    some statements' cleanup); pytest's rendering of such an entry fails (`TracebackEntry.lineno`:
    None - 1), and the run ended with status 1 and that TypeError instead of 2 (a make test on
    the dev CPU, 2026-11-30, test_interrupt's SIGTERM case). Such entries are left out of the
    traceback pytest shows."""
    try:
        entries = list(excinfo.traceback)
        kept = [e for e in entries if getattr(e._rawentry, "tb_lineno", 0) is not None]
        if len(kept) != len(entries):
            excinfo.traceback = type(excinfo.traceback)(kept)
    except Exception:  # another pytest's internals: its own rendering, as it was
        pass


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

    def __init__(self, config: pytest.Config, writer: ResultsWriter):
        self.config = config
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
            self.config.hook.pytest_gemmconf_record(record=record, config=self.config)
        elif report.when == "teardown":  # the item's identity only: the verdict replaces it
            record = self.finished.pop(report.nodeid, record)
        report.user_properties = [
            (k, JsonRecord(record) if k == "gemmconf" else v) for k, v in report.user_properties
        ]


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """The results file is started (a previous run's file removed) only once the run gets going:
    collected cleanly, with items to run (or a shard, whose empty part is a result). A usage
    error, a collection error or an empty selection keeps the previous run's file."""
    writer = _writer_of(session.config)
    if writer is None:
        return
    broken = session.testsfailed and not session.config.option.continue_on_collection_errors
    if not broken and (session.items or facts.SHARD in session.config.stash):
        _start(session.config, writer)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """xdist's controller collects nothing itself: the results file starts when a worker has
    collected items to run (or a shard is run). A worker that collected none, or failed to
    collect, keeps the previous run's file, as an empty selection does without xdist."""
    writer = _writer_of(node.config)
    if writer is None or writer.started:
        return
    if ids or facts.SHARD in node.config.stash:
        _start(node.config, writer)


def _start(config: pytest.Config, writer: ResultsWriter) -> None:
    config.stash[facts.SELECTION].name_packages()  # the header's backend_packages
    writer.start()


def _writer_of(config: pytest.Config) -> ResultsWriter | None:
    results = config.stash.get(RESULTS, None)
    return None if results is None else results.writer


@pytest.hookimpl(tryfirst=True)  # before xdist tears its nodes down: that may raise on SIGTERM
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    results = config.stash.get(RESULTS, None)
    if results is None or results.writer is None:
        return
    writer = results.writer
    if not writer.started:  # the run never got going: the previous results file stays
        writer.abandon()
        results.writer = None
        results.kept = True
        return
    if exitstatus == pytest.ExitCode.USAGE_ERROR and not writer.records:
        writer.abandon()  # bad input: leave no results file at all
        return
    complete = exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or (
        exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and facts.SHARD in config.stash
    )
    results.finishing = True  # every item has its record: a SIGTERM now lets the file be written
    config.stash[facts.SELECTION].name_packages()  # backends first resolved at collection
    for fields in config.hook.pytest_gemmconf_results_fields(records=writer.records, config=config):
        writer.run.update(fields)
    results.path = writer.finish(complete=complete, exit_status=int(exitstatus))
    results.report_lines = [
        line
        for line in config.hook.pytest_gemmconf_run_finished(
            results_path=results.path, records=writer.records, config=config
        )
        if line
    ]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    results = config.stash.get(RESULTS, None)
    if results is None:
        return
    if results.kept:
        _kept_summary(terminalreporter, config)
    if results.writer is None or not results.writer.records:
        return
    records = results.writer.records  # as JSON: what the hooks are given
    from gemmconf.report.summary import render_terminal_summary

    selection = config.stash[facts.SELECTION]
    read = typed(records)
    for line in render_terminal_summary(
        read,
        config.stash[facts.MACHINE].capability,
        specs=selection.specs,
        seed=selection.seed,
        count_inherited=bool(options.get(config, "count_inherited")),
    ):
        terminalreporter.write_line(line)
    for line in leak_warnings(read) + eager_warnings(read):
        terminalreporter.write_line(line, yellow=True)
    for lines in config.hook.pytest_gemmconf_summary_lines(records=records, config=config):
        for line in lines:
            terminalreporter.write_line(line)
    if results.path is not None:
        terminalreporter.write_line(f"gemmconf: results in {results.path}")
    previous = results.writer.previous
    if previous is not None and results.path is not None:
        terminalreporter.write_line(
            f"gemmconf: the previous run's results kept as {previous} (`gemmconf report diff "
            f"{previous} {results.path}` compares the two)"
        )
    for line in results.report_lines:
        terminalreporter.write_line(line)


def _kept_summary(terminalreporter: Any, config: pytest.Config) -> None:
    terminalreporter.write_line(
        "gemmconf: no results written (no item ran); "
        f"{options.get(config, 'results')} is left as it was"
    )
    flag = "--gemmconf-suites" if "--suites" in options.taken(config) else "--suites"
    suites = config.stash[facts.SELECTION].suites_dir
    outside = suite_files_outside(config, suites)
    for arg in outside:
        terminalreporter.write_line(
            f"gemmconf: {arg} holds suite files, but gemmconf collects them only from its "
            f"suites folder ({suites}): run `{flag} {arg}` to make it the suite"
        )
    if not outside and not touches(config, suites):
        backend = options.get(config, "backend") or "reference"
        terminalreporter.write_line(
            "gemmconf: no suite file was collected: pytest collects from the paths it is "
            f"given (here {', '.join(config.args)}), and the suite is in {suites}"
        )
        terminalreporter.write_line(
            f"gemmconf: `gemmconf run --backend {backend} [pytest args]` runs the suite from "
            f"any folder (or name it: pytest {suites} --backend {backend})"
        )


def touches(config: pytest.Config, suites: Path) -> bool:
    """Whether a command-line path is the suites folder, in it, or holds it."""
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if path == suites or suites in path.parents or path in suites.parents:
            return True
    return False


def suite_files_outside(config: pytest.Config, suites: Path) -> list[str]:
    """The command-line paths that are, or hold, suite files (.yaml/.yml) outside the suites
    folder: what a user who named their own suite folder as a pytest path expected to run."""
    found = []
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if path == suites or suites in path.parents or path in suites.parents:
            continue
        if path.is_file():
            holds = path.suffix in SUITE_SUFFIXES
        else:
            holds = path.is_dir() and any(
                p.suffix in SUITE_SUFFIXES and "expectations" not in p.parts
                for p in path.rglob("*")
            )
        if holds:
            found.append(arg)
    return found


def leak_warnings(records: list[Record]) -> list[str]:
    """One line per backend whose items left GPU memory allocated (metrics.leaked_bytes)."""
    leaks: dict[str, list[int]] = {}
    for record in records:
        leaked = record.metric.leaked_bytes
        if leaked:
            leaks.setdefault(record.backend, []).append(leaked)
    return [
        f"  warning: backend {backend} left GPU memory allocated after {len(sizes)} item(s) "
        f"(up to {max(sizes) / 2**20:.1f} MiB, {sum(sizes) / 2**20:.1f} MiB in all); see "
        "metrics.leaked_bytes in the results"
        for backend, sizes in sorted(leaks.items())
    ]


def eager_warnings(records: list[Record]) -> list[str]:
    """One line naming the items where the fp64 reference proved eager wrong (metrics.eager_wrong):
    findings about PyTorch itself, whatever the backend under test did."""
    ids = sorted({record.id for record in records if record.metric.eager_wrong})
    if not ids:
        return []
    shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    return [
        f"  warning: eager returned NaN/Inf that fp64 refutes on {len(ids)} item(s) ({shown});"
        " those elements were judged against fp64; see metrics.eager_wrong in the results"
    ]
