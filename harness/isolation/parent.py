"""The pytest side: a runner that sends items to a worker process and survives its crashes and
hangs, or runs them in-process.

Around each item both runners hold its share of the machine and of its GPU's memory
(`gemmconf.isolation.budget`, with the estimate of `gemmconf.memory`), and confirm failures:

- a timeout is charged only once confirmed: the item is rerun alone, in a fresh worker, with no
  other item of the run running (or it had already run alone); the reason says which;
- with ``--confirm-failures N`` a failed item is rerun N times, each in a fresh worker with the
  same seed; the record counts the runs and failures (``confirm_runs``, ``confirm_failed``) and
  an item that passed on a rerun is marked ``flaky``.

A worker lost to a crash or a CUDA fault is replaced by a spare: from the first loss on, the
runner keeps one more worker started (its backends resolved and, on a GPU, its CUDA context
made), so that the next loss costs the item alone. A worker whose context a fault lost is
killed without waiting for its exit: the driver's teardown of that context runs beside the next
item instead of before it.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from gemmconf import integrity, memory
from gemmconf.backends import Backend, RunOptions
from gemmconf.isolation import forkserver
from gemmconf.isolation.budget import Grant, RunBudget
from gemmconf.isolation.guard import LEAK_THRESHOLD_BYTES, LeakCheck, run_guarded
from gemmconf.isolation.request import ItemRequest, Reply, WorkerError
from gemmconf.isolation.timeouts import BENCH_S, TimeoutPolicy
from gemmconf.isolation.worker import BOOT, WorkerConfig
from gemmconf.outcome import Crash, ItemOutcome, TimedOut, exit_text, render
from gemmconf.progress import BACKEND_PHASES, PHASES
from gemmconf.record import printed_note

TERM_GRACE_S = 2.0  # between SIGTERM and SIGKILL for a worker that overran its timeout


START_TIMEOUT_S = 600.0  # a worker's start: importing torch and the backends, on a loaded machine


MAX_ALONE_RERUNS = 3  # timeouts confirmed alone per process: each one stops the whole machine


@dataclass(frozen=True)
class Estimate:
    """What an item holds in the ledgers while it runs, in bytes: of its GPU, and of the host.
    Each is the scenario's estimate (`bound`, `host_bound`), or the figure an earlier run
    measured (`by`, `host_by` "measured": `memory.admitted`): on the GPU never above its
    estimate, an upper bound; on the host above it where the measure says so."""

    device: int
    host: int
    bound: int | None = None  # the scenario's estimate of the GPU's bytes (None: `device`)
    by: str = memory.BY_ESTIMATE
    host_bound: int | None = None  # and of the host's, no upper bound (None: `host`)
    host_by: str = memory.BY_ESTIMATE

    @property
    def upper(self) -> int:
        return self.device if self.bound is None else self.bound

    @property
    def host_upper(self) -> int:
        """The host's estimate (`host_memory_estimate_bytes`)."""
        return self.host if self.host_bound is None else self.host_bound

    def by_estimate(self) -> Estimate:
        """The same item admitted by its estimate (after a measured figure ran it out)."""
        return dataclasses.replace(self, device=self.upper, by=memory.BY_ESTIMATE)


@dataclass(frozen=True)
class Overrun:
    """An item that overran its time: the phase that ran out, its limit, and whether the item
    had run alone (the outcome's problem is `gemmconf.outcome.TimedOut`)."""

    phase: str
    limit: float | None
    elapsed: float
    fixed: bool  # --item-timeout N (the whole item), not a phase budget
    alone: bool = False


