"""Suite files become pytest items: one per (scenario instance, backend), run through the run's
runner and reported with the whole diagnosis. The suite's files and every backend's expectations
(--expectations, --max-items, --max-elements) are loaded and validated here, once per run."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gemmconf import (
    attribution,
    bundled_suites,
    capability,
    expectations,
    ids,
    isolation,
    kinds,
    repro,
)
from gemmconf.backends import Backend
from gemmconf.backends.base import compile_allowance, for_item
from gemmconf.backends.cache import cache_dir
from gemmconf.backends.eager import EagerBackend
from gemmconf.checks import applicable_checks
from gemmconf.outcome import ItemOutcome, plain, render
from gemmconf.plugin import facts, options
from gemmconf.plugin.verdict import Decision, build_record
from gemmconf.scenario import (
    MAX_ELEMENTS,
    MAX_INSTANCES,
    ScenarioError,
    ScenarioInstance,
    discover,
    implied_markers,
    load_suite,
)
from gemmconf.scenario.facts import CACHE_NAME, Facts, suite_facts

EAGER = EagerBackend.name  # the baseline's label: PyTorch as it ships
# inductor's label: a backend that hands graphs to inductor meets inductor's failures (a note)
INDUCTOR = "inductor"


OPTIONS = (
    options.Option(
        "--expectations",
        action="append",
        default=[],
        metavar="PATH",
        help="an expectations file (xfail/skip entries; its 'backend:' names the backend it is "
        "for), used before the suite's and the backend package's own; repeatable",
    ),
    options.Option(
        "--max-items",
        default=MAX_INSTANCES,
        type=int,
        metavar="N",
        help=f"the most instances one scenario may expand to (default: {MAX_INSTANCES:,}); past "
        "it the suite file is an error naming the scenario",
    ),
    options.Option(
        "--max-elements",
        default=MAX_ELEMENTS,
        type=int,
        metavar="N",
        help="the most elements one instance's operands, bias and result may hold in a shape set, "
        f"and the largest extent (default: {MAX_ELEMENTS:,}); past it the suite file is an "
        "error naming the scenario",
    ),
)
pytest_addoption = options.registrar(OPTIONS)


class Collection:
    """This feature's state: the suite's instances by file, and each backend's expectations."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.root = Path(config.rootpath)
        self.instances: dict[Path, list[ScenarioInstance]] = {}
        self.tables: dict[str, expectations.ExpectationTable] = {}
        # eager's table, whether or not eager runs: what PyTorch itself is known to get wrong
        self.eager_table: expectations.ExpectationTable | None = None
        # the torch.compile layer: how torch.compile fails items with a pass-through backend,
        # which every backend built on it inherits
        self.layer_table: expectations.ExpectationTable | None = None
        # inductor's expected failures, for the note on another backend's same failure
        self.inductor_table: expectations.ExpectationTable | None = None

    def load(self, path: Path) -> list[ScenarioInstance]:
        path = path.resolve()
        if path not in self.instances:
            self.instances[path] = load_suite(
                path,
                root=self.root,
                max_instances=options.get(self.config, "max_items"),
                max_elements=options.get(self.config, "max_elements"),
            )
        return self.instances[path]

    def load_expectations(self) -> None:
        """Every backend's expectations (--expectations files, the suite's file, the backend
        package's), each entry validated against every instance of the whole suite: its facts,
        kept across processes (`scenario.facts`), so a process expands only the files it runs."""
        selection = self.config.stash[facts.SELECTION]
        suites_dir, backends = selection.suites_dir, selection.backends
        suite = suite_facts(
            discover([suites_dir], self.root),
            self.load,
            limits=(
                options.get(self.config, "max_items"),
                options.get(self.config, "max_elements"),
            ),
            cache=cache_dir(CACHE_NAME),
        )
        given = [
            expectations.read(self.config.invocation_params.dir / path, self.root)
            for path in options.get(self.config, "expectations")
        ]
        for file in given:
            if file.backend not in backends:
                raise ScenarioError(
                    file.shown,
                    "backend",
                    f"--expectations {file.path}: the file is for backend {file.backend!r}, "
                    f"which this run does not test (backends: {', '.join(backends)})",
                )
        directory = suites_dir / "expectations"
        for label, backend in backends.items():
            self.tables[label] = expectations.load(
                directory,
                label,
                suite,
                root=self.root,
                extra=[f for f in given if f.backend == label],
                packaged=expectations.packaged_files(backend, label),
            )
        self.eager_table = self._baseline_table(EAGER, directory, suite)
        self.layer_table = expectations.load_layer(directory, suite, root=self.root)
        self.inductor_table = self._baseline_table(INDUCTOR, directory, suite)

    def _baseline_table(
        self, label: str, directory: Path, suite: list[Facts]
    ) -> expectations.ExpectationTable | None:
        """A baseline's table (eager's, inductor's), for the notes on other backends' failures:
        this run's where the baseline runs, else the suite's file where it has one."""
        if label in self.tables:
            return self.tables[label]
        if expectations.path_for(directory, label).exists():
            return expectations.load(directory, label, suite, root=self.root)
        return None

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
        if label == EAGER:
            return None
        return _expected_failure(self.eager_table, instance_id, hardware, torch_version)

    def inductor_fails(
        self,
        instance_id: str,
        label: str,
        hardware: str | None = None,
        torch_version: str | None = None,
    ) -> expectations.Expectation | None:
        """Inductor's expected failure of this item here, for another backend's note (one that
        hands graphs to inductor meets it); None for inductor's own backends."""
        if label.startswith(INDUCTOR):
            return None
        return _expected_failure(self.inductor_table, instance_id, hardware, torch_version)

    def torch_compile_fails(
        self, instance_id: str, hardware: str | None = None, torch_version: str | None = None
    ) -> expectations.Expectation | None:
        """How torch.compile fails this item with a pass-through backend on this class of
        hardware and torch version (the torch.compile layer), or None."""
        if self.layer_table is None:
            return None
        return self.layer_table.lookup(instance_id, hardware, torch_version)


