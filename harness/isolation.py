"""Items run where a backend's crash or hang costs one item (DESIGN.md, "Isolation").

Each pytest process (every xdist worker too) keeps one *worker*: a fresh interpreter (spawned,
never forked: the parent may hold a CUDA context) that resolves the backends from their
``--backend`` specs once, then runs item after item with `run_item` and sends back each
`ItemResult`. The parent keeps the setup (availability, hardware skips) and the verdict; the
worker does the work, and:

- the worker dies (segfault, abort, exit): the item fails ``crashed: SIGSEGV`` (or the exit
  code) and a fresh worker serves the next item;
- no answer within the item's timeout: SIGTERM, SIGKILL after `TERM_GRACE_S`, and the item
  fails ``timed out after N s``;
- a CUDA error (illegal memory access, device-side assert) poisons the worker's context: the
  item fails with the error and the worker is replaced;
- a `SuiteBug` or a harness exception travels back and is raised in the parent as before.

The worker is a ``python -c`` child on a socket pair rather than a `multiprocessing` spawn child:
spawn re-imports the parent's ``__main__`` (a wrapper script that calls ``pytest.main()`` at top
level would run the session again), and its death sentinel is a pipe that a backend's forked
helpers inherit, where a Linux ``pidfd`` tells the death of the worker itself.

`--no-isolate` uses `InProcessRunner`: the same item run in the pytest process, for debuggers,
without timeout or crash protection.
"""

from __future__ import annotations

import atexit
import faulthandler
import gc
import math
import numbers
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from gemmconf.backends import Backend, RunOptions, resolve
from gemmconf.runner import ItemResult, SuiteBug, compile_budget, run_item
from gemmconf.scenario import ScenarioInstance

TERM_GRACE_S = 2.0  # between SIGTERM and SIGKILL for a worker that overran its timeout
START_TIMEOUT_S = 600.0  # a worker's start: importing torch and the backends, on a loaded machine
LEAK_THRESHOLD_BYTES = 1 << 20  # GPU memory an item may leave allocated before it is reported

# The scaled default timeout (TimeoutPolicy): generous, since a false "timed out" costs more than
# a late one. On a loaded 2-core CPU the reference backend (Triton interpreter) takes at most ~9 s
# an item and eager a few ms; a hang is still caught within a couple of minutes.
BASE_S = 60.0  # inputs, eager, one compile, the oracle
BENCH_S = 60.0  # --benchmark: input copies, warm-up and two do_bench runs
PER_SHAPE_SET_S = 20.0  # each further shape set may compile again
COLD_S = 300.0  # first item of a backend in a fresh worker: imports, toolchains, autotuning
FLOPS_PER_S = {"cpu": 5e7, "cuda": 5e10}  # pessimistic rates (interpreted Triton on a CPU)
PACE_FACTOR = 10.0  # and never under 10x the slowest item this backend has finished here


class WorkerError(Exception):
    """The harness itself raised inside the worker (not a backend fault); the message is the
    worker's traceback."""


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
    compile_s: float = 0.0  # the backend's `compile_timeout_s`: extra seconds per compile


@dataclass(frozen=True)
class TimeoutPolicy:
    """The seconds an item may take. `fixed` is ``--item-timeout`` (0: no timeout); None scales
    the timeout to the item (`scaled_timeout`)."""

    fixed: float | None = None

    def seconds(
        self,
        instance: ScenarioInstance,
        device: str,
        *,
        cold: bool,
        slowest: float = 0.0,
        compile_s: float = 0.0,
    ) -> float | None:
        """`slowest`: the longest item of this backend so far (slow backends such as
        max-autotune get a longer default, learnt from their own pace). `compile_s`: what the
        backend says one compile may take (`compile_timeout_s`), added per compile allowed."""
        if self.fixed is not None:
            return self.fixed or None
        scaled = scaled_timeout(instance, device, cold=cold)
        scaled += round(max(compile_s, 0.0) * compile_budget(instance), 1)
        return max(scaled, round(PACE_FACTOR * slowest, 1))

    def describe(self) -> str:
        if self.fixed is None:
            return "auto"
        return "none" if not self.fixed else f"{self.fixed:g}"


