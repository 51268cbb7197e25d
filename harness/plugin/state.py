"""The run's settings and objects (RunState, kept in config.stash): backends, seed, suite, and
the hooks that set the run up."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gemmconf import bundled_suites, capability, codecheck, expectations, isolation, pristine
from gemmconf.backends import Backend, RunOptions, UnknownBackendError, record_name
from gemmconf.backends.eager import EagerBackend
from gemmconf.markers import MARKERS
from gemmconf.plugin import options
from gemmconf.plugin.benchmark import check_benchmark
from gemmconf.plugin.hardware import parse_required, parse_target, pin_worker
from gemmconf.plugin.isolating import make_runner, parse_timeouts
from gemmconf.plugin.sharding import parse_shard
from gemmconf.plugin.stash import STATE
from gemmconf.report.results import ResultsWriter, writable, writer_of
from gemmconf.scenario import (
    MAX_INSTANCES,
    SUITE_SUFFIXES,
    ScenarioError,
    ScenarioInstance,
    discover,
    load_suite,
)

EAGER = EagerBackend.name  # the baseline's label: PyTorch as it ships


def pytest_addoption(parser: pytest.Parser) -> None:
    group = options.group(parser)
    group.addoption(
        "--backend",
        default=None,
        metavar="NAME[,NAME...]",
        help="systems under test: built-ins (reference, eager, inductor, "
        "inductor-max-autotune[:TRITON|CUTLASS|ATEN,...]), names registered under the "
        "entry-point group gemmconf.backends, or package.module:attr. "
        f"Default: {DEFAULT_BACKEND}.",
    )
    group.addoption(
        "--allow-unavailable",
        action="store_true",
        default=False,
        help="run even when a backend named by --backend is unavailable here (its items are "
        "skipped with the reason); without it, that is a usage error at start-up",
    )
    group.addoption(
        "--seed",
        default="0",
        metavar="N",
        help="run seed; each item's inputs are drawn from a seed derived from its id "
        "and this (default: 0)",
    )
    group.addoption(
        "--expectations",
        action="append",
        default=[],
        metavar="PATH",
        help="an expectations file (xfail/skip entries; its 'backend:' names the backend it is "
        "for), used before the suite's and the backend package's own; repeatable",
    )
    group.addoption(
        "--max-items",
        default=MAX_INSTANCES,
        type=int,
        metavar="N",
        help=f"the most instances one scenario may expand to (default: {MAX_INSTANCES:,}); past "
        "it the suite file is an error naming the scenario",
    )
    group.addoption(
        "--suites",
        default=None,
        metavar="PATH",
        help="the suite folder (scenario files and expectations/) to run. Default: the ini "
        "value gemmconf_suites when the project's ini sets it, else the suite installed with "
        "gemmconf",
    )
    parser.addini(
        "gemmconf_suites",
        "the suite folder, relative to this ini file (default: the suite installed with "
        "gemmconf; --suites overrides it)",
        default="",
    )


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from gemmconf.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


DEFAULT_BACKEND = "reference"


class RunState:
    """Run-wide settings and objects, kept in config.stash."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.root = Path(config.rootpath)
        self.suites_dir = suites_dir(config)
        self.seed = _parse_seed(options.get(config, "seed"))
        self.target_arch = parse_target(options.get(config, "target_arch"))
        self.required = parse_required(options.get(config, "require_hardware"))
        # a debugger (--pdb, --trace) must see the backend's frames: that needs the item here
        self.isolate = not (
            options.get(config, "no_isolate")
            or config.getoption("usepdb", False)
            or config.getoption("trace", False)
        )
        self.timeouts = parse_timeouts(config)
        self.shard = parse_shard(options.get(config, "shard"))
        self.benchmark = bool(options.get(config, "benchmark"))
        named = options.get(config, "backend")
        text = DEFAULT_BACKEND if named is None else named
        self.backend_specs = [s.strip() for s in text.split(",")]
        if named is not None and not all(self.backend_specs):
            raise pytest.UsageError(
                f"--backend {named!r}: an empty backend name (an unset variable?); "
                "name one or more backends, comma-separated"
            )
        self.capability = capability.detect()
        self.device = "cuda" if self.capability.device == "cuda" else "cpu"
        if self.benchmark and not hasattr(config, "workerinput"):
            check_benchmark(self.device, numprocesses(config))
        self.backends: dict[str, Backend] = {}
        self.specs: dict[str, str] = {}  # label -> the --backend text that named it
        self.allow_unavailable = bool(options.get(config, "allow_unavailable"))
        if named is not None:
            self.resolve_backends()  # a bad --backend fails at start, whatever is collected
            if not hasattr(config, "workerinput"):
                self.check_available()
        self.instances: dict[Path, list[ScenarioInstance]] = {}
        self.tables: dict[str, expectations.ExpectationTable] = {}
        # eager's table, whether or not eager runs: what PyTorch itself is known to get wrong
        self.eager_table: expectations.ExpectationTable | None = None
        self.writer: ResultsWriter | None = None
        self.results_path: Path | None = None
        self.report_lines: list[str] = []  # from pytest_gemmconf_run_finished (the page, ...)
        self.results_kept = False  # the run wrote no results file: the previous one stays
        self._runner: isolation.IsolatedRunner | isolation.InProcessRunner | None = None

    @property
    def options(self) -> RunOptions:
        return RunOptions(target_arch=self.target_arch, device=self.device)

    def resolve_backends(self) -> None:
        if self.backends:
            return
        for spec in self.backend_specs:
            try:
                backend = isolation.configured_backend(spec, self.options)
            except UnknownBackendError as exc:
                raise pytest.UsageError(f"--backend: {exc}") from None
            except ValueError as exc:  # a built-in rejecting its option
                raise pytest.UsageError(f"--backend {spec}: {exc}") from None
            label = record_name(spec, backend)
            self.backends[label] = backend
            self.specs[label] = spec

    def check_available(self) -> None:
        """A backend named on the command line that cannot run here is a usage error (a CI
        line must not go green by skipping everything), unless --allow-unavailable."""
        if self.allow_unavailable:
            return
        for label, backend in self.backends.items():
            reason = backend.availability()
            if reason:
                raise pytest.UsageError(
                    f"--backend {self.specs[label]}: unavailable here: {reason}. "
                    "--allow-unavailable runs anyway, skipping its items with that reason."
                )

    def runner(self) -> isolation.IsolatedRunner | isolation.InProcessRunner:
        """Where items run: a worker process (started after collection), or here."""
        if self._runner is None:
            self._runner = make_runner(self)  # isolating.py: budgets, timeouts, confirmation
        return self._runner

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    @property
    def target(self) -> str | None:
        return capability.target_class(self.capability, self.target_arch)

    def load(self, path: Path) -> list[ScenarioInstance]:
        path = path.resolve()
        if path not in self.instances:
            self.instances[path] = load_suite(
                path, root=self.root, max_instances=options.get(self.config, "max_items")
            )
        return self.instances[path]

    def load_expectations(self) -> None:
        """Every backend's expectations (--expectations files, the suite's file, the backend
        package's), each entry validated against every instance of the whole suite."""
        instances = [i for path in discover([self.suites_dir], self.root) for i in self.load(path)]
        given = [
            expectations.read(self.config.invocation_params.dir / path, self.root)
            for path in options.get(self.config, "expectations")
        ]
        for file in given:
            if file.backend not in self.backends:
                raise ScenarioError(
                    file.shown,
                    "backend",
                    f"--expectations {file.path}: the file is for backend {file.backend!r}, "
                    f"which this run does not test (backends: {', '.join(self.backends)})",
                )
        directory = self.suites_dir / "expectations"
        for label, backend in self.backends.items():
            self.tables[label] = expectations.load(
                directory,
                label,
                instances,
                root=self.root,
                extra=[f for f in given if f.backend == label],
                packaged=expectations.packaged_files(backend, label),
            )
        if EAGER in self.tables:
            self.eager_table = self.tables[EAGER]
        elif expectations.path_for(directory, EAGER).exists():
            self.eager_table = expectations.load(directory, EAGER, instances, root=self.root)

    def eager_fails(
        self,
        instance_id: str,
        label: str,
        hardware: str | None = None,
        torch_version: str | None = None,
    ) -> expectations.Expectation | None:
        """Eager's expected failure of this item on this class of hardware and torch version,
        for another backend's failure note (a backend that leaves the op to aten inherits it);
        None for eager itself."""
        if label == EAGER or self.eager_table is None:
            return None
        entry = self.eager_table.lookup(instance_id, hardware, torch_version)
        return entry if entry is not None and entry.status == "xfail" else None

    def hardware_of(self, instance: ScenarioInstance) -> str:
        """The class of hardware an item runs on here (expectation entries' `hardware`): "cpu"
        where it runs on a CPU, else this machine's GPU class."""
        if capability.item_device(instance.requires, self.device) == "cpu":
            return "cpu"
        return self.capability.hardware_class


