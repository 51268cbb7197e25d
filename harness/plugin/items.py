"""Suite files become pytest items: one per (scenario instance, backend), run through the run's
runner and reported with the whole diagnosis."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from gemmconf import bundled_suites, capability, ids, isolation, kinds
from gemmconf.backends import Backend
from gemmconf.outcome import ItemOutcome, plain, render
from gemmconf.plugin.benchmark import bench_mode
from gemmconf.plugin.isolating import compile_allowance, prestart_worker
from gemmconf.plugin.recording import Decision, build_record
from gemmconf.plugin.stash import STATE
from gemmconf.plugin.state import suites_dir, suites_location
from gemmconf.scenario import ScenarioError, ScenarioInstance, implied_markers

if TYPE_CHECKING:
    from gemmconf.expectations import Expectation
    from gemmconf.plugin.state import RunState


def pytest_collection(session: pytest.Session) -> None:
    """Validate suite and expectation files up front: a bad file is a usage error, not a
    collection error, and no item runs from a half-valid suite."""
    state = session.config.stash[STATE]
    if not _touches_suites(session.config, state):
        return
    state.resolve_backends()
    prestart_worker(session)  # its torch import overlaps the suite's loading
    _load_expectations(state)


def pytest_sessionstart(session: pytest.Session) -> None:
    """xdist's controller collects nothing, and a usage error raised in its workers reached the
    user as `INTERNALERROR ... no active workers` with the cause unshown: the controller
    validates the files itself, before the workers start (xdist starts them last)."""
    state = session.config.stash[STATE]
    distributed = session.config.pluginmanager.has_plugin("dsession")
    if distributed and _touches_suites(session.config, state):
        state.resolve_backends()
        _load_expectations(state)


def _load_expectations(state: RunState) -> None:
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
                name = _item_name(instance, label)
                yield ScenarioItem.from_parent(
                    self,
                    name=name,
                    # as a string, so pytest parses the bracket into params exactly as it parses
                    # the ids --lf/--ff read back from its cache (pytest >= 9.2 compares them)
                    nodeid=f"{self.nodeid}::{name}",
                    instance=instance,
                    backend=backend,
                    label=label,
                )


def _item_name(instance: ScenarioInstance, label: str) -> str:
    return ids.item_name(instance.id, label)  # `mm[fp32-127x65x33-nn@eager]`


class ConformanceFailure(Exception):
    """The backend got an item wrong; the message is the whole diagnosis."""


class HarnessError(Exception):
    """gemmconf itself failed on the item (its reference, inputs, worker, or a wrong scenario):
    the item is an error, never the backend's failure (and never an expected failure)."""