def parse_timeout(text: str) -> TimeoutPolicy:
    """``auto`` or a number of seconds >= 0 (0: none); ValueError says what is wrong."""
    if text.strip().lower() == "auto":
        return TimeoutPolicy()
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(
            f"expected a number of seconds >= 0 (0: no timeout) or 'auto', got {text!r}"
        )
    return TimeoutPolicy(fixed=seconds)


def item_flops(instance: ScenarioInstance) -> int:
    """2*B*M*N*K summed over the shape sets: the size term of the timeout."""
    total = 0
    for shape_set in instance.shape_sets:
        dims = dict(shape_set)
        total += 2 * dims.get("B", 1) * dims.get("M", 1) * dims.get("N", 1) * dims.get("K", 1)
    return total


def scaled_timeout(instance: ScenarioInstance, device: str, *, cold: bool) -> float:
    """Base + per extra shape set + the item's FLOPs at a pessimistic rate (+ a cold start)."""
    rate = FLOPS_PER_S.get(device, FLOPS_PER_S["cpu"])
    seconds = (
        BASE_S + PER_SHAPE_SET_S * (len(instance.shape_sets) - 1) + item_flops(instance) / rate
    )
    return round(seconds + (COLD_S if cold else 0.0), 1)


def configured_backend(spec: str, options: RunOptions) -> Backend:
    """The backend a ``--backend`` spec names, given the run's options (parent and worker)."""
    backend = resolve(spec)
    configure = getattr(backend, "configure", None)
    if configure is not None:
        configure(options)
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
) -> ItemResult:
    """`run_item`, plus the GPU leak check when watched (``metrics["leaked_bytes"]``)."""
    before = watch.baseline() if watch is not None else 0
    result = run_item(
        request.instance,
        backend,
        seed=request.seed,
        device=request.device,
        target=request.target,
        repro=request.repro,
    )
    if watch is not None:
        leaked = watch.leaked_since(before)
        if leaked is not None:
            result.metrics["leaked_bytes"] = int(leaked)
    if request.benchmark and result.passed:
        from gemmconf import bench

        try:
            result.metrics.update(
                bench.measure(request.instance, backend, seed=request.seed, device=request.device)
            )
        except Exception as exc:  # a figure is missing; the verdict stands
            result.metrics["bench_error"] = f"{type(exc).__name__}: {exc}"[:500]
    return result


class InProcessRunner:
    """``--no-isolate``: items run in this process (a debugger sees the backend; no timeout,
    and a crash ends the run)."""

    def __init__(
        self, backends: Mapping[str, Backend], *, leak_threshold: int = LEAK_THRESHOLD_BYTES
    ):
        self.backends = backends
        self.leaks = LeakCheck(leak_threshold)

    def run(self, request: ItemRequest) -> ItemResult:
        return run_guarded(
            request, self.backends[request.label], watch=self.leaks.watch_for(request)
        )

    def close(self) -> None:
        pass


# --- the worker side ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerConfig:
    specs: dict[str, str]  # label -> --backend spec
    options: RunOptions
    leak_threshold: int = LEAK_THRESHOLD_BYTES


@dataclass
class Reply:
    kind: str  # "ready", "start_failed", "result", "suite_bug", "error"
    result: ItemResult | None = None
    message: str = ""
    restart: bool = False  # the worker's CUDA context is poisoned: it exits after this reply
    pid: int = 0


# Run by the worker interpreter: sys.path first (the parent's, so tests' backends import), then
# the loop. SIGINT is the parent's to act on: Ctrl-C reaches the whole process group.
BOOT = (
    "import signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "from multiprocessing.connection import Connection\n"
    "conn = Connection(int(sys.argv[1]))\n"
    "sys.path[:] = conn.recv()\n"
    "from gemmconf.isolation import worker_main\n"
    "worker_main(conn)\n"
)


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


# --- the parent side ---------------------------------------------------------------------------


