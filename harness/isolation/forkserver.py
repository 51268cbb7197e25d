"""A fork server for isolation workers: one interpreter that imported torch and gemmconf's worker
once, and forks each new worker from that state in milliseconds, where a fresh interpreter takes
seconds (about 3.5 s of CPU on the dev CPU: torch, gemmconf, the worker's modules). Every pytest
process starts workers: one at its start, one after each crash, hang or CUDA fault, and one per
in-process pytest session (the project's own tests run hundreds).

Forking is safe here because the server never touches a GPU, runs no torch op and starts no
thread: it checks that it has one thread before each fork, and refuses otherwise. A worker forked
from it is what `BOOT` makes of a fresh interpreter: the parent's environment (`os.environ` set
whole), working directory, sys.path, and the socket, stdout and stderr the parent gave it (passed
as file descriptors), then `worker_main`.

A process's first worker is spawned as before and starts no server: most runs (one pytest
session, no crash) need no other. From the second worker on, one server serves the pytest
process while the environment its workers get stays the same (`server_key`: the interpreter,
where torch and gemmconf come from, and the environment less the variables pytest's test
sessions set per test and those read only after the fork); a different one starts another
server. The server dies with that process (its socket closes; on Linux also
PR_SET_PDEATHSIG). The workers are the server's children: it reaps them and tells their exit
status on request; the parent watches each through a pidfd. Where something is missing (not
Linux, no pidfd, no SOCK_SEQPACKET), the server failed, or GEMMCONF_FORK_SERVER=0, workers
start as fresh interpreters as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

ENV_SWITCH = "GEMMCONF_FORK_SERVER"  # "0": start every worker as a fresh interpreter
# set per test by pytest's own pytester sessions: not in the server's key
VOLATILE = frozenset(("HOME", "USERPROFILE", "PWD", "OLDPWD"))
# Read at run time only, after the fork (a forked worker gets the parent's environment whole):
# pytest's and gemmconf's own variables (gemmconf's modules read none at import; a session sets
# some per run, as the memory share, and tests per test). Not in the server's key either, so that
# they do not restart the server (before 2026-11-29 each test that set one started a new
# server and spawned its worker meanwhile: two imports of torch where one fork would do).
RUN_TIME_PREFIXES = ("PYTEST_", "GEMMCONF_")
MESSAGE_BYTES = 1 << 20  # one request: the environment as JSON
READY_TIMEOUT_S = 600.0  # the server's own start: importing torch on a loaded machine

SERVER_BOOT = (
    "import signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "from gemmconf.isolation.forkserver import serve\n"
    "serve(int(sys.argv[1]))\n"
)


def server_key(env: Mapping[str, str]) -> str:
    """What a server's workers share: the interpreter, the torch and gemmconf it imported, and
    the environment it imported them under (less `VOLATILE` and `RUN_TIME_PREFIXES`)."""
    import torch

    import gemmconf

    kept = {
        k: v for k, v in env.items() if k not in VOLATILE and not k.startswith(RUN_TIME_PREFIXES)
    }
    return json.dumps([sys.executable, torch.__file__, gemmconf.__file__, kept], sort_keys=True)


def serve(control_fd: int) -> None:
    """The server's loop: import what every worker imports, say ready, then fork on request."""
    control = socket.socket(fileno=control_fd)
    _die_with_parent()
    import torch  # noqa: F401  the seconds every worker saves

    import gemmconf.isolation.worker
    import gemmconf.runner  # noqa: F401

    finished: dict[int, int] = {}  # pid -> exit status (negative: the signal), reaped
    try:
        control.send(json.dumps({"ready": os.getpid()}).encode())
    except OSError:  # the parent ended while this server imported: nothing to serve, nor to say
        return
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, MESSAGE_BYTES, 3)
        except OSError:
            return
        if not data:
            return  # the parent is gone
        request = json.loads(data)
        _reap(finished)
        if request["op"] == "fork":
            reply = _fork(control, request, fds)
        else:  # "status"
            reply = {"status": _status(finished, request["pid"], request.get("block", False))}
        control.send(json.dumps(reply).encode())


def _fork(control: socket.socket, request: dict[str, Any], fds: list[int]) -> dict[str, Any]:
    if threading.active_count() != 1 or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return {"refused": f"{threading.active_count()} threads, {len(fds)} descriptors"}
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            _become_worker(control, request, fds)
        finally:
            os._exit(70)  # only if the worker's own exit did not happen
    for fd in fds:
        os.close(fd)
    return {"pid": pid}