def suites_location(config: pytest.Config) -> tuple[Path | None, str]:
    """Where the suite is and who said so: --suites (relative to the current folder), else the
    ini's gemmconf_suites (relative to the ini file), else (None) the installed suite. Never
    pytest's rootdir, which moves with the arguments (`--results /elsewhere/x.json` is one)."""
    given = options.get(config, "suites")
    if given:
        return config.invocation_params.dir / given, f"--suites {given}"
    ini = config.getini("gemmconf_suites")
    if ini:
        base = config.inipath.parent if config.inipath else config.invocation_params.dir
        return base / ini, f"gemmconf_suites = {ini} ({config.inipath or 'ini'})"
    return None, "the suite installed with gemmconf"


def suites_dir(config: pytest.Config) -> Path:
    path, source = suites_location(config)
    if path is None:
        try:
            return bundled_suites()
        except FileNotFoundError as exc:
            raise pytest.UsageError(str(exc)) from None
    if not path.is_dir():
        raise pytest.UsageError(f"{source}: no such folder: {path}")
    return path.resolve()


# Why gemmconf acts in this run (`activation`); absent or empty when it does not.
ACTIVE = pytest.StashKey[list[str]]()


def activation(config: pytest.Config) -> list[str]:
    """Why this run is gemmconf's: the gemmconf options it was given, or its arguments that
    collect the suite (a path in the suite folder; or above it, where the project named its
    suite folder). Empty in any other run: then the plugin stays silent."""
    reasons = options.given(config)
    path, _ = suites_location(config)
    explicit = path is not None
    try:
        suites = path.resolve() if explicit else bundled_suites()
    except FileNotFoundError:
        return reasons
    for arg in config.args:
        target = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if target == suites or suites in target.parents or (explicit and target in suites.parents):
            reasons.append(arg)
    return reasons