class _Spool:
    """A worker's stdout or stderr: a file the worker appends to and the parent empties into
    its own stream after each item, so the output lands in that item's captured output."""

    def __init__(self, stream_name: str):
        self.stream_name = stream_name
        fd, path = tempfile.mkstemp(prefix=f"gemmconf-worker-{stream_name}-")
        self.read_fd = fd
        self.write_fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.unlink(path)

    def forward(self) -> None:
        chunks = []
        while chunk := os.read(self.read_fd, 1 << 16):
            chunks.append(chunk)
        if not chunks:
            return
        os.ftruncate(self.read_fd, 0)
        os.lseek(self.read_fd, 0, os.SEEK_SET)
        try:
            stream = getattr(sys, self.stream_name)
            stream.write(b"".join(chunks).decode(errors="replace"))
            stream.flush()
        except (AttributeError, OSError, ValueError):  # no stream any more (interpreter exit)
            pass

    def close(self) -> None:
        os.close(self.read_fd)


class _Worker:
    """One worker process and its socket, from the parent's side."""

    def __init__(self, config: WorkerConfig):
        parent_end, child_end = socket.socketpair()
        self.spools = [_Spool("stdout"), _Spool("stderr")]
        with child_end:
            self.process = subprocess.Popen(  # -u: nothing is lost in a buffer at a crash
                [sys.executable, "-u", "-c", BOOT, str(child_end.fileno())],
                pass_fds=[child_end.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=self.spools[0].write_fd,
                stderr=self.spools[1].write_fd,
            )
        for spool in self.spools:
            os.close(spool.write_fd)
        self.conn = Connection(parent_end.detach())
        self.pidfd = _pidfd(self.process.pid)
        self.ready = False  # it has imported torch and resolved the backends
        self.warm: set[str] = set()  # backend labels that ran an item here
        self.conn.send(list(sys.path))
        self.conn.send(config)

    def receive(self, timeout: float | None) -> Reply | None:
        """The next reply; None when the worker died; TimeoutError when none came in time."""
        deadline = None if timeout is None else time.monotonic() + timeout
        sources: list[Any] = [self.conn] if self.pidfd is None else [self.conn, self.pidfd]
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if self.pidfd is None:  # no pidfd: look at the process now and then
                remaining = 0.2 if remaining is None else min(remaining, 0.2)
            ready = wait(sources, remaining)
            dead = (bool(ready) and self.conn not in ready) or self.process.poll() is not None
            if self.conn in ready or dead:
                try:  # a reply sent just before dying still counts
                    return self.conn.recv() if self.conn.poll() else None
                except (EOFError, OSError):
                    return None
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError

    def returncode(self) -> int:
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.stop()
            return self.process.returncode

    def stop(self, *, polite: bool = False) -> None:
        """End the worker: ask (polite), else SIGTERM, then SIGKILL after the grace."""
        if polite and self.process.poll() is None:
            try:
                self.conn.send(None)
                self.process.wait(timeout=TERM_GRACE_S)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.conn.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        for spool in self.spools:
            spool.forward()
            spool.close()
        self.spools = []

    def forward_output(self) -> None:
        for spool in self.spools:
            spool.forward()


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux >= 5.3
        return None


class IsolatedRunner:
    """Runs items in a worker process that is replaced after a crash, hang or CUDA fault."""

    def __init__(
        self,
        specs: Mapping[str, str],
        options: RunOptions,
        *,
        timeouts: TimeoutPolicy | None = None,
        leak_threshold: int = LEAK_THRESHOLD_BYTES,
    ):
        self.config = WorkerConfig(dict(specs), options, leak_threshold)
        self.timeouts = timeouts or TimeoutPolicy()
        self.starts = 0  # workers started; a crash, timeout or CUDA fault costs one more
        self.slowest: dict[str, float] = {}  # label -> longest item finished (the pace)
        self._worker: _Worker | None = None
        self._registered = False

    def run(self, request: ItemRequest) -> ItemResult:
        worker = self._ready_worker()
        if isinstance(worker, ItemResult):
            return worker
        timeout = self.timeouts.seconds(
            request.instance,
            request.device,
            cold=request.label not in worker.warm,
            slowest=self.slowest.get(request.label, 0.0),
            compile_s=request.compile_s,
        )
        if timeout is not None and request.benchmark and self.timeouts.fixed is None:
            timeout += BENCH_S
        start = time.perf_counter()
        try:
            try:
                worker.conn.send(request)
            except OSError:  # died while idle (killed from outside): one fresh worker, once
                self._discard()
                worker = self._ready_worker()
                if isinstance(worker, ItemResult):
                    return worker
                worker.conn.send(request)
            reply = worker.receive(timeout)
        except TimeoutError:
            self._discard()
            return _timed_out(request, timeout, time.perf_counter() - start)
        except BaseException:  # Ctrl-C or SIGTERM: the item is abandoned with its worker
            self._discard()
            raise
        if reply is None:
            returncode = worker.returncode()
            self._discard()
            return _crashed(request, returncode, time.perf_counter() - start)
        worker.warm.add(request.label)
        worker.forward_output()
        elapsed = time.perf_counter() - start
        self.slowest[request.label] = max(self.slowest.get(request.label, 0.0), elapsed)
        if reply.restart:
            self._discard()
        if reply.kind == "suite_bug":
            raise SuiteBug(reply.message)
        if reply.kind != "result" or reply.result is None:
            raise WorkerError(reply.message or f"unexpected reply {reply.kind!r} from the worker")
        return reply.result

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop(polite=True)
            self._worker = None

    def _discard(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def prestart(self) -> None:
        """Start a worker now (while pytest collects), so the first item need not wait."""
        if self._worker is None:
            self._spawn()

    def _spawn(self) -> _Worker:
        if not self._registered:
            atexit.register(self.close)
            self._registered = True
        self.starts += 1
        self._worker = _Worker(self.config)
        return self._worker

    def _ready_worker(self) -> _Worker | ItemResult:
        """The worker once it said it is ready (its start is not timed against the item), or an
        ItemResult saying why it would not start."""
        worker = self._worker or self._spawn()
        if worker.ready:
            return worker
        try:
            reply = worker.receive(START_TIMEOUT_S)
        except TimeoutError:
            reply = Reply("start_failed", message=f"no sign of life within {START_TIMEOUT_S:g} s")
        except BaseException:
            self._discard()
            raise
        if reply is not None and reply.kind == "ready":
            worker.ready = True
            return worker
        if reply is None:
            reply = Reply("start_failed", message=f"it {_exit_text(worker.returncode())[1]}")
        self._discard()
        last = reply.message.strip().splitlines()[-1] if reply.message.strip() else "?"
        return ItemResult(
            passed=False,
            summary=f"isolation worker failed to start: {last}",
            problems=[f"The isolation worker failed to start:\n{reply.message}"],
        )


def _exit_text(returncode: int) -> tuple[str, str]:
    """(the short reason, the longer text) for a worker that ended with `returncode`."""
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
        except ValueError:
            return f"crashed: signal {-returncode}", f"was killed by signal {-returncode}"
        return f"crashed: {sig.name}", f"was killed by {sig.name} ({signal.strsignal(sig)})"
    return f"crashed: exit code {returncode}", f"exited with code {returncode}"


def _crashed(request: ItemRequest, returncode: int, elapsed: float) -> ItemResult:
    summary, text = _exit_text(returncode)
    return ItemResult(
        passed=False,
        summary=summary,
        duration_s=elapsed,
        problems=[
            f"{summary}: the worker process running this item {text}. The run goes on in a fresh "
            "worker. What the worker printed (for a fatal signal, faulthandler's Python stack) "
            "is in this item's captured stderr; --no-isolate runs the item in-process, for a "
            "debugger.",
            f"Reproduce: {request.repro}",
        ],
    )


def _timed_out(request: ItemRequest, timeout: float | None, elapsed: float) -> ItemResult:
    summary = f"timed out after {timeout:g} s"
    return ItemResult(
        passed=False,
        summary=summary,
        duration_s=elapsed,
        problems=[
            f"{summary}: no result came back, so the worker was stopped (SIGTERM, SIGKILL after "
            f"{TERM_GRACE_S:g} s) and the run goes on in a fresh one. --item-timeout SECONDS sets "
            "the limit (0: none; default: scaled to the item, plus the backend's compile_timeout_s "
            "per compile).",
            f"Reproduce: {request.repro}",
        ],
    )