class _Scheduling:
    """What both runners do around an item: hold its share of the machine and of its GPU's
    memory, add what the record says about that, and rerun failed items to confirm them."""

    budget: RunBudget | None
    confirm_failures: int
    autotunes: frozenset[str]
    measured: Mapping[str, int]  # `<record id>@<label>` -> its need in an earlier run (memory.py)
    measured_host: Mapping[str, int]  # the same, of the host's memory

    def _estimate(self, request: ItemRequest) -> Estimate:
        if self.budget is None or (self.budget.device is None and self.budget.host is None):
            return Estimate(0, 0)
        footprint = memory.estimate(
            request.instance,
            autotunes=request.label in self.autotunes,
            shared=self.budget.shared_bytes,
        )
        key = f"{request.instance.id}@{request.label}"
        on_host = request.device == "cpu" and self.budget.host is not None  # a GPU machine's CPU
        gpu = 0 if on_host else footprint.total
        host_bound = footprint.host_total + (footprint.total if on_host else 0)
        device, by = memory.admitted(gpu, self.measured.get(key))
        # the host's by a measured figure, for admission only (memory.HOST_MEASURED_MARGIN)
        host, host_by = memory.admitted(
            host_bound,
            self.measured_host.get(key),
            slack=memory.HOST_MEASURED_SLACK_BYTES,
            upper_bound=False,
        )
        return Estimate(device, host, bound=gpu, by=by, host_bound=host_bound, host_by=host_by)

    def _measured_retry(self, estimate: Estimate, first: ItemOutcome) -> dict[str, Any] | None:
        """What to record when an item admitted by its measured peak ran out of memory (it is
        then rerun by its estimate, never charged for it: a stale figure costs time only)."""
        numbers = first.metrics.get("out_of_memory")
        if estimate.by != memory.BY_MEASURE or not isinstance(numbers, dict):
            return None
        return {"admitted_bytes": estimate.device, "out_of_memory": numbers}

    @contextlib.contextmanager
    def _held(self, estimate: Estimate, *, alone: bool = False) -> Iterator[list[Grant]]:
        """Hold the item's share while the block runs; the grant is in the list afterwards."""
        granted: list[Grant] = []
        if self.budget is None:
            yield granted
            return
        with self.budget.hold(estimate.device, host=estimate.host, alone=alone) as grant:
            granted.append(grant)
            yield granted

    def _note_memory(
        self, outcome: ItemOutcome, estimate: Estimate, granted: list[Grant]
    ) -> ItemOutcome:
        if not granted or self.budget is None or self.budget.device is None:
            return outcome
        grant = granted[0]
        noted: dict[str, Any] = {
            "memory_estimate_bytes": estimate.upper,
            "memory_admitted_bytes": estimate.device,
            "memory_admitted_by": estimate.by,
        }
        if self.budget.host is not None:
            noted["host_memory_estimate_bytes"] = estimate.host_upper
            noted["host_memory_admitted_bytes"] = estimate.host
            noted["host_memory_admitted_by"] = estimate.host_by
        if grant.waited_s >= 0.5:
            noted["memory_wait_s"] = round(grant.waited_s, 1)
            # which ledger kept it waiting: the GPU's memory, the host's, or an item alone
            waits = {name: round(s, 1) for name, s in grant.waits_s().items() if s >= 0.05}
            noted["memory_waits_s"] = waits
        if grant.device is not None and grant.device.alone:
            noted["memory_alone"] = True  # larger than what the GPU's items share
        return _with_metrics(outcome, **noted)

    def _confirmed(
        self, request: ItemRequest, first: ItemOutcome, rerun: Callable[[], ItemOutcome]
    ) -> ItemOutcome:
        """`first`, a failure, with the counts of `confirm_failures` reruns (`rerun`: one run in
        a fresh worker, same seed); flaky when one of them passed (the renderer says so)."""
        runs = self.confirm_failures
        failed = sum(not rerun().passed for _ in range(runs))
        first = _with_metrics(first, confirm_runs=runs, confirm_failed=failed, flaky=failed < runs)
        if failed < runs:
            first = _with_note(
                first,
                f"Flaky: the item failed {1 + failed} of {1 + runs} runs with the same seed (this "
                f"run, then {failed} of {runs} reruns, each in a fresh worker process); the "
                "first failure is the one reported. A failure that a fresh worker does not "
                "repeat can also be state the backend kept from an earlier item in the process "
                "(a cache keyed by shapes, a schedule).",
            )
        return first


def _with_metrics(outcome: ItemOutcome, **metrics: Any) -> ItemOutcome:
    return dataclasses.replace(outcome, metrics={**outcome.metrics, **metrics})


def _with_note(outcome: ItemOutcome, note: str) -> ItemOutcome:
    """A paragraph after the problems: how the failure was confirmed (or why not)."""
    return dataclasses.replace(outcome, notes=(*outcome.notes, note))


