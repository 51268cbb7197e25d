"""One item run in whatever process holds the backend: `run_item` plus the GPU leak check and the
optional benchmark."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable
from dataclasses import dataclass

from gemmconf import memory, pristine, progress
from gemmconf.backends import Backend, RunOptions, resolve
from gemmconf.isolation.request import ItemRequest
from gemmconf.outcome import ItemOutcome
from gemmconf.runner import run_item

LEAK_THRESHOLD_BYTES = 1 << 20  # GPU memory an item may leave allocated before it is reported


def configured_backend(spec: str, options: RunOptions) -> Backend:
    """The backend a ``--backend`` spec names, given the run's options (parent and worker). A
    backend whose import or set-up changed PyTorch for the process is blamed for it here
    (gemmconf.pristine): the items of other backends beside it cannot be judged either."""
    backend = resolve(spec)
    configure = getattr(backend, "configure", None)
    if configure is not None:
        configure(options)
    if pristine.altered():
        pristine.blame(str(getattr(backend, "name", spec)))
    return backend


@dataclass
class MemoryWatch:
    """GPU memory left allocated by one item (`leaked_since`), beyond `threshold` bytes.

    Caches that come and go (cuBLAS workspaces) are dropped at both ends of the item, so the
    baseline and the end state count the same things: an item that drops a workspace an earlier
    item made cannot hide its own leak behind it. Garbage is collected only on suspicion, since a
    collection per item would cost every item.
    """

    allocated: Callable[[], int]
    drop_caches: Callable[[], None]  # cheap: cached blocks the next kernel re-takes
    collect: Callable[[], None]  # costly: garbage cycles still holding tensors
    threshold: int = LEAK_THRESHOLD_BYTES

    def baseline(self) -> int:
        self.drop_caches()
        return self.allocated()

    def leaked_since(self, before: int) -> int | None:
        self.drop_caches()
        if self.allocated() - before <= self.threshold:
            return None
        self.collect()
        growth = self.allocated() - before
        return growth if growth > self.threshold else None


def cuda_memory_watch(threshold: int = LEAK_THRESHOLD_BYTES) -> MemoryWatch:
    import torch

    def drop_caches() -> None:
        clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)  # private; may go away
        if clear is not None:
            clear()

    return MemoryWatch(torch.cuda.memory_allocated, drop_caches, gc.collect, threshold)


class LeakCheck:
    """Which items get the GPU leak check: CUDA items after a backend's first in this process
    (the first sets up cuBLAS handles and workspaces that stay by design)."""

    def __init__(self, threshold: int = LEAK_THRESHOLD_BYTES):
        self.threshold = threshold
        self.seen: set[str] = set()

    def watch_for(self, request: ItemRequest) -> MemoryWatch | None:
        first = request.label not in self.seen
        self.seen.add(request.label)
        return None if first or request.device != "cuda" else cuda_memory_watch(self.threshold)


def run_guarded(
    request: ItemRequest, backend: Backend, *, watch: MemoryWatch | None = None
) -> ItemOutcome:
    """`run_item`, plus the GPU leak check when watched (``metrics["leaked_bytes"]``), and the
    host memory the item added at its peak, its benchmark included: all of what it holds in the
    host's ledger (``metrics["host_memory_peak_bytes"]``)."""
    host = memory.HostPeakWatch()
    with host.watching():
        outcome = _run_watched(request, backend, watch)
    return dataclasses.replace(outcome, metrics={**outcome.metrics, **host.metrics()})


def _run_watched(request: ItemRequest, backend: Backend, watch: MemoryWatch | None) -> ItemOutcome:
    before = watch.baseline() if watch is not None else 0
    peak = memory.PeakWatch(request.device)  # the GPU memory the item took (memory.py)
    with peak.watching():
        outcome = run_item(
            request.instance,
            backend,
            seed=request.seed,
            device=request.device,
            target=request.target,
        )
    metrics = dict(outcome.metrics)
    metrics.update(peak.metrics())
    if watch is not None:
        leaked = watch.leaked_since(before)
        if leaked is not None:
            metrics["leaked_bytes"] = int(leaked)
    if request.benchmark and outcome.passed:
        from gemmconf import bench

        progress.report("benchmark")
        try:
            metrics.update(
                bench.measure(
                    request.instance,
                    backend,
                    seed=request.seed,
                    device=request.device,
                    mode=request.bench_mode,
                )
            )
        except Exception as exc:  # a figure is missing; the verdict stands
            metrics["bench_error"] = f"{type(exc).__name__}: {exc}"[:500]
    return dataclasses.replace(outcome, metrics=metrics)