class ScenarioItem(pytest.Item):
    def __init__(self, *, instance: ScenarioInstance, backend: Backend, label: str, **kwargs):
        super().__init__(**kwargs)
        self.instance = instance
        self.backend = backend
        self.label = label
        for marker in implied_markers(instance):
            self.add_marker(marker)
        state = self.config.stash[STATE]
        hardware, torch_version = state.hardware_of(instance), state.capability.torch_version
        self.expected: Expectation | None = (
            state.tables[label].lookup(instance.id, hardware, torch_version)
            if label in state.tables
            else None
        )
        expected = self.expected
        if expected is not None and expected.status == "skip":
            self.add_marker(pytest.mark.skip(reason=self.expected_skip_reason()))
        elif expected is not None:
            self.add_marker(
                pytest.mark.xfail(
                    reason=expected.text(), strict=expected.strict, raises=ConformanceFailure
                )
            )
        known = state.eager_fails(instance.id, label, hardware, torch_version)
        self.eager_note = (  # said beside this backend's failure
            None
            if known is None
            else "Eager PyTorch is expected to fail this item too: "
            f"{known.text()}. A backend that leaves this op to aten inherits that."
        )
        self.outcome: ItemOutcome | None = None  # what the run found (runtest)
        self.skip_reason: str | None = None  # why setup skipped it
        self.setup_failure: tuple[str, str] | None = None  # (kind, reason) setup failed with
        dims = instance.dims(0)
        # what every report of this item carries (pytest-html's columns read it); the final
        # record replaces it in the report that decides the item's outcome
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

    def expected_skip_reason(self) -> str:
        assert self.expected is not None
        return f"expected skip: {self.expected.text()}"

    def setup(self) -> None:
        state = self.config.stash[STATE]
        reason = self.backend.availability()
        if reason:
            self.skip_reason = f"backend {self.label} unavailable: {reason}"
            pytest.skip(self.skip_reason)
        unmet = capability.unmet(
            self.instance.requires, state.capability, target_arch=state.target_arch
        )
        if unmet is not None:
            missing = getattr(unmet, "missing_class", None)
            text = getattr(unmet, "reason", str(unmet))
            if missing in state.required:
                message = f"--require-hardware {missing}: this item would be skipped: {text}"
                self.setup_failure = (kinds.MISSING_HARDWARE, message)
                pytest.fail(message, pytrace=False)
            self.record["skip_class"] = missing
            self.skip_reason = text
            pytest.skip(text)

    def runtest(self) -> None:
        state = self.config.stash[STATE]
        device = capability.item_device(self.instance.requires, state.device)
        request = isolation.ItemRequest(
            self.instance,
            self.label,
            seed=state.seed,
            device=device,
            target=state.target,
            repro=self.repro_command(),
            benchmark=state.benchmark and device == "cuda",
            bench_mode=bench_mode(self.config),
            compile_s=compile_allowance(self.backend),
        )
        try:
            outcome = state.runner().run(request)
        except isolation.WorkerError as exc:
            outcome = ItemOutcome.harness("the isolation worker", exc)
        self.outcome = outcome
        if outcome.passed:
            return
        text = render(outcome, repro=self.repro_command()).text
        if outcome.harness_error:
            raise HarnessError(text)
        if self.eager_note:
            text += f"\n\n{self.eager_note}"
        raise ConformanceFailure(text)

    def repro_command(self) -> str:
        state = self.config.stash[STATE]
        options = ["--backend", state.specs[self.label], "--seed", str(state.seed)]
        if state.target_arch:
            options += ["--target-arch", state.target_arch]
        given, _ = suites_location(self.config)
        suites = suites_dir(self.config)
        try:
            installed = bundled_suites().resolve()
        except FileNotFoundError:  # a checkout without its suite installed
            installed = None
        return ids.reproduce_command(
            self.path,
            self.instance.id,
            self.label,
            options,
            suites=suites,
            # `gemmconf run` names the installed suite itself: no --suites for it
            explicit_suites=given is not None and suites != installed,
            cwd=self.config.invocation_params.dir,
        )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style=None) -> str:
        if isinstance(excinfo.value, ConformanceFailure | HarnessError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = int(self.instance.source.rsplit(":", 1)[1]) - 1
        return self.path, line, f"{self.instance.id} on {self.label}"

    def decide(self, report: pytest.TestReport, call: pytest.CallInfo) -> Decision | None:
        """The item's outcome, from what the run found (never from report text); None for a
        phase that decides nothing (a passed setup, a passed teardown)."""
        xfail = self.expected is not None and self.expected.status == "xfail"
        if report.when == "setup":
            if report.skipped:
                reason = self.skip_reason
                if reason is None and self.expected is not None:
                    reason = self.expected_skip_reason()
                return Decision("skipped", reason=reason or _skip_text(report))
            if report.failed:
                if self.setup_failure is not None:
                    kind, reason = self.setup_failure
                    return Decision("error", kind=kind, reason=reason)
                return _harness_decision("setting the item up", call)
            return None
        if report.when == "call":
            outcome = self.outcome
            if outcome is None:
                if report.skipped:
                    return Decision("skipped", reason=_skip_text(report))
                return _harness_decision("running the item", call)
            if outcome.harness_error:
                return Decision("error", run=outcome)
            if outcome.passed:
                if xfail:
                    assert self.expected is not None
                    strict = "(strict)" if self.expected.strict else ""
                    reason = f"[XPASS{strict}] {self.expected.text()}"
                    xpass = "strict" if self.expected.strict else "non-strict"
                    return Decision("xpassed", run=outcome, reason=reason, xpass=xpass)
                return Decision("passed", run=outcome)
            inherited = self.eager_note is not None
            if xfail:  # the record says which entry expected it, as an xpass's reason does
                assert self.expected is not None
                notes = (f"Expected to fail: {self.expected.text()}", self.eager_note)
                note = "\n\n".join(n for n in notes if n)
                return Decision("xfailed", run=outcome, note=note, eager_fails=inherited)
            return Decision("failed", run=outcome, note=self.eager_note, eager_fails=inherited)
        if report.failed:  # teardown
            return _harness_decision("tearing the item down", call)
        return None


def _harness_decision(stage: str, call: pytest.CallInfo) -> Decision:
    error = call.excinfo.value if call.excinfo is not None else RuntimeError("unknown")
    return Decision("error", run=ItemOutcome.harness(stage, error))


def _skip_text(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # pytest's (path, line, reason)
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if isinstance(item, ScenarioItem):
        decision = item.decide(report, call)
        if decision is not None:
            environment = plain(item.config.stash[STATE].capability.as_record())  # xdist-safe
            record = build_record(
                item.record, decision, duration_s=report.duration, environment=environment
            )
            report.user_properties = [
                (k, v) for k, v in report.user_properties if k != "gemmconf"
            ] + [("gemmconf", record)]
    return report