# Feature modules that act during a run; unregistered in runs that are not gemmconf's.
_FEATURES = (
    "gemmconf.plugin.hardware",
    "gemmconf.plugin.isolating",
    "gemmconf.plugin.sharding",
    "gemmconf.plugin.benchmark",
    "gemmconf.plugin.speed",
    "gemmconf.plugin.items",
    "gemmconf.plugin.recording",
    "gemmconf.plugin.page",
)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Opt-in: a run that neither collects the suite nor names a gemmconf option gets none of
    gemmconf's hooks (no header, no results file, no page), only its options in --help."""
    config.stash[ACTIVE] = activation(config)
    if not config.stash[ACTIVE]:
        for name in _FEATURES:
            plugin = config.pluginmanager.get_plugin(name)
            if plugin is not None:
                config.pluginmanager.unregister(plugin)


def is_active(config: pytest.Config) -> bool:
    return bool(config.stash.get(ACTIVE, None))


def _parse_seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise pytest.UsageError(f"--seed: expected an integer, got {text!r}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if not is_active(config):
        return
    pristine.remember()  # PyTorch as eager must run it, before --backend imports anything
    for name, help_text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")
    pin_worker(config)
    conflict = codecheck.expecttest_accept_conflict(
        os.environ, numprocesses(config), getattr(config.option, "dist", None)
    )
    if conflict:
        raise pytest.UsageError(conflict)
    state = RunState(config)
    if not hasattr(config, "workerinput") and not config.option.collectonly:
        check_results_path(config)
    config.stash[STATE] = state
    config.add_cleanup(state.close)
    _handle_sigterm(config)
    if config.pluginmanager.hasplugin("html"):
        from gemmconf.report.html import HtmlColumns

        config.pluginmanager.register(HtmlColumns(), "gemmconf-html")


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


SIGTERM_REPEAT_S = 2.0  # a SIGTERM this soon after the first is the same request, sent again


def _handle_sigterm(config: pytest.Config) -> None:
    """SIGTERM ends the run like Ctrl-C: pytest unwinds, and the results written so far are
    kept, marked incomplete. A SIGTERM more than SIGTERM_REPEAT_S after the first gets the
    previous handler (by default: die); one sooner is the same request again (GNU `timeout`
    signals its child and then the child's whole process group, so the pytest process gets two
    at once: the second used to kill it before it wrote its results).

    Ours goes first even where a handler is already installed (a plugin or a site hook of the
    environment that exits at once would otherwise lose the run's final results file); only an
    ignored SIGTERM stays ignored. A first SIGTERM after the results file is written lets the
    run finish its summary: nothing is left to keep, and the exit status stays the one the file
    records (it used to end in a KeyboardInterrupt traceback and status 130)."""
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN:
        return
    restored = signal.SIG_DFL if previous is None else previous
    first: list[float] = []

    def on_sigterm(signum: int, frame: Any) -> None:
        now = time.monotonic()
        if not first:
            first.append(now)
            state = config.stash.get(STATE, None)
            if state is not None and state.results_path is not None:
                return  # the results are written: the run is all but over
            raise KeyboardInterrupt(f"{signal.Signals(signum).name}: the run was asked to stop")
        if now - first[0] <= SIGTERM_REPEAT_S:
            return  # the same request, delivered twice
        signal.signal(signal.SIGTERM, restored)
        if callable(restored):
            restored(signum, frame)
        else:
            os.kill(os.getpid(), signum)  # the default action, now restored: die

    def restore() -> None:
        # after a SIGTERM ours stays: its repeat (GNU timeout's, to the group) must not kill the
        # run as it exits, whose status says it was interrupted (a loaded CI box lost that race)
        if not first:
            signal.signal(signal.SIGTERM, restored)

    signal.signal(signal.SIGTERM, on_sigterm)
    config.add_cleanup(restore)


def suite_version(suites_dir: Path) -> str:
    """A short hash of every suite and expectation file: runs of different suites differ."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(p for p in suites_dir.rglob("*") if p.suffix in SUITE_SUFFIXES):
        digest.update(str(path.relative_to(suites_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def numprocesses(config: pytest.Config) -> int | None:
    value = getattr(config.option, "numprocesses", None)
    return value if isinstance(value, int) else (os.cpu_count() if value == "auto" else None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """The results file is started (a previous run's file removed) only once the run gets going:
    collected cleanly, with items to run (or a shard, whose empty part is a result). A usage
    error, a collection error or an empty selection keeps the previous run's file."""
    state = session.config.stash.get(STATE, None)
    if state is None or state.writer is None:
        return
    broken = session.testsfailed and not session.config.option.continue_on_collection_errors
    if not broken and (session.items or state.shard is not None):
        state.writer.start()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """xdist's controller collects nothing itself: the results file starts when a worker has
    collected items to run (or a shard is run). A worker that collected none, or failed to
    collect, keeps the previous run's file, as an empty selection does without xdist."""
    state = node.config.stash.get(STATE, None)
    if state is None or state.writer is None or state.writer.started:
        return
    if ids or state.shard is not None:
        state.writer.start()


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Any:
    """A run that never started its results file writes none: the previous one stays."""
    state = session.config.stash.get(STATE, None)
    if state is not None and state.writer is not None and not state.writer.started:
        state.writer.abandon()
        state.writer = None
        state.results_kept = True
    return (yield)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is not None and state.results_kept:
        terminalreporter.write_line(
            "gemmconf: no results written (no item ran); "
            f"{options.get(config, 'results')} is left as it was"
        )
        flag = "--gemmconf-suites" if "--suites" in options.taken(config) else "--suites"
        for arg in suite_files_outside(config, state.suites_dir):
            terminalreporter.write_line(
                f"gemmconf: {arg} holds suite files, but gemmconf collects them only from its "
                f"suites folder ({state.suites_dir}): run `{flag} {arg}` to make it the suite"
            )


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


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = config.stash.get(STATE, None)
    if state is None:
        return []
    cap = state.capability
    taken = [f"{name} (gemmconf's: --gemmconf-{name[2:]})" for name in options.taken(config)]
    return [
        *([f"gemmconf: the project's own options: {', '.join(taken)}"] if taken else []),
        f"gemmconf: backends {', '.join(state.backends)}; device {cap.name} "
        f"({cap.hardware_class}); seed {state.seed}; target "
        f"{state.target or 'none (no GPU, no --target-arch)'}; python {sys.version.split()[0]}",
        f"gemmconf: items run {'in a worker process' if state.isolate else 'in-process'}; "
        f"item timeout {state.timeouts.describe() if state.isolate else 'none'}"
        f"{'' if state.shard is None else f'; shard {state.shard}'}",
    ]