def _expected_failure(
    table: expectations.ExpectationTable | None,
    instance_id: str,
    hardware: str | None,
    torch_version: str | None,
) -> expectations.Expectation | None:
    """The xfail entry `table` has for this item on this hardware and torch version, or None."""
    entry = table.lookup(instance_id, hardware, torch_version) if table is not None else None
    return entry if entry is not None and entry.status == "xfail" else None


COLLECTION = pytest.StashKey[Collection]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[COLLECTION] = Collection(config)


def pytest_collection(session: pytest.Session) -> None:
    """Validate suite and expectation files up front: a bad file is a usage error, not a
    collection error, and no item runs from a half-valid suite."""
    if not _touches_suites(session.config):
        return
    session.config.stash[facts.SELECTION].resolve_backends()
    _check_pasted_ids(session.config)
    session.config.stash[facts.EXECUTION].prestart(session)  # its torch import overlaps loading
    _load_expectations(session.config)


def pytest_sessionstart(session: pytest.Session) -> None:
    """xdist's controller collects nothing, and a usage error raised in its workers reached the
    user as `INTERNALERROR ... no active workers` with the cause unshown: the controller
    validates the files itself, before the workers start (xdist starts them last)."""
    distributed = session.config.pluginmanager.has_plugin("dsession")
    if distributed and _touches_suites(session.config):
        session.config.stash[facts.SELECTION].resolve_backends()
        _check_pasted_ids(session.config)
        _load_expectations(session.config)


def _load_expectations(config: pytest.Config) -> None:
    try:
        config.stash[COLLECTION].load_expectations()
    except ScenarioError as exc:
        raise pytest.UsageError(f"invalid suite or expectations file: {exc}") from None


