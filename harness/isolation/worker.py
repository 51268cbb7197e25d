"""The isolation worker: a fresh interpreter that resolves the backends once and serves items."""

from __future__ import annotations

import faulthandler
import numbers
import os
import signal
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from gemmconf import progress
from gemmconf.backends import Backend, RunOptions
from gemmconf.isolation.guard import (
    LEAK_THRESHOLD_BYTES,
    LeakCheck,
    MemoryWatch,
    configured_backend,
    run_guarded,
)
from gemmconf.isolation.request import ItemRequest, Reply
from gemmconf.runner import ItemResult, SuiteBug

# Run by the worker interpreter: sys.path first (the parent's, so tests' backends import), then
# the loop. SIGINT is the parent's to act on: Ctrl-C reaches the whole process group.
BOOT = (
    "import signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "from multiprocessing.connection import Connection\n"
    "conn = Connection(int(sys.argv[1]))\n"
    "sys.path[:] = conn.recv()\n"
    "from gemmconf.isolation.worker import worker_main\n"
    "worker_main(conn)\n"
)


@dataclass(frozen=True)
class WorkerConfig:
    specs: dict[str, str]  # label -> --backend spec
    options: RunOptions
    leak_threshold: int = LEAK_THRESHOLD_BYTES


def worker_main(conn: Connection) -> None:
    faulthandler.enable(all_threads=True)  # a crash prints the stack into the item's stderr
    _die_with_parent()
    config: WorkerConfig = conn.recv()
    try:
        backends = {
            label: configured_backend(spec, config.options) for label, spec in config.specs.items()
        }
    except BaseException:
        conn.send(Reply("start_failed", message=traceback.format_exc()))
        return
    conn.send(Reply("ready", pid=os.getpid()))
    leaks = LeakCheck(config.leak_threshold)
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        # the parent times each phase the item reports (gemmconf.progress)
        with progress.listening(lambda phase: conn.send(Reply("phase", message=phase))):
            reply = serve(request, backends[request.label], leaks.watch_for(request))
        try:
            conn.send(reply)
        except Exception as exc:  # an unpicklable result: say so rather than die
            conn.send(
                Reply(
                    "error",
                    message=f"the worker could not send the item's result: "
                    f"{type(exc).__name__}: {exc}",
                )
            )
        if reply.restart:
            return


def serve(request: ItemRequest, backend: Backend, watch: MemoryWatch | None = None) -> Reply:
    """One item in the worker, as a Reply (never raises for the backend's sake)."""
    try:
        result = run_guarded(request, backend, watch=watch)
    except SuiteBug as exc:
        return Reply("suite_bug", message=str(exc))
    except Exception as exc:
        if not is_cuda_fault(exc):
            return Reply("error", message="".join(traceback.format_exception(exc)))
        result = ItemResult(
            passed=False,
            summary=_first_line(exc),
            problems=[
                "The GPU faulted during this item, outside the backend's own calls (the error "
                "surfaced at a later synchronisation); the worker's CUDA context is lost and it is "
                "replaced.\n" + "".join(traceback.format_exception(exc)[-4:]),
                f"Reproduce: {request.repro}",
            ],
        )
        return Reply("result", result=result, restart=True)
    fault = _cuda_fault_after(result)
    if fault is not None and result.passed:
        result = ItemResult(
            passed=False,
            summary=fault,
            metrics=result.metrics,
            duration_s=result.duration_s,
            problems=[
                f"The GPU faulted after the item's checks: {fault}",
                f"Reproduce: {request.repro}",
            ],
        )
    return Reply("result", result=_plain_result(result), restart=fault is not None)


def is_cuda_fault(error: BaseException) -> bool:
    """An error that leaves the CUDA context unusable (every later CUDA call fails)."""
    text = f"{type(error).__name__}: {error}"
    return type(error).__name__ == "AcceleratorError" or "CUDA error" in text


def _cuda_fault_after(result: ItemResult) -> str | None:
    """The sticky CUDA error an item left, if any: in its own report, or at a synchronize."""
    for problem in result.problems:
        if "CUDA error" in problem:
            return "CUDA error" + problem.split("CUDA error", 1)[1].splitlines()[0]
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    try:
        torch.cuda.synchronize()
    except Exception as exc:
        return _first_line(exc)
    return None


def _plain_result(result: ItemResult) -> ItemResult:
    result.metrics = {str(k): _plain(v) for k, v in result.metrics.items()}
    return result


def _plain(value: Any) -> Any:
    """A metric as a JSON-ready Python value (numpy and torch scalars included)."""
    if value is None or type(value) in (bool, int, float, str):  # not subclasses (numpy)
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        return _plain(value.item())
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


def _die_with_parent() -> None:
    """Linux: SIGKILL this worker when the pytest process dies, so a hang cannot outlive it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__
