"""Where and how items run: --no-isolate, --item-timeout, --first-result-timeout,
--gpu-memory-budget, --confirm-failures (the runners are gemmconf.isolation). It publishes where
items run (`facts.EXECUTION`): the items feature asks it for the runner."""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from gemmconf import capability, chunked, integrity, isolation, memory
from gemmconf.backends.base import declares_autotuning
from gemmconf.isolation.budget import RunBudget
from gemmconf.isolation.timeouts import (
    AUTOTUNE_FIRST_RESULT_S,
    FIRST_RESULT_S,
    parse_first_result,
)
from gemmconf.plugin import facts, options
from gemmconf.record import Record, typed

PROCESS_RESERVE_BYTES = memory.PROCESS_RESERVE_BYTES  # each GPU worker's own (memory.py)
MIN_SHARED_BYTES = memory.MIN_SHARED_BYTES
# The host's memory on GPU machines (each item's fp64 reference inputs live there): this share of
# it, less what each pytest process and its isolation worker take for themselves.
HOST_SHARE = 0.8
HOST_PROCESS_RESERVE_BYTES = 3 << 30

WORKERINPUT_KEY = "gemmconf_ledger_dir"


OPTIONS = (
    options.flag(
        "--no-isolate",
        help="run items in the pytest process (for a debugger; implied by --pdb and "
        "--trace): no per-item timeout, and a backend that crashes ends the run. By "
        "default each item runs in a worker process that is replaced when a backend "
        "crashes, hangs or faults the GPU, so that costs only the item",
    ),
    options.Option(
        "--item-timeout",
        default="auto",
        metavar="SECONDS",
        help="fail an item that takes longer in all (its worker is killed and replaced); "
        "0: no timeout; default 'auto': each phase of the item has its own budget, scaled "
        "to the item (inputs and eager; time to first result; further shape sets; checks). "
        "A timeout is charged only after a rerun alone, with no other item running, timed "
        "out too. Ignored with --no-isolate",
    ),
    options.Option(
        "--first-result-timeout",
        default="auto",
        metavar="SECONDS",
        help="under --item-timeout auto: the time to an item's first result (compile, "
        f"autotune, JIT and the first call); 0: none; default 'auto': {FIRST_RESULT_S:g} s, "
        f"{AUTOTUNE_FIRST_RESULT_S:g} s for a backend that declares autotunes = True, plus "
        "the backend's compile_timeout_s, plus 300 s in a fresh worker",
    ),
    options.Option(
        "--gpu-memory-budget",
        metavar="GB",
        help="the GPU memory (decimal GB) the run may use per GPU, e.g. 24 to run as on a "
        "24 GB GPU: xdist workers on one GPU share it (an item waits until its estimated "
        "memory, or with --durations-from its measured peak, is free; one larger than the "
        "share runs alone), and each worker process is "
        "capped to it; -n auto sizes the workers of a GPU to it (--workers-per-gpu). Default: "
        "the GPU's memory. On a CPU-only machine it budgets the "
        "items' memory the same way (a simulation)",
    ),
    options.Option(
        "--confirm-failures",
        default="0",
        metavar="N",
        help="rerun each failed item N times, each in a fresh worker with the same seed; the "
        "record counts runs and failures (metrics confirm_runs, confirm_failed) and an item "
        "that passed on a rerun is marked flaky (it stays failed: the summary lists it). "
        "Default 0",
    ),
)
pytest_addoption = options.registrar(OPTIONS)


def parse_item_timeout(text: str) -> isolation.TimeoutPolicy:
    try:
        return isolation.parse_timeout(text)
    except ValueError as exc:
        raise pytest.UsageError(f"--item-timeout: {exc}") from None


def parse_timeouts(config: pytest.Config) -> isolation.TimeoutPolicy:
    """--item-timeout and --first-result-timeout, as one policy."""
    policy = parse_item_timeout(options.get(config, "item_timeout"))
    try:
        return parse_first_result(options.get(config, "first_result_timeout"), policy)
    except ValueError as exc:
        raise pytest.UsageError(f"--first-result-timeout: {exc}") from None


def parse_budget(text: str | None) -> int | None:
    """--gpu-memory-budget GB as bytes (None: not given)."""
    if text is None:
        return None
    gb = options.number(
        "--gpu-memory-budget",
        text,
        float,
        lambda v: math.isfinite(v) and v > 0,
        "a positive number of GB (e.g. 24)",
    )
    return int(gb * 1e9)