class InProcessRunner(_Scheduling):
    """``--no-isolate``: items run in this process (a debugger sees the backend; no timeout,
    and a crash ends the run)."""

    def __init__(
        self,
        backends: Mapping[str, Backend],
        *,
        leak_threshold: int = LEAK_THRESHOLD_BYTES,
        budget: RunBudget | None = None,
        confirm_failures: int = 0,
        autotunes: frozenset[str] = frozenset(),
        measured: Mapping[str, int] | None = None,
        measured_host: Mapping[str, int] | None = None,
    ):
        self.backends = backends
        self.leaks = LeakCheck(leak_threshold)
        self.budget = budget
        self.confirm_failures = confirm_failures
        self.autotunes = autotunes
        self.measured = dict(measured or {})
        self.measured_host = dict(measured_host or {})

    def run(self, request: ItemRequest) -> ItemOutcome:
        estimate = self._estimate(request)
        outcome = self._attempt(request, estimate)
        retry = self._measured_retry(estimate, outcome)
        if retry is not None:
            estimate = estimate.by_estimate()
            outcome = self._attempt(request, estimate)
        if not outcome.passed and not outcome.harness_error and self.confirm_failures:
            outcome = self._confirmed(request, outcome, lambda: self._attempt(request, estimate))
        return outcome if retry is None else _with_metrics(outcome, memory_measured_retry=retry)

    def _attempt(self, request: ItemRequest, estimate: Estimate) -> ItemOutcome:
        with self._held(estimate) as granted, _trace_log_uncaptured():
            outcome = run_guarded(
                request, self.backends[request.label], watch=self.leaks.watch_for(request)
            )
        return self._note_memory(outcome, estimate, granted)

    def close(self) -> None:
        pass


@contextlib.contextmanager
def _trace_log_uncaptured() -> Iterator[None]:
    """torch's structured trace log without pytest's capture handlers while an item runs in
    this process. pytest (9.2) attaches them to every logger that does not propagate, and that
    log, which torch writes only where a handler is on it (its own, under TORCH_TRACE), then
    built every trace event of each compile (JSON, hashes, stacks: under cProfile 9 s of the
    117 s suites/tma's 407 reference items took on the dev CPU), and a failure's report listed
    dozens of empty "DEBUG torch.__trace" lines. Handlers of anyone else's stay."""
    log = logging.getLogger("torch.__trace")
    pytests = [h for h in log.handlers if type(h).__module__.startswith("_pytest.")]
    for handler in pytests:
        log.removeHandler(handler)
    try:
        yield
    finally:
        for handler in pytests:
            log.addHandler(handler)


@dataclass(frozen=True)
class Printed:
    """What a worker printed during an item, by stream."""

    stdout: str = ""
    stderr: str = ""


class _Spool:
    """A worker's stdout or stderr: a file the worker appends to and the parent empties into
    its own stream after each item, so the output lands in that item's captured output."""

    def __init__(self, stream_name: str):
        self.stream_name = stream_name
        fd, path = tempfile.mkstemp(prefix=f"gemmconf-worker-{stream_name}-")
        self.read_fd = fd
        self.write_fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.unlink(path)

    def forward(self) -> str:
        """Empty the file into this process's stream; what it held."""
        chunks = []
        while chunk := os.read(self.read_fd, 1 << 16):
            chunks.append(chunk)
        if not chunks:
            return ""
        os.ftruncate(self.read_fd, 0)
        os.lseek(self.read_fd, 0, os.SEEK_SET)
        text = b"".join(chunks).decode(errors="replace")
        try:
            stream = getattr(sys, self.stream_name)
            stream.write(text)
            stream.flush()
        except (AttributeError, OSError, ValueError):  # no stream any more (interpreter exit)
            pass
        return text

    def close(self) -> None:
        os.close(self.read_fd)


def worker_environment(
    env: Mapping[str, str] | None = None, *, timing: bool = False
) -> dict[str, str]:
    """The environment a worker starts with: this process's, `env` over it, and glibc's tcache
    off so that the poison reaches every block the backend's call takes (`integrity.Poison`),
    unless the worker times calls (--benchmark): timings are taken under the allocator a user's
    process has (with it off, a 16x64x32 CPU `F.linear` took 0.1-1 us more of its 8 us).
    """
    full = {**os.environ, **(env or {})}
    return full if timing else integrity.allocator_env(full)