def _check_pasted_ids(config: pytest.Config) -> None:
    """A node id names its backend (`mm[fp32-...@my-gemm]`): pasted into a run that does not
    test that backend it would match no item, and pytest would say only "not found". A usage
    error naming the id's backend, the run's, and the --backend to add."""
    selection = config.stash[facts.SELECTION]
    for arg in config.args:
        name = arg.partition("::")[2]
        if "@" not in name or not name.endswith("]"):
            continue
        label = name[name.rindex("@") + 1 : -1]
        if label in selection.backends:
            continue
        known = _spec_from_results(config, label)
        hint = (
            f"add --backend {known}"
            if known
            else f"add --backend {label} (for a backend given as an import path, the path that "
            "names it: a backend runs under its own name, so --backend my_gemm:MyGemm runs as "
            "its `name`)"
        )
        default = "" if options.get(config, "backend") else " (the default: no --backend given)"
        raise pytest.UsageError(
            f"{arg}: the node id is of backend {label!r}, and this run tests "
            f"{', '.join(selection.backends)}{default}: {hint}"
        )


def _spec_from_results(config: pytest.Config, label: str) -> str | None:
    """The --backend text that ran `label` in the last results file, where it says."""
    import json

    path = config.invocation_params.dir / options.get(config, "results")
    try:
        specs = json.loads(path.read_text()).get("backend_specs") or {}
    except (OSError, ValueError, AttributeError):
        return None
    spec = specs.get(label) if isinstance(specs, dict) else None
    return str(spec) if spec else None


def _touches_suites(config: pytest.Config) -> bool:
    suites_dir = config.stash[facts.SELECTION].suites_dir
    for arg in config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == suites_dir or suites_dir in path.parents:
            return True
        if path in suites_dir.parents or path.suffix in (".yaml", ".yml"):
            return True
    return False


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    suites_dir = parent.config.stash[facts.SELECTION].suites_dir
    if file_path.suffix not in (".yaml", ".yml") or "expectations" in file_path.parts:
        return None
    if suites_dir not in file_path.resolve().parents:
        return None
    return SuiteFile.from_parent(parent, path=file_path)


class SuiteFile(pytest.File):
    def collect(self) -> Iterator[ScenarioItem]:
        collection = self.config.stash[COLLECTION]
        selection = self.config.stash[facts.SELECTION]
        try:
            instances = collection.load(self.path)
        except ScenarioError as exc:
            raise pytest.UsageError(f"invalid suite or expectations file: {exc}") from None
        if not collection.tables:
            selection.resolve_backends()
            collection.load_expectations()
        for instance in instances:
            for label, backend in selection.backends.items():
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


class UnexpectedFailure(Exception):
    """The backend got an item wrong in another way than its expectation entry expects (another
    failure kind, or a reason its `message` does not match): a failure, not an expected one."""


class HarnessError(Exception):
    """gemmconf itself failed on the item (its reference, inputs, worker, or a wrong scenario):
    the item is an error, never the backend's failure (and never an expected failure)."""


