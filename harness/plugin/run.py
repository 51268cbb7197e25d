"""The run: which backends are under test (--backend, --allow-unavailable), on which suite
(--suites) with which seed (--seed); whether gemmconf acts in this run at all (opt-in), the
markers, and the run's lines of the header. It publishes the selection (`facts.SELECTION`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gemmconf import bundled_suites, codecheck, isolation, pristine, provenance
from gemmconf.backends import (
    Backend,
    UnknownBackendError,
    record_name,
    resolve,
    split_specs,
)
from gemmconf.backends.base import declares_autotuning
from gemmconf.markers import MARKERS
from gemmconf.plugin import facts, options

DEFAULT_BACKEND = "reference"


OPTIONS = (
    options.Option(
        "--backend",
        metavar="NAME[,NAME...]",
        help="systems under test: built-ins (reference, eager, inductor, "
        "inductor-max-autotune[:TRITON|CUTLASS|ATEN,...]), dynamo:NAME[,key=value...] for a "
        "torch.compile backend registered by NAME (dynamo:openvino), names registered under "
        "the entry-point group gemmconf.backends, or package.module:attr; `gemmconf backends` "
        f"lists them. Default: {DEFAULT_BACKEND}.",
    ),
    options.flag(
        "--allow-unavailable",
        help="run even when a backend named by --backend is unavailable here (its items are "
        "skipped with the reason); without it, that is a usage error at start-up",
    ),
    options.Option(
        "--seed",
        default="0",
        metavar="N",
        help="run seed; each item's inputs are drawn from a seed derived from its id "
        "and this (default: 0)",
    ),
    options.Option(
        "--suites",
        metavar="PATH",
        help="the suite folder (scenario files and expectations/) to run. Default: the ini "
        "value gemmconf_suites when the project's ini sets it, else the suite installed with "
        "gemmconf",
    ),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.declare(parser, OPTIONS)
    parser.addini(
        "gemmconf_suites",
        "the suite folder, relative to this ini file (default: the suite installed with "
        "gemmconf; --suites overrides it)",
        default="",
    )


class RunSelection:
    """The run's backends, suite and seed (`facts.Selection`), kept in config.stash."""

    def __init__(self, config: pytest.Config, machine: facts.Machine):
        self.machine = machine
        path, _ = suites_location(config)
        self.suites_dir = suites_dir(config)
        self.suites_named = path is not None
        self.seed = _parse_seed(options.get(config, "seed"))
        named = options.get(config, "backend")
        text = DEFAULT_BACKEND if named is None else named
        self.backend_specs = split_specs(text)
        if named is not None and not all(self.backend_specs):
            raise pytest.UsageError(
                f"--backend {named!r}: an empty backend name (an unset variable?); "
                "name one or more backends, comma-separated"
            )
        self.backends: dict[str, Backend] = {}
        self.specs: dict[str, str] = {}  # label -> the --backend text that named it
        self.packages: dict[str, dict[str, str]] = {}  # label -> {distribution: version}
        # the results file's run fields: where it is written, not in each xdist worker
        self.names_packages = not hasattr(config, "workerinput")
        self.allow_unavailable = bool(options.get(config, "allow_unavailable"))
        if named is not None:
            self.resolve_backends()  # a bad --backend fails at start, whatever is collected
            if not hasattr(config, "workerinput"):
                self.check_available()

    def resolve_backends(self) -> None:
        if self.backends:
            return
        for spec in self.backend_specs:
            try:
                backend = isolation.configured_backend(spec, self.machine.run_options)
            except UnknownBackendError as exc:
                raise pytest.UsageError(f"--backend: {exc}") from None
            except ValueError as exc:  # a built-in rejecting its option
                raise pytest.UsageError(f"--backend {spec}: {exc}") from None
            label = record_name(spec, backend)
            self.backends[label] = backend
            self.specs[label] = spec
        if self.names_packages:
            provenance.read_distributions_soon()

    def name_packages(self) -> None:
        """Fill `packages` for the backends resolved so far (where the results file is written:
        xdist's workers name none). Called as the results file starts and as it is finished;
        what it reads was started in a thread when the backends were resolved."""
        if self.names_packages:
            for label, backend in self.backends.items():
                if label not in self.packages:
                    self.packages[label] = provenance.backend_packages(backend)

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
    "gemmconf.plugin.terse",
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


def pytest_configure(config: pytest.Config) -> None:
    """After `hardware`'s (tryfirst), whose machine the backends are made for."""
    if not is_active(config):
        return
    pristine.remember()  # PyTorch as eager must run it, before --backend imports anything
    for name, help_text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")
    conflict = codecheck.expecttest_accept_conflict(
        os.environ, options.numprocesses(config), getattr(config.option, "dist", None)
    )
    if conflict:
        raise pytest.UsageError(conflict)
    config.stash[facts.SELECTION] = RunSelection(config, config.stash[facts.MACHINE])


def pytest_gemmconf_autotuning_backends(config: pytest.Config) -> list[str]:
    """The --backend specs whose backend declares autotunes = True (a bad spec is left to the
    usage error it gets later)."""
    specs = options.get(config, "backend") or DEFAULT_BACKEND
    found = []
    for spec in (s for s in split_specs(specs) if s):
        try:
            backend = resolve(spec)
        except Exception:
            continue
        if declares_autotuning(backend):
            found.append(spec)
    return found


def pytest_report_header(config: pytest.Config) -> list[str]:
    selection = config.stash.get(facts.SELECTION, None)
    if selection is None:
        return []
    machine = config.stash[facts.MACHINE]
    execution = config.stash[facts.EXECUTION]
    shard = config.stash.get(facts.SHARD, None)
    cap = machine.capability
    taken = [f"{name} (gemmconf's: --gemmconf-{name[2:]})" for name in options.taken(config)]
    return [
        *([f"gemmconf: the project's own options: {', '.join(taken)}"] if taken else []),
        f"gemmconf: backends {', '.join(selection.backends)}; device {cap.name} "
        f"({cap.hardware_class}); seed {selection.seed}; target "
        f"{machine.target or 'none (no GPU, no --target-arch)'}; python {sys.version.split()[0]}",
        f"gemmconf: items run {'in a worker process' if execution.isolate else 'in-process'}; "
        f"item timeout {execution.timeouts.describe() if execution.isolate else 'none'}"
        f"{'' if shard is None else f'; shard {shard}'}",
    ]