def _become_worker(control: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    control.close()
    conn_fd, out_fd, err_fd = fds
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    os.close(out_fd)
    os.close(err_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    from multiprocessing.connection import Connection

    from gemmconf.isolation.worker import exit_quickly, worker_main

    conn = Connection(conn_fd)
    sys.path[:] = conn.recv()
    worker_main(conn)
    exit_quickly()


def _reap(finished: dict[int, int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        finished[pid] = os.waitstatus_to_exitcode(status)


def _status(finished: dict[int, int], pid: int, block: bool) -> int | None:
    if pid not in finished:
        try:
            done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return finished.get(pid)
        if done:
            finished[pid] = os.waitstatus_to_exitcode(status)
    return finished.pop(pid, None)


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class ForkServer:
    """The parent's side: start the server, ask it for workers and for their exit status."""

    def __init__(self, env: Mapping[str, str]):
        self.key = server_key(env)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-u", "-c", SERVER_BOOT, str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                env=dict(env),
            )
        self.control = ours
        self.ready = False
        self.busy = False  # a request is out: a signal handler's status question must not cut in

    def _request(self, request: dict[str, Any], fds: tuple[int, ...] = ()) -> dict[str, Any]:
        if self.busy:
            raise BlockingIOError("the fork server is answering another request")
        self.busy = True
        try:
            socket.send_fds(self.control, [json.dumps(request).encode()], list(fds))
            return json.loads(self.control.recv(MESSAGE_BYTES) or b"null") or {}
        finally:
            self.busy = False

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> bool:
        """Whether the server has imported what workers share (waiting up to `timeout`)."""
        if not self.ready:
            readable, _, _ = select.select([self.control], [], [], timeout)
            if not readable:
                return False
            data = self.control.recv(MESSAGE_BYTES)
            self.ready = bool(data) and "ready" in json.loads(data)
        return self.ready

    def fork(self, env: Mapping[str, str], conn_fd: int, out_fd: int, err_fd: int) -> int | None:
        """A new worker's pid, or None where the server could not fork one."""
        try:
            if not self.wait_ready():
                return None
            reply = self._request(
                {"op": "fork", "env": dict(env), "cwd": os.getcwd()}, (conn_fd, out_fd, err_fd)
            )
        except (OSError, ValueError):
            return None
        return reply.get("pid")

    def status(self, pid: int, *, block: bool) -> int | None:
        return self._request({"op": "status", "pid": pid, "block": block}).get("status")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.control.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class ForkedProcess:
    """A worker the server forked, with the part of `subprocess.Popen` the parent uses."""

    def __init__(self, pid: int, server: ForkServer):
        self.pid, self.server = pid, server
        self.returncode: int | None = None
        self._pidfd = os.pidfd_open(pid)

    def _dead(self, timeout: float = 0.0) -> bool:
        return bool(select.select([self._pidfd], [], [], timeout)[0])

    def poll(self) -> int | None:
        if self.returncode is None and self._dead():
            try:
                status = self.server.status(self.pid, block=True)
            except (OSError, ValueError, BlockingIOError):
                return -signal.SIGKILL  # dead, status not to be had now (asked mid-request)
            self.returncode = -signal.SIGKILL if status is None else status
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
            self._dead(0.2 if left is None else min(left, 0.2))
        return self.returncode if self.returncode is not None else -signal.SIGKILL

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __del__(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            os.close(self._pidfd)


_server: ForkServer | None = None
_needed = False  # a worker was started in this process before: the next ones are worth a server


def available() -> bool:
    return (
        os.environ.get(ENV_SWITCH, "1") != "0"
        and sys.platform.startswith("linux")
        and hasattr(os, "pidfd_open")
        and hasattr(socket, "SOCK_SEQPACKET")
        and hasattr(socket, "send_fds")
    )


def server_for(env: Mapping[str, str]) -> ForkServer | None:
    """This process's server for workers with `env` (started now where none fits), or None."""
    global _server
    if not available():
        return None
    key = server_key(env)
    if _server is not None and (_server.key != key or _server.process.poll() is not None):
        _server.close()
        _server = None
    if _server is None:
        try:
            _server = ForkServer(env)
        except OSError:
            return None
    return _server


def start_worker(env: Mapping[str, str], conn_fd: int, out_fd: int, err_fd: int) -> Any | None:
    """A worker forked by this process's server (a `ForkedProcess`), or None: start one the
    usual way. The process's first worker is spawned and starts no server (a run without a
    crash, in one pytest session, needs no other worker); from the second on a server is
    started. A server still importing is not waited for: the worker it would fork is no sooner
    ready than a fresh interpreter started now."""
    global _needed
    if not _needed:  # a process's first worker: one that never needs another pays for no server
        _needed = True
        return None
    server = server_for(env)
    if server is None:
        return None
    try:
        if not server.wait_ready(timeout=0.0):
            return None
    except (OSError, ValueError):
        return None
    pid = server.fork(env, conn_fd, out_fd, err_fd)
    if pid is None:
        return None
    return ForkedProcess(pid, server)
