"""Hardware: --require-hardware, --target-arch, one GPU (or one OpenMP thread) per xdist worker,
and how many workers ``-n auto`` starts on GPUs (--workers-per-gpu; by the items' measured
memory where --durations-from measured them on this class of GPU). It detects the machine and
publishes it (`facts.MACHINE`). Every process of a run assembles Triton's kernels with one ptxas
(`toolchain.pin_ptxas`)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Collection

import pytest

from gemmconf import capability, memory, toolchain
from gemmconf.inputs import LARGE_DRAW_THREADS_ENV
from gemmconf.plugin import facts, options, scheduling

# -n auto on GPUs, for a backend that does not autotune: at most one worker per this much of a
# GPU's memory (budget), where no earlier run measured the items here ...
WORKER_MEMORY_BYTES = 6 << 30
# ... and this many per host core. A worker keeps more than one core busy (Triton's compiles,
# ptxas, the driver's waits): the whole reference suite cold on one H200 with 16 host cores
# (2026-12-02, 13c97dd, two fresh machines, each order once) took 181.5 and 195.2 s at 12
# workers against 198.1 and 211.3 s at 16, and 214.0 s at 8; its items' time summed 1,484 s
# at 8 workers, 1,823-1,944 s at 12 and 2,664-2,776 s at 16
# (reports/published/2026-12-02-nvidia-h200-head-suite-and-worker-count/).
WORKERS_PER_CORE = 0.75
CORES_RULE = "three per four CPU cores"  # WORKERS_PER_CORE in words, for the run's header
# Where --durations-from measured the items on this class of GPU (`memory.measured_peaks`), a
# worker takes its own memory (`memory.PROCESS_RESERVE_BYTES`) and this percentile of the
# items' measured needs: the 90th, so that nine items in ten fit with every worker busy. Most
# of the upper tenth are small beside a budget too; the largest, one in a hundred, take the
# room kept for items (ITEMS_SHARE), dealt to a quarter of the workers (`scheduling`'s lanes).
# Sizing every worker for those would idle the GPU beside the median item. On an H200
# (2026-11-29, the reference suite's 3,768 items) the needs were 47 MB at the median, 67 MB at
# p90, 191 MB at p95, 3.2 GB at p99 and 16 GB at most: by p99 a 24 GB budget would take 5
# workers, by p90 21.
MEASURED_PERCENTILE = 0.9
# ... and at most as many workers as leave the items of a GPU this part of its budget
# (`memory.shared_bytes`), so that an item of up to half the budget still runs beside others
# instead of alone: 11 workers on 24 GB (not 21), each with its 1 GiB.
ITEMS_SHARE = 0.5

AUTO_WORKERS = pytest.StashKey[str]()  # what -n auto chose, and why (the header says it)
PTXAS = pytest.StashKey[toolchain.PtxasChoice]()  # the ptxas this process's compiles use


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
        "other's kernels), else three per four CPU cores, and by the GPU's memory budget: where "
        "--durations-from measured the items on this class of GPU, one per 1 GiB (the "
        "worker's own) plus the measured needs' 90th percentile, and no more than leave the "
        "items half the budget; without such measurements, one per 6 GiB",
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
    os.environ.setdefault(LARGE_DRAW_THREADS_ENV, str(large_draw_threads(cpus, workers)))
    pin_threads(cpus, workers)


def pin_threads(cpus: int, workers: int) -> None:
    """torch's CPU threads in this process at its share of the cores (`cpu_share`), and
    OMP_NUM_THREADS for what it starts, unless that is set already (then torch follows it)."""
    share = cpu_share(cpus, workers)
    threads = os.environ.setdefault("OMP_NUM_THREADS", str(share))
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
    and run in `scheduling.lane_count` of the workers (more where their time needs more), so
    each may take cores / lane_count."""
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
    needs: Collection[int] = (),
) -> tuple[int, str]:
    """(xdist workers for -n auto on `gpus` GPUs, why), as the --workers-per-gpu help says;
    `needs`: the items' measured needs on this class of GPU (--durations-from), if any."""
    if per_gpu is not None:
        return per_gpu * gpus, f"{per_gpu} per GPU (--workers-per-gpu)"
    if autotuning:
        return gpus, f"1 per GPU: {', '.join(autotuning)} autotunes (--workers-per-gpu N to change)"
    change = "(--workers-per-gpu N to change)"
    by_cpu = max(1, int(cpus * WORKERS_PER_CORE) // gpus)
    if memory_bytes and needs:
        by_memory, why = measured_workers(memory_bytes, needs)
    elif memory_bytes:
        by_memory = max(1, memory_bytes // WORKER_MEMORY_BYTES)
        why = f"one per {WORKER_MEMORY_BYTES >> 30} GiB of its {memory_bytes / 1e9:g} GB"
    else:
        by_memory, why = by_cpu, ""
    if by_memory < by_cpu:
        return by_memory * gpus, f"{by_memory} per GPU: {why} {change}"
    # where the measurements were read, say what they would allow
    allowed = f" (memory would allow {by_memory}: {why})" if memory_bytes and needs else ""
    return by_cpu * gpus, f"{by_cpu} per GPU: {CORES_RULE}{allowed} {change}"


def measured_workers(memory_bytes: int, needs: Collection[int]) -> tuple[int, str]:
    """(workers per GPU of `memory_bytes` by the items' measured `needs`, why): one per
    `memory.PROCESS_RESERVE_BYTES` and the needs' MEASURED_PERCENTILE, and no more than leave
    the items ITEMS_SHARE of the memory."""
    reserve = memory.PROCESS_RESERVE_BYTES
    need = percentile(needs, MEASURED_PERCENTILE)
    by_need = memory_bytes // (reserve + need)
    by_share = int(memory_bytes * (1 - ITEMS_SHARE)) // reserve
    rank = f"p{MEASURED_PERCENTILE * 100:.0f}"
    measured = (
        f"measured needs {rank} {memory.size(need)} of {len(needs):,} items in "
        "--durations-from's results"
    )
    gb = f"{memory_bytes / 1e9:g} GB"
    if by_share <= by_need:
        return max(1, by_share), (
            f"its {gb} less {reserve >> 30} GiB per worker keeps {ITEMS_SHARE:.0%} for items; "
            f"{measured}"
        )
    per_worker = memory.size(reserve + need)
    return max(1, by_need), (
        f"one per {per_worker} of its {gb} (the worker's {reserve >> 30} GiB and a {rank} "
        f"item); {measured}"
    )


def percentile(values: Collection[int], share: float) -> int:
    """The nearest-rank percentile: the smallest value at least `share` of `values` are at or
    below."""
    ranked = sorted(values)
    return ranked[max(0, math.ceil(share * len(ranked)) - 1)]


def measured_needs(config: pytest.Config) -> list[int]:
    """The items' needs measured on this machine's class of GPU in --durations-from's results
    (none where it is not given or measured none here). Asked before pytest_configure, so the
    machine is detected here (`capability.detect` is cached: pytest_configure's is the same)."""
    document = config.hook.pytest_gemmconf_earlier_results(config=config)
    if not document:
        return []
    found = capability.detect()
    kind = {"device": found.device, "hardware_class": found.hardware_class}
    return list(memory.measured_peaks(document, **kind).values())


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """-n auto on a GPU machine: a number of workers safe for the GPUs (None: xdist's own)."""
    gpus = visible_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"))
    per_gpu = parse_workers_per_gpu(options.get(config, "workers_per_gpu"))
    if not gpus:
        return None
    budget = config.hook.pytest_gemmconf_memory_budget(config=config)
    total = capability.gpu_memory_bytes()
    memory_bytes = min(budget, total) if budget and total else budget or total
    autotuning = config.hook.pytest_gemmconf_autotuning_backends(config=config) or []
    count, why = auto_workers(
        gpus=len(gpus),
        cpus=os.cpu_count() or 1,
        autotuning=autotuning,
        per_gpu=per_gpu,
        memory_bytes=memory_bytes,
        needs=measured_needs(config) if per_gpu is None and not autotuning else (),
    )
    config.stash[AUTO_WORKERS] = f"-n auto: {count} xdist worker(s) on {len(gpus)} GPU(s), {why}"
    return count


@pytest.hookimpl(tryfirst=True)  # the others read the machine in their own pytest_configure
def pytest_configure(config: pytest.Config) -> None:
    parse_workers_per_gpu(options.get(config, "workers_per_gpu"))
    target_arch = parse_target(options.get(config, "target_arch"))
    required = parse_required(options.get(config, "require_hardware"))
    pin_worker(config)  # before anything starts CUDA
    inductor = toolchain.runs_inductor(options.get(config, "backend") or "")
    config.stash[PTXAS] = toolchain.pin_ptxas(inductor=inductor)  # before anything compiles
    config.stash[facts.MACHINE] = facts.Machine(capability.detect(), target_arch, required)


def pytest_report_header(config: pytest.Config) -> list[str]:
    chosen = config.stash.get(AUTO_WORKERS, None)
    ptxas = config.stash.get(PTXAS, None)
    lines = [f"gemmconf: {chosen}"] if chosen else []
    lines += [f"gemmconf: {ptxas.line()}"] if ptxas and ptxas.path else []
    bytecode = toolchain.bytecode_note()
    return lines + ([f"gemmconf: {bytecode}"] if bytecode else [])
