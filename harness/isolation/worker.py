"""The isolation worker: a fresh interpreter that resolves the backends once and serves items."""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import os
import signal
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import NoReturn

from gemmconf import pristine, progress
from gemmconf.backends import Backend, RunOptions
from gemmconf.isolation.guard import (
    LEAK_THRESHOLD_BYTES,
    LeakCheck,
    MemoryWatch,
    configured_backend,
    run_guarded,
)
from gemmconf.isolation.request import ItemRequest, Reply
from gemmconf.outcome import Crash, ItemOutcome, Raised

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
    "from gemmconf.isolation.worker import exit_quickly\n"
    "exit_quickly()\n"
)


@dataclass(frozen=True)
class WorkerConfig:
    specs: dict[str, str]  # label -> --backend spec
    options: RunOptions
    leak_threshold: int = LEAK_THRESHOLD_BYTES
    # the run's items are on a CUDA GPU: create the context while no item waits (`warm_cuda`)
    warm_cuda: bool = False


def worker_main(conn: Connection) -> None:
    faulthandler.enable(all_threads=True)  # a crash prints the stack into the item's stderr
    _die_with_parent()
    config: WorkerConfig = conn.recv()
    pristine.remember()  # PyTorch as eager must run it, before any backend is imported
    try:
        backends = {
            label: configured_backend(spec, config.options) for label, spec in config.specs.items()
        }
    except BaseException:
        conn.send(Reply("start_failed", message=traceback.format_exc()))
        return
    conn.send(Reply("ready", pid=os.getpid()))
    if config.warm_cuda:
        warm_cuda()
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


def warm_cuda() -> None:
    """Create this process's CUDA context now, between the worker's start and its first item:
    while pytest collects (the first worker), or while another worker serves items (a spare,
    `IsolatedRunner`). It allocates nothing, so the items' memory figures do not change. A
    failure is left for the first item to meet and report as its own."""
    import torch

    with contextlib.suppress(Exception):
        torch.cuda.init()
        torch.cuda.synchronize()


def exit_quickly(status: int = 0) -> NoReturn:
    """End the worker with `status`, without the interpreter's teardown, which frees every
    object of torch, dynamo and Triton one by one: 1.2 s a worker on the dev CPU, against 0.05 s
    this way. The atexit handlers (a backend's own clean-up) still run, and the output is
    flushed for the parent's spools. Only after worker_main returned: an exception in it ends
    the usual way."""
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # closed or gone: nothing to keep
                stream.flush()
        os._exit(status)


def serve(request: ItemRequest, backend: Backend, watch: MemoryWatch | None = None) -> Reply:
    """One item in the worker, as a Reply (never raises for the backend's sake)."""
    try:
        outcome = run_guarded(request, backend, watch=watch)
    except Exception as exc:  # the leak check or the benchmark: run_item itself never raises
        if is_cuda_fault(exc):
            outcome = ItemOutcome(problems=(Crash(FAULT_AFTER, Raised.of(exc)),))
            return Reply("result", result=outcome.portable(), restart=True)
        return Reply("result", result=ItemOutcome.harness("the isolation worker", exc).portable())
    restart = outcome.cuda_fault
    if not restart:
        fault = _synchronize()
        if fault is not None:
            restart = True
            if outcome.passed:
                outcome = outcome.with_problem(Crash(FAULT_AT_SYNC, fault))
    return Reply("result", result=outcome.portable(), restart=restart)


FAULT_AFTER = (
    "the item, outside the backend's own calls (a GPU fault surfaces at a later synchronisation)"
)
FAULT_AT_SYNC = "the synchronisation after the item's checks (a GPU fault the backend left)"


def is_cuda_fault(error: BaseException) -> bool:
    """An error that leaves the CUDA context unusable (every later CUDA call fails)."""
    return Raised.of(error).cuda_fault


def _synchronize() -> Raised | None:
    """The sticky CUDA error an item left, found by a synchronize; None when there is none."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    try:
        torch.cuda.synchronize()
    except Exception as exc:
        return Raised.of(exc)
    return None


def _plain_result(outcome: ItemOutcome) -> ItemOutcome:
    return outcome.portable()


def _die_with_parent() -> None:
    """Linux: SIGKILL this worker when the pytest process dies, so a hang cannot outlive it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