def parse_confirm(text: str) -> int:
    return options.number(
        "--confirm-failures", text, int, lambda v: v >= 0, "a number of reruns >= 0"
    )


class Isolation:
    """Where the run's items run (`facts.Execution`), and the ledgers its processes share."""

    def __init__(self, config: pytest.Config, ledger_dir: Path):
        self.config = config
        self.ledger_dir = ledger_dir
        # a debugger (--pdb, --trace) must see the backend's frames: that needs the item here
        self.isolate = not (
            options.get(config, "no_isolate")
            or config.getoption("usepdb", False)
            or config.getoption("trace", False)
        )
        self.timeouts = parse_timeouts(config)
        self.budget = parse_budget(options.get(config, "gpu_memory_budget"))
        self.confirm = parse_confirm(options.get(config, "confirm_failures"))
        self.records: list[dict[str, Any]] = []  # the run's, once its results are written
        self._runner: isolation.IsolatedRunner | isolation.InProcessRunner | None = None

    def runner(self) -> isolation.IsolatedRunner | isolation.InProcessRunner:
        """Where items run: a worker process (started after collection), or here."""
        if self._runner is None:
            self._runner = make_runner(
                self,
                self.config.stash[facts.MACHINE],
                self.config.stash[facts.SELECTION],
            )
        return self._runner

    def prestart(self, session: pytest.Session) -> None:
        """Start the isolation worker now, so that it imports torch while pytest collects: from
        `pytest_collection` in a run that touches the suite (its backends resolved), else once
        collection found scenario items. Not in xdist's controller (its workers run the
        items)."""
        if (
            self.isolate
            and not session.config.option.collectonly
            and not session.config.pluginmanager.has_plugin("dsession")
        ):
            self.runner().prestart()

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None


ISOLATION = pytest.StashKey[Isolation]()


def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and workerinput.get(WORKERINPUT_KEY):
        directory = Path(workerinput[WORKERINPUT_KEY])
    else:
        directory = Path(tempfile.mkdtemp(prefix="gemmconf-ledger-"))
        config.add_cleanup(lambda: shutil.rmtree(directory, ignore_errors=True))
    state = Isolation(config, directory)
    config.stash[ISOLATION] = state
    config.stash[facts.EXECUTION] = state
    config.add_cleanup(state.close)


def pytest_gemmconf_memory_budget(config: pytest.Config) -> int | None:
    return parse_budget(options.get(config, "gpu_memory_budget"))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: every worker of the run shares the controller's ledgers."""
    node.workerinput[WORKERINPUT_KEY] = str(node.config.stash[ISOLATION].ledger_dir)


