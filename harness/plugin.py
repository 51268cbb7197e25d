"""The gemmconf pytest plugin: suite files become items, items become verdicts and records.

Loaded by the repository's ``conftest.py`` (``pytest_plugins``) and, for outside users, through
the ``pytest11`` entry point of the installed package. One item per (scenario instance, backend);
its name is ``<scenario>[<axis ids>]@<backend>`` and its record id ``<suite>/<scenario>[...]``.

Items run in a worker process by default (`gemmconf.isolation`): a backend that crashes or hangs
fails its item, not the run. `--no-isolate` runs them in this process, for debuggers.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gemmconf import capability, codecheck, expectations, isolation, shard
from gemmconf.backends import Backend, RunOptions, UnknownBackendError
from gemmconf.markers import MARKERS
from gemmconf.report.results import FAILING, ResultsWriter
from gemmconf.runner import SuiteBug
from gemmconf.scenario import ScenarioError, ScenarioInstance, discover, implied_markers, load_suite

DEFAULT_BACKEND = "reference"
TARGETS = ("sm80", "sm90", "sm100")
DETAILS_CHARS = 8000  # a failed record's `details`: every failed check, tracebacks included
STATE = pytest.StashKey["RunState"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gemmconf", "gemmconf conformance suite")
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
        "--results",
        default="reports/results.json",
        metavar="PATH",
        help="where to write the results records (default: reports/results.json)",
    )
    group.addoption(
        "--seed",
        default="0",
        metavar="N",
        help="run seed; each item's inputs are drawn from a seed derived from its id "
        "and this (default: 0)",
    )
    group.addoption(
        "--require-hardware",
        action="append",
        default=[],
        metavar="CLASS",
        help="turn a skip for missing CLASS (cpu, sm80, sm89, sm90, sm100) into a "
        "failure, so a run that should have had the hardware cannot pass by skipping; "
        "repeatable",
    )
    group.addoption(
        "--conformance-html",
        default=None,
        metavar="PATH",
        help="the self-contained conformance page written at the end of the run "
        "(default: conformance.html beside --results; 'none' skips it)",
    )
    group.addoption(
        "--target-arch",
        default=None,
        metavar="smXY",
        help="code-check target (sm80, sm90, sm100) for backends that cross-compile "
        "(the reference backend does): checks and items for that class run without "
        "such a GPU",
    )
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
    group.addoption(
        "--shard",
        default=None,
        metavar="i/n",
        help="run only shard i of n (1-based) of the selected items: deterministic, "
        "disjoint and covering, so the n shards' merged results equal one run's",
    )
    group.addoption(
        "--benchmark",
        action="store_true",
        default=False,
        help="after an item passes, time it with triton.testing.do_bench (median, "
        "warm-up, L2 flushed, inputs rotated) next to cuBLAS on the same inputs; "
        "records time_ms, tflops, cublas_tflops and vs_cublas in the results and "
        "prints a table. Needs a CUDA GPU and at most one xdist worker per GPU",
    )
    parser.addini(
        "gemmconf_suites", "directory holding the suite files and expectations/", default="suites"
    )


class RunState:
    """Run-wide settings and objects, kept in config.stash."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.root = Path(config.rootpath)
        self.suites_dir = (self.root / config.getini("gemmconf_suites")).resolve()
        self.seed = _parse_seed(config.getoption("seed"))
        self.target_arch = _parse_target(config.getoption("target_arch"))
        self.required = _parse_required(config.getoption("require_hardware"))
        # a debugger (--pdb, --trace) must see the backend's frames: that needs the item here
        self.isolate = not (
            config.getoption("no_isolate")
            or config.getoption("usepdb", False)
            or config.getoption("trace", False)
        )
        self.timeouts = _parse_item_timeout(config.getoption("item_timeout"))
        self.shard = _parse_shard(config.getoption("shard"))
        self.benchmark = bool(config.getoption("benchmark"))
        specs = config.getoption("backend") or DEFAULT_BACKEND
        self.backend_specs = [s.strip() for s in specs.split(",") if s.strip()]
        if not self.backend_specs:
            raise pytest.UsageError("--backend: no backend named")
        self.capability = capability.detect()
        self.device = "cuda" if self.capability.device == "cuda" else "cpu"
        if self.benchmark and not hasattr(config, "workerinput"):
            _check_benchmark(self.device, _numprocesses(config))
        self.backends: dict[str, Backend] = {}
        self.specs: dict[str, str] = {}  # label -> the --backend text that named it
        if config.getoption("backend"):
            self.resolve_backends()  # a bad --backend fails at start, whatever is collected
        self.instances: dict[Path, list[ScenarioInstance]] = {}
        self.tables: dict[str, expectations.ExpectationTable] = {}
        self.writer: ResultsWriter | None = None
        self.results_path: Path | None = None
        self.page_line: str | None = None
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
            label = _label(spec, backend)
            self.backends[label] = backend
            self.specs[label] = spec

    def runner(self) -> isolation.IsolatedRunner | isolation.InProcessRunner:
        """Where items run: a worker process (started after collection), or here."""
        if self._runner is None:
            if self.isolate:
                self._runner = isolation.IsolatedRunner(
                    self.specs, self.options, timeouts=self.timeouts
                )
            else:
                self._runner = isolation.InProcessRunner(self.backends)
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
            self.instances[path] = load_suite(path, root=self.root)
        return self.instances[path]

    def load_expectations(self) -> None:
        """Validate every backend's expectations (the suite's file, else the one its package
        ships) against every instance of the whole suite."""
        all_ids = [i.id for path in discover([self.suites_dir], self.root) for i in self.load(path)]
        directory = self.suites_dir / "expectations"
        for label, backend in self.backends.items():
            self.tables[label] = expectations.load(
                directory,
                label,
                all_ids,
                root=self.root,
                packaged=expectations.packaged_file(backend),
            )


