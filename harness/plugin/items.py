"""Suite files become pytest items: one per (scenario instance, backend), run through the run's
runner and reported with the whole diagnosis."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from gemmconf import capability, ids, isolation
from gemmconf.backends import Backend
from gemmconf.backends.base import refusal
from gemmconf.plugin.stash import STATE

if TYPE_CHECKING:
    from gemmconf.plugin.state import RunState
from gemmconf.plugin.benchmark import bench_mode
from gemmconf.plugin.isolating import compile_allowance
from gemmconf.runner import SuiteBug
from gemmconf.scenario import ScenarioError, ScenarioInstance, implied_markers

DETAILS_CHARS = 8000  # a failed record's `details`: every failed check, tracebacks included


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


class Unsupported(ConformanceFailure):
    """The backend's `supports` refused the item (a failure of kind "unsupported")."""


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
        reason = refusal(self.backend, self.instance)
        if reason is not None:
            self.record["kind"] = "unsupported"
            self.record["reason"] = f"unsupported by {self.label}: {reason}"
            raise Unsupported(self.record["reason"])
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
            bench_mode=bench_mode(self.config),
            compile_s=compile_allowance(self.backend),
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