def workers_per_device() -> int:
    """How many pytest processes of the run share this process's GPU (xdist pins each to one)."""
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    gpus = max(len(capability.gpu_ids()) or 1, 1)
    return max(1, -(-count // gpus))


def device_budget(
    machine: facts.Machine, simulated: int | None
) -> tuple[str | None, int | None, int | None]:
    """(the ledger's key, the budget per GPU, what its items share), or Nones: not budgeted.
    `simulated`: --gpu-memory-budget."""
    total = machine.capability.memory_bytes
    if machine.device == "cuda":
        budget = min(simulated, total) if simulated and total else simulated or total
        if budget is None:
            return None, None, None
        key = f"gpu-{os.environ.get('CUDA_VISIBLE_DEVICES', '0')}"
        return key, budget, memory.shared_bytes(budget, workers_per_device())
    if simulated is None:
        return None, None, None
    return "cpu", simulated, simulated


def host_budget(machine: facts.Machine) -> int | None:
    """What the items of a GPU machine share of its host memory (None: not budgeted)."""
    if machine.device != "cuda":
        return None
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    return max(int(total * HOST_SHARE) - workers * HOST_PROCESS_RESERVE_BYTES, total // 4)


def make_runner(
    state: Isolation, machine: facts.Machine, selection: facts.Selection
) -> isolation.IsolatedRunner | isolation.InProcessRunner:
    """The run's runner, with the machine's, the host memory's and its GPU's ledgers."""
    key, budget, shared = device_budget(machine, state.budget)
    run_budget = RunBudget(
        state.ledger_dir,
        device_key=key,
        shared_bytes=shared,
        host_bytes=host_budget(machine),
    )
    autotunes = frozenset(
        label for label, backend in selection.backends.items() if declares_autotuning(backend)
    )
    measured = state.config.stash.get(facts.MEASURED_PEAKS, {})
    measured_host = state.config.stash.get(facts.MEASURED_HOST_PEAKS, {})
    if not state.isolate:
        if shared is not None and machine.device == "cuda":
            os.environ[memory.SHARED_ENV] = str(shared)
        return isolation.InProcessRunner(
            selection.backends,
            budget=run_budget,
            confirm_failures=state.confirm,
            autotunes=autotunes,
            measured=measured,
            measured_host=measured_host,
        )
    env: dict[str, str] = {}
    if machine.device == "cuda" and shared is not None:
        env[memory.SHARED_ENV] = str(shared)
        if state.budget and budget is not None:
            env[memory.BUDGET_ENV] = str(budget)
    return isolation.IsolatedRunner(
        selection.specs,
        machine.run_options,
        timeouts=state.timeouts,
        budget=run_budget,
        confirm_failures=state.confirm,
        autotunes=autotunes,
        worker_env=env,
        measured=measured,
        measured_host=measured_host,
        timing=state.config.stash.get(facts.BENCHMARK, None) is not None,
        warm_cuda=machine.device == "cuda",
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    if any(facts.SCENARIO in item.stash for item in session.items):
        session.config.stash[ISOLATION].prestart(session)


@pytest.hookimpl(trylast=True)  # after the run's header lines (`run`)
def pytest_report_header(config: pytest.Config) -> list[str]:
    selection = config.stash.get(facts.SELECTION, None)
    if selection is None or not selection.backends:
        return []
    state = config.stash[ISOLATION]
    machine = config.stash[facts.MACHINE]
    lines = []
    simulated = state.budget
    if machine.device == "cuda" or simulated:
        budget = simulated or machine.capability.memory_bytes or 0
        what = "simulated" if simulated else "the GPU's memory"
        lines.append(
            f"gemmconf: memory budget {budget / 1e9:g} GB per {machine.device} ({what}); workers "
            "sharing it wait for an item's estimated memory, items larger than their share run "
            f"alone; fp64 references in pieces of at most {memory.gib(chunked.CHUNK_BYTES)}"
        )
        measured = config.stash.get(facts.MEASURED_PEAKS, {})
        if measured:
            lines.append(
                f"gemmconf: {len(measured)} item(s) measured on "
                f"{machine.capability.hardware_class} in --durations-from's results are "
                "admitted by their measured peak (tensors x "
                f"{memory.MEASURED_MARGIN:g}, or the allocator's reserve where less, + "
                f"{memory.size(memory.MEASURED_SLACK_BYTES)}; at most their estimate)"
            )
        measured_host = config.stash.get(facts.MEASURED_HOST_PEAKS, {})
        if measured_host and host_budget(machine) is not None:
            lines.append(
                f"gemmconf: {len(measured_host)} item(s) measured on "
                f"{machine.capability.hardware_class} in --durations-from's results are "
                "admitted to the host's memory by their measured peak (resident set added x "
                f"{memory.HOST_MEASURED_MARGIN:g} + "
                f"{memory.size(memory.HOST_MEASURED_SLACK_BYTES)}; above their estimate where "
                "measured so)"
            )
    if state.isolate and state.timeouts.fixed is None:
        autotuning = [label for label, b in selection.backends.items() if declares_autotuning(b)]
        first = state.timeouts.first_result
        first_text = (
            ("none" if not first else f"{first:g} s")
            if first is not None
            else f"{FIRST_RESULT_S:g} s"
            + (f", {AUTOTUNE_FIRST_RESULT_S:g} s for {', '.join(autotuning)}" if autotuning else "")
            + " (+ compile_timeout_s)"
        )
        lines.append(
            f"gemmconf: time to first result (compile, autotune, JIT) {first_text}; each phase "
            "has its own budget; a timeout is charged after a rerun alone"
        )
    if state.confirm:
        lines.append(f"gemmconf: failed items are rerun {state.confirm} time(s) to tell flaky ones")
    gap = None
    if machine.device == "cpu":
        gap = integrity.cpu_poison_gap(in_this_process=not state.isolate)
    if gap is not None:
        lines.append(f"gemmconf: {gap}")
    return lines


def pytest_gemmconf_run_finished(
    results_path: Path, records: list[dict[str, Any]], config: pytest.Config
) -> None:
    config.stash[ISOLATION].records = records


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(ISOLATION, None)
    for line in reliability_lines(state.records if state is not None else []):
        terminalreporter.write_line(line, yellow=True)


def reliability_lines(
    records: Sequence[Record | Mapping[str, Any]], *, shown: int = 10
) -> list[str]:
    """Flaky items, timeouts not charged, and items that took more memory than estimated."""
    lines: list[str] = []
    read = typed(records)

    def listed(title: str, rows: list[str]) -> None:
        if rows:
            more = f" (and {len(rows) - shown} more)" if len(rows) > shown else ""
            lines.append(f"gemmconf: {title}{more}:")
            lines.extend(f"  {row}" for row in rows[:shown])

    listed(
        "flaky items (failed on some runs with the same seed, passed on others)",
        [
            f"{r.id}@{r.backend}: failed {1 + r.metric.confirm_failed} of "
            f"{1 + r.metric.confirm_runs} runs"
            for r in read
            if r.metric.flaky
        ],
    )
    listed(
        "timeouts not charged (rerun alone, the item finished in time)",
        [
            f"{r.id}@{r.backend}: {r.metric.timeout_unconfirmed.get('first', '')}"
            for r in read
            if r.metric.timeout_unconfirmed is not None
        ],
    )
    # what the estimate models: the item's tensors at their peak (what the allocator reserved
    # also holds blocks the worker kept from earlier items)
    listed(
        "items that took more GPU memory than estimated (see metrics.memory_*)",
        [
            f"{r.id}@{r.backend}: "
            f"{memory.size(r.metric.memory_peak_allocated_bytes)} in tensors > "
            f"{memory.size(r.metric.memory_estimate_bytes)}"
            for r in read
            if r.metric.memory_peak_allocated_bytes is not None
            and r.metric.memory_estimate_bytes is not None
            and r.metric.memory_peak_allocated_bytes > r.metric.memory_estimate_bytes
        ],
    )
    alone = sum(bool(r.metric.memory_alone) for r in read)
    waited = [r.metric.memory_wait_s for r in read if r.metric.memory_wait_s]
    if alone or waited:
        lines.append(
            f"gemmconf: {len(waited)} item(s) waited for memory ({sum(waited):.0f} s in all"
            f"{_by_ledger(read)}); {alone} ran alone (larger than the GPU's shared budget)"
        )
    lines.extend(admission_lines(read))
    return lines


def admission_lines(read: Sequence[Record]) -> list[str]:
    """How many items the memory ledgers admitted by an earlier run's measured peak
    (--durations-from), and how many of those ran out of memory and were rerun by their
    estimate; then the same of the host's ledger; nothing where no item was admitted by
    measurement."""
    lines = []
    admitted = [r for r in read if r.metric.memory_admitted_by is not None]
    retried = [r for r in read if r.metric.memory_measured_retry is not None]
    measured = sum(r.metric.memory_admitted_by == memory.BY_MEASURE for r in admitted)
    if measured or retried:
        waited = sum(r.metric.memory_wait_s or 0.0 for r in admitted)
        lines.append(
            f"gemmconf: memory admitted {measured + len(retried)} of {len(admitted)} item(s) by "
            f"their measured peak (--durations-from), the others by their estimate; "
            f"{len(retried)} of them ran out of memory and were rerun by their estimate "
            "(metrics.memory_measured_retry); "
            f"{waited:.0f} s waited for memory in all{_by_ledger(admitted)}"
        )
    on_host = [r for r in read if r.metric.host_memory_admitted_by is not None]
    by_host = sum(r.metric.host_memory_admitted_by == memory.BY_MEASURE for r in on_host)
    if by_host:
        waited = sum((r.metric.memory_waits_s or {}).get("host", 0.0) for r in on_host)
        lines.append(
            f"gemmconf: host memory admitted {by_host} of {len(on_host)} item(s) by their "
            "measured peak (--durations-from: metrics.host_memory_peak_bytes), the others by "
            f"their estimate; {waited:.0f} s waited for the host's memory"
        )
    return lines


def _by_ledger(read: Sequence[Record]) -> str:
    """': gpu 12 s, host 3 s': the seconds waited for each ledger (metrics.memory_waits_s)."""
    ledgers: dict[str, float] = {}
    for record in read:
        for name, seconds in (record.metric.memory_waits_s or {}).items():
            ledgers[name] = ledgers.get(name, 0.0) + seconds
    shown = [(name, seconds) for name, seconds in sorted(ledgers.items()) if seconds >= 0.5]
    return (": " + ", ".join(f"{name} {s:.0f} s" for name, s in shown)) if shown else ""
