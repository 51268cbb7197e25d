"""What crosses the process boundary between the pytest process and its isolation worker."""

from __future__ import annotations

from dataclasses import dataclass

from gemmconf.outcome import ItemOutcome
from gemmconf.scenario import ScenarioInstance


class WorkerError(Exception):
    """The worker answered something other than an item's outcome (not a backend fault); the
    message says what."""


@dataclass(frozen=True)
class ItemRequest:
    """One item for a runner: what `run_item` needs, with the backend named by its label."""

    instance: ScenarioInstance
    label: str
    seed: int
    device: str
    target: str | None
    repro: str
    benchmark: bool = False  # time the item after it passes (harness/bench.py)
    bench_mode: str = "wall"  # what a timed sample holds (bench.BENCH_MODES)
    compile_s: float = 0.0  # the backend's `compile_timeout_s`: extra seconds per compile


@dataclass
class Reply:
    kind: str  # "ready", "start_failed", "phase" (message: its name), "result", "error"
    result: ItemOutcome | None = None
    message: str = ""
    restart: bool = False  # the worker's CUDA context is poisoned: it exits after this reply
    pid: int = 0
