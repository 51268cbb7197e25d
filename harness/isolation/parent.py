"""The pytest side: a runner that sends items to a worker process and survives its crashes and
hangs, or runs them in-process."""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from multiprocessing.connection import Connection, wait
from typing import Any

from gemmconf.backends import Backend, RunOptions
from gemmconf.isolation.guard import LEAK_THRESHOLD_BYTES, LeakCheck, run_guarded
from gemmconf.isolation.request import ItemRequest, Reply, WorkerError
from gemmconf.isolation.timeouts import BENCH_S, TimeoutPolicy
from gemmconf.isolation.worker import BOOT, WorkerConfig
from gemmconf.outcome import Crash, ItemOutcome, TimedOut, exit_text

TERM_GRACE_S = 2.0  # between SIGTERM and SIGKILL for a worker that overran its timeout


START_TIMEOUT_S = 600.0  # a worker's start: importing torch and the backends, on a loaded machine


class InProcessRunner:
    """``--no-isolate``: items run in this process (a debugger sees the backend; no timeout,
    and a crash ends the run)."""

    def __init__(
        self, backends: Mapping[str, Backend], *, leak_threshold: int = LEAK_THRESHOLD_BYTES
    ):
        self.backends = backends
        self.leaks = LeakCheck(leak_threshold)

    def run(self, request: ItemRequest) -> ItemOutcome:
        return run_guarded(
            request, self.backends[request.label], watch=self.leaks.watch_for(request)
        )

    def close(self) -> None:
        pass


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

    def run(self, request: ItemRequest) -> ItemOutcome:
        worker = self._ready_worker()
        if isinstance(worker, ItemOutcome):
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
                if isinstance(worker, ItemOutcome):
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

    def _ready_worker(self) -> _Worker | ItemOutcome:
        """The worker once it said it is ready (its start is not timed against the item), or an
        ItemOutcome saying why it would not start."""
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
        return ItemOutcome.harness("starting the isolation worker", WorkerStartError(reply.message))


class WorkerStartError(Exception):
    """The isolation worker did not start; the message is what it said (a traceback)."""

    def __str__(self) -> str:
        text = str(self.args[0]).strip() if self.args else ""
        last = text.splitlines()[-1] if text else "?"
        return f"isolation worker failed to start: {last}\n{text}"


_exit_text = exit_text  # (kept: the isolation package exports it)


def _crashed(request: ItemRequest, returncode: int, elapsed: float) -> ItemOutcome:
    return ItemOutcome(problems=(Crash("worker", returncode=returncode),), duration_s=elapsed)


def _timed_out(request: ItemRequest, timeout: float | None, elapsed: float) -> ItemOutcome:
    return ItemOutcome(problems=(TimedOut(timeout, elapsed, TERM_GRACE_S),), duration_s=elapsed)