class ScenarioItem(pytest.Item):
    def __init__(self, *, instance: ScenarioInstance, backend: Backend, label: str, **kwargs):
        super().__init__(**kwargs)
        self.instance = instance
        self.backend = backend
        self.label = label
        self.stash[facts.SCENARIO] = facts.ScenarioKey(instance.id, label)
        for marker in implied_markers(instance):
            self.add_marker(marker)
        collection = self.config.stash[COLLECTION]
        machine = self.config.stash[facts.MACHINE]
        hardware, torch_version = machine.hardware_of(instance), machine.capability.torch_version
        # where the item runs, as the expectations' entries hold there (runtest looks again)
        self.hardware, self.torch_version = hardware, torch_version
        self.expected: expectations.Expectation | None = (
            collection.tables[label].lookup(instance.id, hardware, torch_version)
            if label in collection.tables
            else None
        )
        expected = self.expected
        if expected is not None and expected.status == "skip":
            self.add_marker(pytest.mark.skip(reason=self.expected_skip_reason()))
        elif expected is not None and expected.status == "xfail":
            self.add_marker(
                pytest.mark.xfail(
                    reason=expected.text(), strict=expected.strict, raises=ConformanceFailure
                )
            )
        # eager's expected failure of this item here; the run decides whether this backend's
        # failure is that one (runtest), and eager_note says which it is
        self.eager_entry = collection.eager_fails(instance.id, label, hardware, torch_version)
        self.eager_note: str | None = None
        self.eager_same = False  # this backend failed as eager is expected to (runtest)
        # how torch.compile itself fails the item here; the run decides whether this backend's
        # failure is that one (runtest)
        self.layer_entry = collection.torch_compile_fails(instance.id, hardware, torch_version)
        self.layer_note: str | None = None  # said where the failure is the layer's (runtest)
        self.device_note: str | None = None  # said where the backend changed torch's devices
        self.inductor_entry = collection.inductor_fails(instance.id, label, hardware, torch_version)
        self.inductor_note: str | None = None  # said where inductor fails it alike (runtest)
        self.outcome: ItemOutcome | None = None  # what the run found (runtest)
        self.as_expected = False  # the run failed as its expectation entry expects (runtest)
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
        if instance.inductor_config:
            self.record["inductor_config"] = dict(instance.inductor_config)
        if instance.dynamo_config:
            self.record["dynamo_config"] = dict(instance.dynamo_config)
        self.user_properties.append(("gemmconf", self.record))

    def requirements(self) -> capability.Requirements:
        """The scenario's requirements for this backend: a code-check `target` only where one of
        the item's code checks is this backend's; for another backend the item is a GEMM like
        any other (a torchao trial: 34 such items skipped, the advice `--target-arch` meaning
        nothing to it)."""
        requires = self.instance.requires
        if requires.target is None:
            return requires
        here, elsewhere = applicable_checks(self.instance, self.label, None)
        return requires if here or elsewhere else dataclasses.replace(requires, target=None)

    def expected_skip_reason(self) -> str:
        assert self.expected is not None
        return f"expected skip: {self.expected.text()}"

    def setup(self) -> None:
        machine = self.config.stash[facts.MACHINE]
        reason = self.backend.availability()
        if reason:
            self.skip_reason = f"backend {self.label} unavailable: {reason}"
            pytest.skip(self.skip_reason)
        unmet = capability.unmet(
            self.requirements(), machine.capability, target_arch=machine.target_arch
        )
        if unmet is not None:
            missing = getattr(unmet, "missing_class", None)
            text = getattr(unmet, "reason", str(unmet))
            if missing in machine.required:
                message = f"--require-hardware {missing}: this item would be skipped: {text}"
                self.setup_failure = (kinds.MISSING_HARDWARE, message)
                pytest.fail(message, pytrace=False)
            self.record["skip_class"] = missing
            self.skip_reason = text
            pytest.skip(text)

    def runtest(self) -> None:
        machine = self.config.stash[facts.MACHINE]
        device = capability.item_device(self.instance.requires, machine.device)
        benchmarking = self.config.stash.get(facts.BENCHMARK, None) if device == "cuda" else None
        request = isolation.ItemRequest(
            self.instance,
            self.label,
            seed=self.config.stash[facts.SELECTION].seed,
            device=device,
            target=machine.target,
            repro=self.repro_command(),
            benchmark=benchmarking is not None,
            **({} if benchmarking is None else {"bench_mode": benchmarking.mode}),
            compile_s=compile_allowance(for_item(self.backend, self.instance)),
        )
        try:
            outcome = self.config.stash[facts.EXECUTION].runner().run(request)
        except isolation.WorkerError as exc:
            outcome = ItemOutcome.harness("the isolation worker", exc)
        self.outcome = outcome
        if outcome.passed:
            return
        message = render(outcome, repro=self.repro_command())
        text = message.text
        if outcome.harness_error:
            raise HarnessError(text)
        text += f"\n{self.standalone_line()}"
        self.eager_same, self.eager_note = eager_note(self.eager_entry, outcome, message.reason)
        if self.eager_note:
            text += f"\n\n{self.eager_note}"
        self.layer_note = layer_note(self.layer_entry, outcome, message.reason)
        if self.layer_note:
            text += f"\n\n{self.layer_note}"
        elif outcome.device_changed:
            self.device_note = device_note(outcome.device_changed)
            text += f"\n\n{self.device_note}"
        self.inductor_note = inductor_note(self.inductor_entry, outcome, message.reason)
        if self.inductor_note:
            text += f"\n\n{self.inductor_note}"
        expected = self.expected
        if expected is None or not expected.expects_failure:
            raise ConformanceFailure(text)
        self.as_expected = expected.expects(outcome.kind, message.reason)
        if not self.as_expected:
            later = self._entry_expecting((outcome.kind, message.reason))
            if later is None:  # not what the entry expects: pytest's xfail must not take it
                raise UnexpectedFailure(f"{text}\n\nNot the failure expected: {expected.text()}")
            # a later entry expects this failure: it decides, whatever the first one's marker
            self.expected, self.as_expected = later, True
            pytest.xfail(f"{later.text()}\n\n{text}")
        if expected.status == "either":
            pytest.xfail(f"{expected.text()}\n\n{text}")
        raise ConformanceFailure(text)

    def _entry_expecting(self, failure: tuple[str | None, str]) -> expectations.Expectation | None:
        """A later entry than the item's first that expects this failure (the table's rule:
        `ExpectationTable.deciding`), or None."""
        table = self.config.stash[COLLECTION].tables.get(self.label)
        if table is None:
            return None
        entry = table.deciding(self.instance.id, self.hardware, self.torch_version, failure)
        return None if entry is self.expected else entry

    def repro_command(self) -> str:
        selection = self.config.stash[facts.SELECTION]
        target_arch = self.config.stash[facts.MACHINE].target_arch
        given = ["--backend", selection.specs[self.label], "--seed", str(selection.seed)]
        if target_arch:
            given += ["--target-arch", target_arch]
        suites = selection.suites_dir
        try:
            installed = bundled_suites().resolve()
        except FileNotFoundError:  # a checkout without its suite installed
            installed = None
        return ids.reproduce_command(
            self.path,
            self.instance.id,
            self.label,
            given,
            suites=suites,
            # `gemmconf run` names the installed suite itself: no --suites for it
            explicit_suites=selection.suites_named and suites != installed,
            cwd=self.config.invocation_params.dir,
        )

    def standalone_line(self) -> str:
        """How to write this item's standalone repro (gemmconf.repro), or why none can be."""
        why = repro.unsupported(self.instance)
        if why is not None:
            return f"{ids.NO_STANDALONE} ({why}): run the item again as above"
        spec = self.config.stash[facts.SELECTION].specs[self.label]
        command = ids.standalone_command(
            self.instance.id,
            spec,
            seed=self.config.stash[facts.SELECTION].seed,
            target_arch=self.config.stash[facts.MACHINE].target_arch,
        )
        return (
            f"Standalone repro (a Python file that needs {ids.standalone_needs(spec)}): {command}"
        )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style=None) -> str:
        if isinstance(excinfo.value, ConformanceFailure | UnexpectedFailure | HarnessError):
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
            whose = {
                "eager_fails": self.eager_entry is not None,
                "inherited": attribution.inherited(
                    before_backend=outcome.before_backend or self.layer_note is not None,
                    eager_fails=self.eager_same,
                    computed_by=outcome.computed_by,
                ),
            }
            if self.as_expected:  # the record says which entry expected it, as an xpass's does
                assert self.expected is not None
                notes = (
                    f"Expected to fail: {self.expected.text()}",
                    self.eager_note,
                    self.layer_note,
                    self.device_note,
                    self.inductor_note,
                )
                note = "\n\n".join(n for n in notes if n)
                return Decision("xfailed", run=outcome, note=note, **whose)
            unexpected = (  # an entry expected another failure: the record says which
                f"Not the failure expected: {self.expected.text()}"
                if self.expected is not None and self.expected.expects_failure
                else None
            )
            notes = (
                unexpected,
                self.standalone_line(),
                self.eager_note,
                self.layer_note,
                self.device_note,
                self.inductor_note,
            )
            note = "\n\n".join(n for n in notes if n)
            return Decision("failed", run=outcome, note=note, **whose)
        if report.failed:  # teardown
            return _harness_decision("tearing the item down", call)
        return None