class _Worker:
    """One worker process and its socket, from the parent's side."""

    def __init__(
        self, config: WorkerConfig, env: Mapping[str, str] | None = None, *, timing: bool = False
    ):
        parent_end, child_end = socket.socketpair()
        self.spools = [_Spool("stdout"), _Spool("stderr")]
        full_env = worker_environment(env, timing=timing)
        with child_end:
            out, err = self.spools[0].write_fd, self.spools[1].write_fd
            # forked from this process's fork server where it can (milliseconds), else a fresh
            # interpreter (seconds)
            self.process: Any = forkserver.start_worker(full_env, child_end.fileno(), out, err)
            if self.process is None:
                self.process = subprocess.Popen(  # -u: nothing is lost in a buffer at a crash
                    [sys.executable, "-u", "-c", BOOT, str(child_end.fileno())],
                    pass_fds=[child_end.fileno()],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    env=full_env,
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
        self._let_go()

    def abandon(self) -> None:
        """End a worker that has nothing more to say (it answered, then lost its CUDA context):
        SIGKILL, and no wait for its exit, whose teardown of a lost context takes the driver a
        second or so. A forked worker is reaped by its fork server; a spawned one by a thread."""
        self.process.kill()
        if isinstance(self.process, subprocess.Popen):
            threading.Thread(target=self.process.wait, name="gemmconf-reap", daemon=True).start()
        self._let_go()

    def _let_go(self) -> None:
        """Close what this side holds of an ended worker; its last output goes to our streams."""
        self.conn.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        for spool in self.spools:
            spool.forward()
            spool.close()
        self.spools = []

    def forward_output(self) -> Printed:
        """The worker's output so far to our streams (the item's captured output); what it
        printed."""
        return Printed(**{spool.stream_name: spool.forward() for spool in self.spools})


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux >= 5.3
        return None


class IsolatedRunner(_Scheduling):
    """Runs items in a worker process that is replaced after a crash, hang or CUDA fault."""

    def __init__(
        self,
        specs: Mapping[str, str],
        options: RunOptions,
        *,
        timeouts: TimeoutPolicy | None = None,
        leak_threshold: int = LEAK_THRESHOLD_BYTES,
        budget: RunBudget | None = None,
        confirm_failures: int = 0,
        autotunes: frozenset[str] = frozenset(),
        worker_env: Mapping[str, str] | None = None,
        measured: Mapping[str, int] | None = None,
        measured_host: Mapping[str, int] | None = None,
        timing: bool = False,
        warm_cuda: bool = False,
    ):
        self.config = WorkerConfig(dict(specs), options, leak_threshold, warm_cuda=warm_cuda)
        self.timing = timing  # the workers time calls (--benchmark): `worker_environment`
        self.timeouts = timeouts or TimeoutPolicy()
        self.budget = budget
        self.confirm_failures = confirm_failures
        self.autotunes = autotunes
        self.measured = dict(measured or {})
        self.measured_host = dict(measured_host or {})
        self.worker_env = dict(worker_env or {})
        self.starts = 0  # workers started, spares included
        self.slowest: dict[str, float] = {}  # label -> longest item finished (the pace)
        self.slowest_phase: dict[tuple[str, str], float] = {}  # (label, phase) -> longest
        self.alone_reruns = 0
        self.phase_s: dict[str, float] = {}  # the last attempt's seconds per phase
        self._ran_alone = False  # the last attempt: no other item of the run ran beside it
        self._worker: _Worker | None = None
        self._spare: _Worker | None = None  # kept from the first lost worker on (module docstring)
        self._registered = False

    def run(self, request: ItemRequest) -> ItemOutcome:
        estimate = self._estimate(request)
        outcome, overrun = self._attempt(request, estimate)
        retry = None if overrun is not None else self._measured_retry(estimate, outcome)
        if retry is not None:  # admitted by a figure too small for it now: by its estimate
            estimate = estimate.by_estimate()
            outcome, overrun = self._attempt(request, estimate, fresh=True)
        outcome = self._charged(request, estimate, outcome, overrun)
        return outcome if retry is None else _with_metrics(outcome, memory_measured_retry=retry)

    def _charged(
        self,
        request: ItemRequest,
        estimate: Estimate,
        outcome: ItemOutcome,
        overrun: Overrun | None,
    ) -> ItemOutcome:
        """The attempt's outcome, its timeout or out-of-memory error confirmed before it is
        charged, a failure rerun as --confirm-failures asks."""
        if overrun is not None and _harness_phase(overrun):
            return _harness_overrun(outcome, overrun)
        if overrun is not None:
            return self._charge_timeout(request, estimate, outcome, overrun)
        if isinstance(outcome.metrics.get("out_of_memory"), dict):
            return self._charge_out_of_memory(request, estimate, outcome)
        if not outcome.passed and not outcome.harness_error and self.confirm_failures:
            return self._confirmed(
                request, outcome, lambda: self._attempt(request, estimate, fresh=True)[0]
            )
        return outcome

    def _attempt(
        self, request: ItemRequest, estimate: Estimate, *, alone: bool = False, fresh: bool = False
    ) -> tuple[ItemOutcome, Overrun | None]:
        """One run of the item, holding its share (all of the machine when `alone`), in a
        fresh worker when `fresh`."""
        if fresh:
            self._discard()
        with self._held(estimate, alone=alone) as granted:
            self.phase_s = {}
            outcome, overrun = self._run_once(request)
        if self.phase_s:  # where the item's time went: "start" is the wait for the worker
            outcome = dataclasses.replace(outcome, phase_s=dict(self.phase_s))
        outcome = self._note_memory(outcome, estimate, granted)
        self._ran_alone = bool(granted) and granted[0].ran_alone
        if overrun is not None and granted:
            overrun = dataclasses.replace(overrun, alone=granted[0].ran_alone)
        return outcome, overrun

    def _charge_out_of_memory(
        self, request: ItemRequest, estimate: Estimate, first: ItemOutcome
    ) -> ItemOutcome:
        """A backend's out-of-memory failure stands once it ran alone: memory the other items of
        the run took is not the backend's to answer for (`out_of_memory.confirmed` says how)."""
        numbers = dict(first.metrics["out_of_memory"])
        if self._ran_alone or self.budget is None:
            numbers["confirmed"] = "ran alone" if self._ran_alone else "no"
            return _with_metrics(first, out_of_memory=numbers)
        if self.alone_reruns >= MAX_ALONE_RERUNS:
            return _with_metrics(first, out_of_memory={**numbers, "confirmed": "no"})
        self.alone_reruns += 1
        second, _ = self._attempt(request, estimate, alone=True, fresh=True)
        again = second.metrics.get("out_of_memory")
        if isinstance(again, dict):
            return _with_metrics(second, out_of_memory={**again, "confirmed": "rerun alone"})
        return _with_metrics(second, out_of_memory_unconfirmed=numbers)  # it fit, alone

    def _charge_timeout(
        self, request: ItemRequest, estimate: Estimate, first: ItemOutcome, overrun: Overrun
    ) -> ItemOutcome:
        """A timeout stands only once confirmed alone (the module docstring)."""
        noted: dict[str, Any] = {"timeout_phase": overrun.phase}
        if overrun.limit is not None:
            noted["timeout_s"] = overrun.limit
        if overrun.alone or self.budget is None:
            noted["timeout_confirmed"] = "ran alone" if overrun.alone else "no"
            how = "it ran alone: no other item of this run was running" if overrun.alone else ""
            return _with_confirmation(_with_metrics(first, **noted), how)
        if self.alone_reruns >= MAX_ALONE_RERUNS:
            noted["timeout_confirmed"] = "no"
            return _with_confirmation(
                _with_metrics(first, **noted),
                f"not rerun alone: {MAX_ALONE_RERUNS} timeouts were already rerun alone in this "
                "process, and each stops the whole run",
            )
        self.alone_reruns += 1
        first_reason = render(first).reason
        second, again = self._attempt(request, estimate, alone=True, fresh=True)
        if again is not None:
            noted = {
                "timeout_phase": again.phase,
                "timeout_confirmed": "rerun alone",
                "timeout_first": first_reason,
            }
            if again.limit is not None:
                noted["timeout_s"] = again.limit
            return _with_confirmation(
                _with_metrics(second, **noted),
                "again when rerun alone, in a fresh worker, with no other item running",
            )
        second = _with_metrics(
            second,
            timeout_unconfirmed={
                "first": first_reason,
                "phase": overrun.phase,
                "elapsed_s": round(overrun.elapsed, 1),
                "load_avg": round(os.getloadavg()[0], 2),
            },
        )
        if second.passed:
            return second
        return _with_note(
            second,
            f"An earlier run of this item {first_reason}, among other items; rerun alone, in a "
            "fresh worker with no other item running, it finished in time, so the timeout was not "
            "charged: this is that run's result.",
        )

    def _run_once(self, request: ItemRequest) -> tuple[ItemOutcome, Overrun | None]:
        worker = self._ready_worker()
        if isinstance(worker, ItemOutcome):
            return worker, None
        cold = request.label not in worker.warm
        start = time.perf_counter()
        try:
            try:
                worker.conn.send(request)
            except OSError:  # died while idle (killed from outside): one fresh worker, once
                self._discard()
                worker = self._ready_worker()
                if isinstance(worker, ItemOutcome):
                    return worker, None
                cold = True
                worker.conn.send(request)
            reply = self._await_result(worker, request, cold=cold)
        except BaseException:  # Ctrl-C or SIGTERM: the item is abandoned with its worker
            self._discard()
            raise
        if isinstance(reply, Overrun):
            self._discard()
            return _timed_out(reply), reply
        if reply is None:
            returncode = worker.returncode()
            printed = worker.forward_output()  # all of it: the process has ended
            self._lost()
            return _with_printed(_crashed(returncode, time.perf_counter() - start), printed), None
        worker.warm.add(request.label)
        printed = worker.forward_output()
        elapsed = time.perf_counter() - start
        self.slowest[request.label] = max(self.slowest.get(request.label, 0.0), elapsed)
        if reply.restart:
            self._lost(abandon=True)
        if reply.kind != "result" or reply.result is None:
            raise WorkerError(reply.message or f"unexpected reply {reply.kind!r} from the worker")
        return _with_printed(reply.result, printed), None

    def _await_result(
        self, worker: _Worker, request: ItemRequest, *, cold: bool
    ) -> Reply | Overrun | None:
        """The item's reply, timing each phase the worker reports against its budget (the
        seconds spent per phase add up in `self.phase_s`, the record's `phase_s`)."""
        start = phase_start = time.monotonic()
        phase = "start"
        fixed = self.timeouts.fixed is not None
        while True:
            limit = self._limit(request, phase, cold=cold)
            if limit is None:
                remaining = None
            else:
                began = start if fixed else phase_start
                remaining = max(0.0, began + limit - time.monotonic())
            try:
                reply = worker.receive(remaining)
            except TimeoutError:
                self._spent(phase, phase_start)
                return Overrun(phase, limit, time.monotonic() - start, fixed)
            now = self._spent(phase, phase_start)
            if phase != "start":
                key = (request.label, phase)
                self.slowest_phase[key] = max(self.slowest_phase.get(key, 0.0), now - phase_start)
            if reply is None or reply.kind != "phase":
                return reply
            phase, phase_start = reply.message, now

    def _spent(self, phase: str, since: float) -> float:
        """Add the time since `since` to `phase` in `self.phase_s`; the time now."""
        now = time.monotonic()
        self.phase_s[phase] = round(self.phase_s.get(phase, 0.0) + now - since, 3)
        return now

    def _limit(self, request: ItemRequest, phase: str, *, cold: bool) -> float | None:
        if phase == "start":  # no phase reported (yet): the whole item's timeout, as ever
            limit = self.timeouts.seconds(
                request.instance,
                request.device,
                cold=cold,
                slowest=self.slowest.get(request.label, 0.0),
                compile_s=request.compile_s,
            )
            if limit is not None and request.benchmark and self.timeouts.fixed is None:
                limit += BENCH_S
            return limit
        return self.timeouts.phase_seconds(
            phase,
            request.instance,
            request.device,
            cold=cold,
            compile_s=request.compile_s,
            autotunes=request.label in self.autotunes,
            slowest=self.slowest_phase.get((request.label, phase), 0.0),
        )

    def close(self) -> None:
        for worker in (self._worker, self._spare):
            if worker is not None:
                worker.stop(polite=True)
        self._worker = self._spare = None

    def _discard(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def _lost(self, *, abandon: bool = False) -> None:
        """The worker crashed, or lost its CUDA context (`abandon`: it is killed, not waited
        for); from now on a spare is kept (the module docstring)."""
        if abandon and self._worker is not None:
            self._worker.abandon()
            self._worker = None
        self._discard()
        if self._spare is None:
            self._spare = self._new_worker()

    def prestart(self) -> None:
        """Start a worker now (while pytest collects), so the first item need not wait."""
        if self._worker is None:
            self._spawn()

    def _new_worker(self) -> _Worker:
        if not self._registered:
            atexit.register(self.close)
            self._registered = True
        self.starts += 1
        return _Worker(self.config, self.worker_env, timing=self.timing)

    def _spawn(self) -> _Worker:
        self._worker = self._new_worker()
        return self._worker

    def _ready_worker(self) -> _Worker | ItemOutcome:
        """The worker once it said it is ready (its start is not timed against the item), or an
        ItemOutcome saying why it would not start (a harness error). A spare, where one is kept,
        takes the place of a worker gone, and another spare starts."""
        if self._worker is None and self._spare is not None:
            self._worker, self._spare = self._spare, self._new_worker()
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
            reply = Reply("start_failed", message=f"it {exit_text(worker.returncode())[1]}")
        self._discard()
        return ItemOutcome.harness("starting the isolation worker", WorkerStartError(reply.message))


class WorkerStartError(Exception):
    """The isolation worker did not start; the message is what it said (a traceback)."""

    def __str__(self) -> str:
        text = str(self.args[0]).strip() if self.args else ""
        last = text.splitlines()[-1] if text else "?"
        return f"isolation worker failed to start: {last}\n{text}"


_exit_text = exit_text  # (kept: the isolation package exports it)


def _with_printed(outcome: ItemOutcome, printed: Printed) -> ItemOutcome:
    """A failure charged to the backend, with what the worker printed on stderr and on stdout
    during the item (`record.printed_note`, in the record's details: where a compiler's
    diagnostic behind a generic exception, or a runtime check's before an abort, is found); any
    other outcome as it is."""
    if outcome.passed or outcome.harness_error:
        return outcome
    for stream in ("stderr", "stdout"):
        note = printed_note(getattr(printed, stream), stream)
        outcome = outcome if note is None else _with_note(outcome, note)
    return outcome


def _crashed(returncode: int, elapsed: float) -> ItemOutcome:
    return ItemOutcome(problems=(Crash("worker", returncode=returncode),), duration_s=elapsed)


def _timed_out(overrun: Overrun) -> ItemOutcome:
    problem = TimedOut(
        overrun.limit, overrun.elapsed, TERM_GRACE_S, phase=overrun.phase, fixed=overrun.fixed
    )
    return ItemOutcome(problems=(problem,), duration_s=overrun.elapsed)


class HarnessOverrun(TimeoutError):
    """gemmconf's own work on an item (its inputs and eager's run, or its checks) overran."""


def _harness_phase(overrun: Overrun) -> bool:
    """The time ran out in a phase that is gemmconf's, not the backend's (`progress`): building
    inputs and running eager ("prepare"), or checking ("check": the fp64 reference, the oracle;
    the backend's further calls there report "call"). A fixed --item-timeout is one limit for
    the whole item, charged as before."""
    return not overrun.fixed and overrun.phase not in (*BACKEND_PHASES, "start")


def _harness_overrun(timed_out: ItemOutcome, overrun: Overrun) -> ItemOutcome:
    """The attempt's outcome as a harness error, never the backend's timeout: its calls had
    returned in time (its metrics, duration and phases kept)."""
    limit = "" if overrun.limit is None else f" budget of {overrun.limit:g} s"
    error = HarnessOverrun(
        f"gemmconf's own work in phase '{overrun.phase}' ({PHASES.get(overrun.phase, '')}) "
        f"overran its{limit} after {overrun.elapsed:.0f} s; the worker was stopped. The backend's "
        "calls had returned: nothing is charged to it"
    )
    fault = ItemOutcome.harness(f"phase '{overrun.phase}'", error)
    metrics = {**timed_out.metrics, "timeout_phase": overrun.phase}
    return dataclasses.replace(timed_out, problems=fault.problems, metrics=metrics)


def _with_confirmation(outcome: ItemOutcome, how: str) -> ItemOutcome:
    """A charged timeout, saying how it was confirmed (or why it was not)."""
    if not how:
        return outcome
    problems = tuple(
        dataclasses.replace(p, confirmation=how) if isinstance(p, TimedOut) else p
        for p in outcome.problems
    )
    return dataclasses.replace(outcome, problems=problems)