def _label(spec: str, backend: Backend) -> str:
    """The name records and expectation files use: the spec for built-ins (keeps options)."""
    name = getattr(backend, "name", spec)
    return spec if spec.split(":")[0] == name.split(":")[0] else name


def _parse_seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise pytest.UsageError(f"--seed: expected an integer, got {text!r}") from None


def _parse_target(text: str | None) -> str | None:
    if text is not None and text not in TARGETS:
        raise pytest.UsageError(f"--target-arch: {text!r} is not one of {', '.join(TARGETS)}")
    return text


def _parse_item_timeout(text: str) -> isolation.TimeoutPolicy:
    try:
        return isolation.parse_timeout(text)
    except ValueError as exc:
        raise pytest.UsageError(f"--item-timeout: {exc}") from None


def _parse_shard(text: str | None) -> shard.Shard | None:
    if text is None:
        return None
    try:
        return shard.parse(text)
    except ValueError as exc:
        raise pytest.UsageError(f"--shard: {exc}") from None


def _parse_required(values: list[str]) -> set[str]:
    classes = {c.strip() for v in values for c in v.split(",") if c.strip()}
    unknown = classes - set(capability.HARDWARE_CLASSES)
    if unknown:
        raise pytest.UsageError(
            f"--require-hardware: {', '.join(sorted(unknown))} is not one of "
            f"{', '.join(capability.HARDWARE_CLASSES)}"
        )
    return classes


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    for name, help_text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")
    _pin_worker(config)
    conflict = codecheck.expecttest_accept_conflict(
        os.environ, _numprocesses(config), getattr(config.option, "dist", None)
    )
    if conflict:
        raise pytest.UsageError(conflict)
    state = RunState(config)
    config.stash[STATE] = state
    config.add_cleanup(state.close)
    _handle_sigterm(config)
    if config.pluginmanager.hasplugin("html"):
        from gemmconf.report.html import HtmlColumns

        config.pluginmanager.register(HtmlColumns(), "gemmconf-html")
    if not hasattr(config, "workerinput") and not config.option.collectonly:
        state.writer = ResultsWriter(
            Path(config.getoption("results")),
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


def _handle_sigterm(config: pytest.Config) -> None:
    """SIGTERM ends the run like Ctrl-C: pytest unwinds, and the results written so far are
    kept, marked incomplete. A second SIGTERM gets the previous handler (by default: die).

    Ours goes first even where a handler is already installed (a plugin or a site hook of the
    environment that exits at once would otherwise lose the run's final results file); only an
    ignored SIGTERM stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN:
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        raise KeyboardInterrupt(f"{signal.Signals(signum).name}: the run was asked to stop")

    signal.signal(signal.SIGTERM, on_sigterm)
    config.add_cleanup(
        lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
    )


def suite_version(suites_dir: Path) -> str:
    """A short hash of every suite and expectation file: runs of different suites differ."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(suites_dir.rglob("*.yaml")):
        digest.update(str(path.relative_to(suites_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _check_benchmark(device: str, workers: int | None) -> None:
    """--benchmark: a GPU, and no two workers timing on one GPU."""
    if device != "cuda":
        raise pytest.UsageError(
            "--benchmark needs a CUDA GPU: timings of the Triton interpreter "
            "or of CPU eager would say nothing about a GPU backend"
        )
    gpus = len(_gpu_ids()) or 1
    if workers and workers > gpus:
        raise pytest.UsageError(
            f"--benchmark with -n {workers} would time {workers} workers on "
            f"{gpus} GPU(s) at once: use -n {gpus} or fewer (each xdist "
            "worker is pinned to its own GPU)"
        )


def _numprocesses(config: pytest.Config) -> int | None:
    value = getattr(config.option, "numprocesses", None)
    return value if isinstance(value, int) else (os.cpu_count() if value == "auto" else None)


def _pin_worker(config: pytest.Config) -> None:
    """xdist workers: one GPU each (before CUDA starts), one OpenMP thread each on a CPU."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    index = int(re.sub(r"\D", "", worker) or 0)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = visible.split(",") if visible else _gpu_ids()
    if gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[index % len(gpus)]
    else:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        import torch

        torch.set_num_threads(1)


def _gpu_ids() -> list[str]:
    """GPU indices without initialising CUDA in this process (nvidia-smi, when present)."""
    import shutil
    import subprocess

    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def pytest_sessionstart(session: pytest.Session) -> None:
    state = session.config.stash[STATE]
    if state.writer is not None:
        state.writer.start()


def pytest_collection(session: pytest.Session) -> None:
    """Validate suite and expectation files up front: a bad file is a usage error, not a
    collection error, and no item runs from a half-valid suite."""
    state = session.config.stash[STATE]
    if not _touches_suites(session.config, state):
        return
    state.resolve_backends()
    try:
        state.load_expectations()
    except ScenarioError as exc:
        raise pytest.UsageError(f"invalid suite or expectations file: {exc}") from None


def _touches_suites(config: pytest.Config, state: RunState) -> bool:
    for arg in config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == state.suites_dir or state.suites_dir in path.parents:
            return True
        if path in state.suites_dir.parents or path.suffix in (".yaml", ".yml"):
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[STATE]
    if state.shard is None:
        return
    kept, dropped = shard.split(items, state.shard, _shard_key)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collection_finish(session: pytest.Session) -> None:
    state = session.config.stash[STATE]
    if (
        state.isolate
        and not session.config.option.collectonly
        and any(isinstance(item, ScenarioItem) for item in session.items)
    ):
        state.runner().prestart()  # the worker imports torch while pytest gets going


def _shard_key(item: pytest.Item) -> str:
    if isinstance(item, ScenarioItem):
        return f"{item.instance.id}@{item.label}"
    return item.nodeid


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = parent.config.stash[STATE]
    if file_path.suffix not in (".yaml", ".yml") or "expectations" in file_path.parts:
        return None
    if state.suites_dir not in file_path.resolve().parents:
        return None
    return SuiteFile.from_parent(parent, path=file_path)


class SuiteFile(pytest.File):
    def collect(self) -> Iterator[ScenarioItem]:
        state = self.config.stash[STATE]
        try:
            instances = state.load(self.path)
        except ScenarioError as exc:
            raise pytest.UsageError(f"invalid suite or expectations file: {exc}") from None
        if not state.tables:
            state.resolve_backends()
            state.load_expectations()
        for instance in instances:
            for label, backend in state.backends.items():
                yield ScenarioItem.from_parent(
                    self,
                    name=_item_name(instance, label),
                    instance=instance,
                    backend=backend,
                    label=label,
                )


def _item_name(instance: ScenarioInstance, label: str) -> str:
    return f"{instance.id.split('/', 1)[1]}@{label}"


class ConformanceFailure(Exception):
    """The backend got an item wrong; the message is the whole diagnosis."""


class ScenarioItem(pytest.Item):
    def __init__(self, *, instance: ScenarioInstance, backend: Backend, label: str, **kwargs):
        super().__init__(**kwargs)
        self.instance = instance
        self.backend = backend
        self.label = label
        for marker in implied_markers(instance):
            self.add_marker(marker)
        state = self.config.stash[STATE]
        expected = state.tables[label].lookup(instance.id) if label in state.tables else None
        if expected is not None and expected.status == "skip":
            self.add_marker(pytest.mark.skip(reason=f"expected skip: {expected.text()}"))
        elif expected is not None:
            self.add_marker(
                pytest.mark.xfail(
                    reason=expected.text(), strict=expected.strict, raises=ConformanceFailure
                )
            )
        dims = instance.dims(0)
        self.record: dict[str, Any] = {
            "id": instance.id,
            "suite": instance.suite,
            "backend": label,
            "scenario": instance.name,
            "op": instance.op,
            "dtype": instance.dtype,
            "shape": "x".join(str(v) for v in dims.values()),
            "dims": dims,
            "axes": instance.axis_record(),
            "markers": implied_markers(instance),
            "source": instance.source,
            "nodeid": self.nodeid,
        }
        self.user_properties.append(("gemmconf", self.record))

    def setup(self) -> None:
        state = self.config.stash[STATE]
        reason = self.backend.availability()
        if reason:
            pytest.skip(f"backend {self.label} unavailable: {reason}")
        unmet = capability.unmet(
            self.instance.requires, state.capability, target_arch=state.target_arch
        )
        if unmet is not None:
            missing = getattr(unmet, "missing_class", None)
            text = getattr(unmet, "reason", str(unmet))
            if missing in state.required:
                pytest.fail(
                    f"--require-hardware {missing}: this item would be skipped: {text}",
                    pytrace=False,
                )
            self.record["skip_class"] = missing
            pytest.skip(text)

    def runtest(self) -> None:
        state = self.config.stash[STATE]
        repro = self.repro_command()
        device = "cpu" if self.instance.requires.device == "cpu" else state.device
        request = isolation.ItemRequest(
            self.instance,
            self.label,
            seed=state.seed,
            device=device,
            target=state.target,
            repro=repro,
            benchmark=state.benchmark and device == "cuda",
            compile_s=_compile_allowance(self.backend),
        )
        try:
            result = state.runner().run(request)
        except SuiteBug as exc:
            raise ScenarioBug(
                f"{exc}\nThe scenario is wrong, not the backend ({self.instance.source})."
            ) from None
        self.record["metrics"] = result.metrics
        self.record["duration_s"] = round(result.duration_s, 4)
        if not result.passed:
            self.record["reason"] = result.summary
            details = _details(result.problems)
            if details and details != result.summary.strip():
                self.record["details"] = _capped(details, DETAILS_CHARS)
            if result.code_excerpt:
                self.record["code_excerpt"] = result.code_excerpt
            raise ConformanceFailure("\n".join(result.problems))

    def repro_command(self) -> str:
        state = self.config.stash[STATE]
        command = [
            "pytest",
            self.nodeid,
            "--backend",
            state.specs[self.label],
            "--seed",
            str(state.seed),
        ]
        if state.target_arch:
            command += ["--target-arch", state.target_arch]
        return shlex.join(command)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style=None) -> str:
        if isinstance(excinfo.value, ConformanceFailure | ScenarioBug):
            return str(excinfo.value)
        if isinstance(excinfo.value, isolation.WorkerError):
            return f"The harness raised in the isolation worker:\n{excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = int(self.instance.source.rsplit(":", 1)[1]) - 1
        return self.path, line, f"{self.instance.id} on {self.label}"


def _compile_allowance(backend: Any) -> float:
    """The backend's optional `compile_timeout_s` (harness/backends/base.py); 0 unless it is a
    positive finite number."""
    try:
        value = float(getattr(backend, "compile_timeout_s", 0.0) or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) and value > 0 else 0.0


def _details(problems: list[str]) -> str:
    """Every failed check of an item, tracebacks included; the `Reproduce:` line is left out
    (the record's nodeid and the page's repro command say it)."""
    kept = [p for p in problems if not p.startswith("Reproduce: ")]
    return "\n\n".join(kept).strip()


def _capped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... ({len(text) - limit} more characters in pytest's output)"


class ScenarioBug(Exception):
    """The scenario contradicts eager (reported as an error, not a backend failure)."""


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> None:
    if (
        isinstance(item, ScenarioItem)
        and call.excinfo is not None
        and isinstance(call.excinfo.value, ScenarioBug)
    ):
        item.record["suite_error"] = True


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
    from gemmconf.report.page import page_for_run

    state.page_line = page_for_run(state.results_path, session.config.getoption("conformance_html"))


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
        from gemmconf.bench import table

        lines = table(state.writer.records)
        terminalreporter.write_line(
            "gemmconf benchmark (median ms; TFLOP/s of the GEMM; cuBLAS on the same inputs)"
            if lines
            else "gemmconf benchmark: no item passed, nothing was timed"
        )
        for line in lines:
            terminalreporter.write_line(line)
    path = state.results_path
    if path is not None:
        terminalreporter.write_line(f"gemmconf: results in {path}")
    if state.page_line:
        terminalreporter.write_line(state.page_line)


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


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = config.stash.get(STATE, None)
    if state is None:
        return []
    cap = state.capability
    return [
        f"gemmconf: backends {', '.join(state.backends)}; device {cap.name} "
        f"({cap.hardware_class}); seed {state.seed}; target "
        f"{state.target or 'none (no GPU, no --target-arch)'}; python {sys.version.split()[0]}",
        f"gemmconf: items run {'in a worker process' if state.isolate else 'in-process'}; "
        f"item timeout {state.timeouts.describe() if state.isolate else 'none'}"
        f"{'' if state.shard is None else f'; shard {state.shard}'}",
    ]