def device_note(changed: tuple[str, ...]) -> str:
    """Why a failure while dynamo traced the program is the backend's own: it changed torch's
    devices (gemmconf.pristine.device_changed), and the torch.compile layer lists no such
    failure of the item."""
    return (
        "Not inherited from torch.compile: the backend changed torch in this process: "
        + "; ".join(changed)
        + ". torch.compile fails while tracing any program in such a process, whatever the "
        "backend does with the graph, and the torch.compile layer "
        "(suites/expectations/torch_compile.yaml) lists no such failure of this item: the "
        "failure is counted as the backend's own."
    )


def eager_note(
    entry: expectations.Expectation | None, outcome: ItemOutcome, reason: str
) -> tuple[bool, str | None]:
    """Whether this failure is the one eager is expected to fail this item with here (the
    `entry` expects its kind and reason), and the paragraph said beside it; (False, None) where
    eager is not expected to fail the item. Only the same failure can be inherited from eager:
    a crash where eager's rows merely differ in the last bits is the backend's own."""
    if entry is None:
        return False, None
    if entry.expects(outcome.kind, reason):
        return True, (
            f"Eager PyTorch is expected to fail this item the same way: {entry.text()}. A "
            "backend that leaves this op to aten inherits that."
        )
    return False, (
        f"Eager PyTorch is expected to fail this item too, but not this way: {entry.text()}. "
        "This failure is the backend's own."
    )


