"""What one feature of the plugin tells another, and nothing more: each fact is written by one
feature, under its own key, and read by the others, so that no feature imports another (an
import-linter contract in pyproject.toml keeps them independent). A feature's own working state
stays in its own module, under a key of its own, as pytest's junitxml and skipping keep theirs.

Each key names the feature that writes it and when; a reader that runs earlier gets nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pytest

from gemmconf import capability
from gemmconf.backends import Backend, RunOptions
from gemmconf.shard import Shard

if TYPE_CHECKING:
    from gemmconf.isolation import ItemRequest, TimeoutPolicy
    from gemmconf.outcome import ItemOutcome
    from gemmconf.scenario import ScenarioInstance


@dataclass(frozen=True)
class Machine:
    """The hardware this process runs items on, and what the run asked of it."""

    capability: capability.Capability
    target_arch: str | None  # --target-arch: the class whose code is checked without its GPU
    required: frozenset[str]  # --require-hardware: classes whose skips are failures

    @property
    def device(self) -> str:
        return "cuda" if self.capability.device == "cuda" else "cpu"

    @property
    def target(self) -> str | None:
        """The class the code checks expect (None: no GPU and no --target-arch)."""
        return capability.target_class(self.capability, self.target_arch)

    @property
    def run_options(self) -> RunOptions:
        return RunOptions(target_arch=self.target_arch, device=self.device)

    def hardware_of(self, instance: ScenarioInstance) -> str:
        """The class of hardware an item runs on here (expectation entries' `hardware`): "cpu"
        where it runs on a CPU, else this machine's GPU class."""
        if capability.item_device(instance.requires, self.device) == "cpu":
            return "cpu"
        return self.capability.hardware_class


# `hardware`, in its pytest_configure (tryfirst: the others read it in theirs).
MACHINE = pytest.StashKey[Machine]()


class Selection(Protocol):
    """The systems under test and the suite: --backend, --seed, --suites."""

    suites_dir: Path
    suites_named: bool  # --suites or the ini named the folder (else: the installed suite)
    seed: int
    backend_specs: list[str]  # --backend's names, as given
    backends: dict[str, Backend]  # label -> backend; empty until `resolve_backends`
    specs: dict[str, str]  # label -> the --backend name it came from; filled with `backends`
    packages: dict[str, dict[str, str]]  # label -> {distribution: version} of its code; likewise

    def resolve_backends(self) -> None:
        """Make the backends (once): at start-up where --backend named them, else at
        collection, so that a run that collects no suite imports none."""
        ...


# `run`, in its pytest_configure.
SELECTION = pytest.StashKey[Selection]()


class ItemRunner(Protocol):
    def run(self, request: ItemRequest) -> ItemOutcome: ...


class Execution(Protocol):
    """Where items run: a worker process per run (isolated) or this one, with their timeouts."""

    isolate: bool
    timeouts: TimeoutPolicy

    def runner(self) -> ItemRunner:
        """The run's runner, made on first use (once the backends are resolved)."""
        ...

    def prestart(self, session: pytest.Session) -> None:
        """Start the worker process now, where items will run in one, so that it imports torch
        while pytest collects."""
        ...


# `isolating`, in its pytest_configure.
EXECUTION = pytest.StashKey[Execution]()

# `sharding`, in its pytest_configure, where --shard names this process's part.
SHARD = pytest.StashKey[Shard]()

# `sharding`, in its pytest_configure, where --durations-from names an earlier run's results:
# `<record id>@<backend>` -> what the item needed at its peak there, on this machine's device
# and hardware class (`gemmconf.memory.measured_peaks`); the memory ledgers admit by it.
MEASURED_PEAKS = pytest.StashKey[dict[str, int]]()
# `sharding`, likewise: what the item needed of the host's memory there
# (`gemmconf.memory.measured_host_peaks`); the host's ledger admits by it.
MEASURED_HOST_PEAKS = pytest.StashKey[dict[str, int]]()


@dataclass(frozen=True)
class Benchmarking:
    """--benchmark: passing items are timed next to cuBLAS."""

    mode: str  # --bench-mode


# `benchmark`, in its pytest_configure, where --benchmark is given.
BENCHMARK = pytest.StashKey[Benchmarking]()


@dataclass(frozen=True)
class ScenarioKey:
    """Which scenario instance and backend a pytest item runs (on the item's own stash)."""

    instance_id: str
    backend: str

    def __str__(self) -> str:
        return f"{self.instance_id}@{self.backend}"


# `items`, on each item it makes.
SCENARIO = pytest.StashKey[ScenarioKey]()
