"""Hardware: --require-hardware, --target-arch, one GPU (or one OpenMP thread) per xdist worker,
and how many workers ``-n auto`` starts on GPUs (--workers-per-gpu). It detects the machine and
publishes it (`facts.MACHINE`)."""

from __future__ import annotations

import os
import re

import pytest

from gemmconf import capability
from gemmconf.inputs import LARGE_DRAW_THREADS_ENV
from gemmconf.plugin import facts, options, scheduling

# -n auto on GPUs, for a backend that does not autotune: at most one worker per this much of a
# GPU's memory (budget), and per CPU core.
WORKER_MEMORY_BYTES = 6 << 30

AUTO_WORKERS = pytest.StashKey[str]()  # what -n auto chose, and why (the header says it)


OPTIONS = (
    options.Option(
        "--require-hardware",
        action="append",
        default=[],
        metavar="CLASS",
        help="turn a skip for missing CLASS (cpu, sm80, sm89, sm90, sm100, sm120) into a "
        "failure, so a run that should have had the hardware cannot pass by skipping; "
        "repeatable",
    ),
    options.Option(
        "--target-arch",
        metavar="smXY",
        help="code-check target (sm80, sm90, sm100, sm120) for backends that cross-compile "
        "(the reference backend does): checks and items for that class run without "
        "such a GPU",
    ),
    options.Option(
        "--workers-per-gpu",
        metavar="N",
        help="with -n auto on a GPU machine: N xdist workers per GPU. Default: 1 per GPU when a "
        "backend declares autotunes = True (autotuning side by side, workers would time each "
        "other's kernels), else one per CPU core and per 6 GiB of the GPU's memory budget",
    ),
)
pytest_addoption = options.registrar(OPTIONS)


TARGETS = ("sm80", "sm90", "sm100", "sm120")


def parse_target(text: str | None) -> str | None:
    if text is not None and text not in TARGETS:
        raise pytest.UsageError(f"--target-arch: {text!r} is not one of {', '.join(TARGETS)}")
    return text


def parse_required(values: list[str]) -> frozenset[str]:
    try:
        return capability.parse_required_hardware(values)
    except ValueError as exc:
        raise pytest.UsageError(f"--require-hardware: {exc}") from None


def pin_worker(config: pytest.Config) -> None:
    """xdist workers: one GPU each (before CUDA starts), and an even share of the host's cores
    for torch's CPU threads (`cpu_share`; OMP_NUM_THREADS, which the isolation workers inherit,
    unless it is set already), more while an item draws large inputs (`large_draw_threads`)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    index = int(re.sub(r"\D", "", worker) or 0)
    gpus = visible_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"))
    if gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[index % len(gpus)]
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    cpus = os.cpu_count() or 1
    share = cpu_share(cpus, workers)
    threads = os.environ.setdefault("OMP_NUM_THREADS", str(share))
    os.environ.setdefault(LARGE_DRAW_THREADS_ENV, str(large_draw_threads(cpus, workers)))
    import torch

    torch.set_num_threads(int(threads) if threads.isdigit() and int(threads) > 0 else share)


def visible_gpus(cuda_visible_devices: str | None) -> list[str]:
    """The GPUs the workers share: CUDA_VISIBLE_DEVICES's entries where it is set, the host's
    where it is not. Set and empty (or -1) hides every GPU, as CUDA reads it: a run on the CPU of
    a GPU host (before 2026-11-29 an empty value pinned each worker to a GPU of the host)."""
    if cuda_visible_devices is None:
        return capability.gpu_ids()
    entries = [entry.strip() for entry in cuda_visible_devices.split(",")]
    visible = []
    for entry in entries:
        if not entry or entry.startswith("-"):
            break  # CUDA stops at the first invalid entry
        visible.append(entry)
    return visible


def cpu_share(cpus: int, workers: int) -> int:
    """torch's CPU threads per xdist worker: the host's cores split evenly. Every worker's
    thread pool sized to the whole host oversubscribes it (13 workers x 16 threads on a 16-core
    GPU host), and a CPU-bound suite then spends cores on threads waiting for each other."""
    return max(1, cpus // max(1, workers))


def large_draw_threads(cpus: int, workers: int) -> int:
    """torch's CPU threads per xdist worker while an item draws inputs past
    `gemmconf.inputs.PARALLEL_DRAW_ELEMENTS` (seconds of CPU work each): such items are heavy
    and run in `scheduling.lane_count` of the workers, so each may take cores / lanes."""
    return max(cpu_share(cpus, workers), cpus // scheduling.lane_count(workers))


def parse_workers_per_gpu(text: str | None) -> int | None:
    if text is None:
        return None
    return options.number("--workers-per-gpu", text, int, lambda v: v >= 1, "a number >= 1")


def auto_workers(
    *,
    gpus: int,
    cpus: int,
    autotuning: list[str],
    per_gpu: int | None = None,
    memory_bytes: int | None = None,
) -> tuple[int, str]:
    """(xdist workers for -n auto on `gpus` GPUs, why), as the --workers-per-gpu help says."""
    if per_gpu is not None:
        return per_gpu * gpus, f"{per_gpu} per GPU (--workers-per-gpu)"
    if autotuning:
        return gpus, f"1 per GPU: {', '.join(autotuning)} autotunes (--workers-per-gpu N to change)"
    by_cpu = max(1, cpus // gpus)
    by_memory = max(1, memory_bytes // WORKER_MEMORY_BYTES) if memory_bytes else by_cpu
    if by_memory < by_cpu:
        return by_memory * gpus, (
            f"{by_memory} per GPU: one per {WORKER_MEMORY_BYTES >> 30} GiB of its "
            f"{memory_bytes / 1e9:g} GB (--workers-per-gpu N to change)"
        )
    return by_cpu * gpus, f"{by_cpu} per GPU: one per CPU core (--workers-per-gpu N to change)"


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """-n auto on a GPU machine: a number of workers safe for the GPUs (None: xdist's own)."""
    gpus = visible_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"))
    per_gpu = parse_workers_per_gpu(options.get(config, "workers_per_gpu"))
    if not gpus:
        return None
    budget = config.hook.pytest_gemmconf_memory_budget(config=config)
    total = capability.gpu_memory_bytes()
    memory = min(budget, total) if budget and total else budget or total
    count, why = auto_workers(
        gpus=len(gpus),
        cpus=os.cpu_count() or 1,
        autotuning=config.hook.pytest_gemmconf_autotuning_backends(config=config) or [],
        per_gpu=per_gpu,
        memory_bytes=memory,
    )
    config.stash[AUTO_WORKERS] = f"-n auto: {count} xdist worker(s) on {len(gpus)} GPU(s), {why}"
    return count


@pytest.hookimpl(tryfirst=True)  # the others read the machine in their own pytest_configure
def pytest_configure(config: pytest.Config) -> None:
    parse_workers_per_gpu(options.get(config, "workers_per_gpu"))
    target_arch = parse_target(options.get(config, "target_arch"))
    required = parse_required(options.get(config, "require_hardware"))
    pin_worker(config)  # before anything starts CUDA
    config.stash[facts.MACHINE] = facts.Machine(capability.detect(), target_arch, required)


def pytest_report_header(config: pytest.Config) -> list[str]:
    chosen = config.stash.get(AUTO_WORKERS, None)
    return [f"gemmconf: {chosen}"] if chosen else []