def inductor_note(
    entry: expectations.Expectation | None, outcome: ItemOutcome, reason: str
) -> str | None:
    """Where inductor is expected to fail this item with this kind and reason, the paragraph
    that says so: a backend that hands graphs to inductor (a fallback, a splitter) meets
    inductor's failures. A hint only: the failure stays the backend's own (a lightning-thunder
    trial, 2026-11-30: 90 of its 146 own failures were inductor's, found by a second run).
    None for a backend that never went through dynamo (it hands inductor no graph), and "the
    same way" only where the entry names the kind or the reason (a torchao trial, 2026-12-02:
    its err_ratio of 5,614 read as inductor's batch-invariance gap, whose entry names neither)."""
    if entry is None or not outcome.through_dynamo or not entry.expects(outcome.kind, reason):
        return None
    how = (
        "the same way"
        if entry.kind is not None or entry.message is not None
        else "too, in a way its entry does not name"
    )
    return (
        f"Inductor is expected to fail this item {how}: {entry.text()}. Where this "
        "backend hands the graph to inductor, the defect may be inductor's; counted as this "
        "backend's own all the same."
    )


def layer_note(
    entry: expectations.Expectation | None, outcome: ItemOutcome, reason: str
) -> str | None:
    """Where this failure is torch.compile's (the layer's `entry` expects this kind and reason,
    and dynamo traced the backend's program), the paragraph that says so; else None: a failure
    the pass-through does not share, or a backend that never went through dynamo, is its own."""
    if entry is None or not outcome.through_dynamo or not entry.expects(outcome.kind, reason):
        return None
    return (
        "torch.compile fails this item the same way with a backend that does nothing of its "
        f"own: {entry.text()}. Inherited from torch.compile, not counted among this backend's "
        "own failures (--count-inherited counts it)."
    )


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
            capability = item.config.stash[facts.MACHINE].capability
            environment = plain(capability.as_record())  # xdist-safe
            record = build_record(
                item.record, decision, duration_s=report.duration, environment=environment
            )
            report.user_properties = [
                (k, v) for k, v in report.user_properties if k != "gemmconf"
            ] + [("gemmconf", record)]
    return report
