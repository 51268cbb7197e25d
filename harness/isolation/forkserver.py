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
where torch, gemmconf and the other packages it imports come from, and the environment less
the variables pytest's test sessions set per test and those read only after the fork); a
different one starts another
server. The server dies with that process (its socket closes; on Linux also
PR_SET_PDEATHSIG). The workers are the server's children: it reaps them and tells their exit
status on request; the parent watches each through a pidfd. Where something is missing (not
Linux, no pidfd, no SOCK_SEQPACKET), the server failed, or GEMMCONF_FORK_SERVER=0, workers
start as fresh interpreters as before.

A ready server also serves the processes its owner starts (`SHARE_ENV` names its socket in the
owner's environment from then on): a `gemmconf run` or pytest started by a test, and their xdist
workers, fork even their first worker from it when their workers' environment is the one it
serves (`server_key`), where each would otherwise import torch again (make test's tests stage
started about 45 fresh workers, some 3.5 s of CPU each). The socket lives in a folder only this
user can enter, and the server also refuses a peer of another user. A guest's worker watches
the guest through a pidfd and dies with it, as an owner's worker dies with its server.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from typing import Any

ENV_SWITCH = "GEMMCONF_FORK_SERVER"  # "0": start every worker as a fresh interpreter
SHARE_ENV = "GEMMCONF_FORK_SERVER_AT"  # the socket of a ready server that serves guests
SOCKET_NAME = "fork-server"  # in a private folder made by the owner (tempfile.mkdtemp: 0700)
# set per test by pytest's own pytester sessions: not in the server's key. PY_COLORS ("0" in each
# of them) was until 2026-11-30: in make test's tests stage an in-process run replaced the server
# its test process had started and shared (one more import of torch), and a `gemmconf run` that
# a test started outside one was refused by the new one (no PY_COLORS) and spawned its worker
VOLATILE = frozenset(("HOME", "USERPROFILE", "PWD", "OLDPWD", "COLUMNS", "LINES", "PY_COLORS"))
# Nor PYTHONPATH (`gemmconf run` puts its folder first, for `--backend module:attr`): a forked
# worker gets its process's sys.path after the fork, and where the packages the server imported
# come from is part of the key itself (`IMPORTED`), so a path that would change them changes it.
NOT_KEYED = VOLATILE | {"PYTHONPATH"}
IMPORTED = ("torch", "gemmconf", "triton", "numpy", "yaml")
# Read at run time only, after the fork (a forked worker gets the parent's environment whole):
# pytest's and gemmconf's own variables (gemmconf's modules read none at import; a session sets
# some per run, as the memory share, and tests per test). Not in the server's key either, so that
# they do not restart the server (before 2026-11-29 each test that set one started a new
# server and spawned its worker meanwhile: two imports of torch where one fork would do).
RUN_TIME_PREFIXES = ("PYTEST_", "GEMMCONF_")
MESSAGE_BYTES = 1 << 20  # one request: the environment as JSON
READY_TIMEOUT_S = 600.0  # the server's own start: importing torch on a loaded machine
# a guest's hello: a ready server answers in milliseconds, one still importing torch once ready
GUEST_TIMEOUT_S = 30.0

SERVER_BOOT = (
    "import signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "from gemmconf.isolation.forkserver import serve\n"
    "serve(int(sys.argv[1]), int(sys.argv[2]))\n"
)


def server_key(env: Mapping[str, str]) -> str:
    """What a server's workers share: the interpreter, where the packages it imports come from
    (`IMPORTED`, as this process finds them), and the environment it imported them under (less
    `NOT_KEYED` and `RUN_TIME_PREFIXES`)."""
    kept = {
        k: v for k, v in env.items() if k not in NOT_KEYED and not k.startswith(RUN_TIME_PREFIXES)
    }
    origins = {name: _origin(name) for name in IMPORTED}
    return json.dumps([sys.executable, origins, kept], sort_keys=True)


def _origin(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # ValueError: imported without a spec
        return None
    return None if spec is None else spec.origin


def serve(control_fd: int, listen_fd: int) -> None:
    """The server's loop: import what every worker imports, say ready, then fork on request,
    for the owner (on `control`) and for guests (connections to `listen_fd`'s socket)."""
    control = socket.socket(fileno=control_fd)
    listener = socket.socket(fileno=listen_fd)
    _die_with_parent()
    import torch  # noqa: F401  the seconds every worker saves

    import gemmconf.isolation.worker
    import gemmconf.runner  # noqa: F401

    key = server_key(os.environ)  # the owner started this process with the workers' environment
    children = _ChildEvents()
    finished: dict[int, int] = {}  # pid -> exit status (negative: the signal), reaped
    try:
        control.send(json.dumps({"ready": os.getpid()}).encode())
    except OSError:  # the parent ended while this server imported: nothing to serve, nor to say
        return
    guests: dict[socket.socket, bool] = {}  # connection -> said hello with our environment
    while True:
        readable, _, _ = select.select([control, listener, children.fd, *guests], [], [])
        children.drain()
        _reap(finished)
        for sock in readable:
            owned = [control, listener, *children.fds, *guests]  # a forked worker closes them
            if sock is listener:
                guests.update(dict.fromkeys(_accept(listener), False))
            elif sock is control:
                if _answer(control, key, finished, owned) is None:
                    return  # the owner is gone
            elif sock in guests:
                welcome = _answer(sock, key, finished, owned, guests[sock])
                if welcome is None:
                    del guests[sock]
                    sock.close()
                else:
                    guests[sock] = welcome


def _accept(listener: socket.socket) -> list[socket.socket]:
    """The new guest connection, if it is this user's (the folder keeps others out already)."""
    try:
        conn, _ = listener.accept()
    except OSError:
        return []
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", creds)
    except OSError:
        uid = -1
    if uid != os.getuid():
        conn.close()
        return []
    return [conn]


def _answer(
    sock: socket.socket,
    key: str,
    finished: dict[int, int],
    owned: list[Any],
    welcome: bool = True,
) -> bool | None:
    """Reads one request from `sock` and answers it (`owned`: the server's sockets and
    descriptors, `sock` among them, which a worker it forks closes). Returns whether the peer
    may ask for workers from now on (a guest: once its hello named our environment), or None
    once it is gone or sent what no peer of ours sends."""
    fds: list[int] = []
    try:
        data, fds, _, _ = socket.recv_fds(sock, MESSAGE_BYTES, 3)
        if not data:
            return None
        request = json.loads(data)
        if request["op"] == "hello":  # a guest: served only if its workers' environment is ours
            welcome = request["key"] == key
            reply: dict[str, Any] = {"accepted": True} if welcome else {"refused": "environment"}
        elif not welcome:
            raise ValueError("a request before the hello")
        elif request["op"] == "fork":
            reply = _fork(owned, request, fds)
            fds = []  # _fork closed them
        else:  # "status"
            reply = {"status": _status(finished, request["pid"], request.get("block", False))}
        sock.send(json.dumps(reply).encode())
    except (OSError, ValueError, KeyError, TypeError):
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        return None
    return welcome


class _ChildEvents:
    """Wakes the server's select when a worker ends, so that it is reaped at once (a process
    that looks for its workers after a run must not find zombies)."""

    def __init__(self) -> None:
        self.fd, write = os.pipe()
        self.fds = (self.fd, write)  # a forked worker closes both
        os.set_blocking(self.fd, False)
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self.fd, 512):
                pass


def _fork(sockets: list[Any], request: dict[str, Any], fds: list[int]) -> dict[str, Any]:
    if threading.active_count() != 1 or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return {"refused": f"{threading.active_count()} threads, {len(fds)} descriptors"}
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            _become_worker(sockets, request, fds)
        finally:
            os._exit(70)  # only if the worker's own exit did not happen
    for fd in fds:
        os.close(fd)
    return {"pid": pid}


def _become_worker(sockets: list[Any], request: dict[str, Any], fds: list[int]) -> None:
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for sock in sockets:  # the server's: the worker talks on its own connection only
        if isinstance(sock, int):
            os.close(sock)
        else:
            sock.close()
    conn_fd, out_fd, err_fd = fds
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    os.close(out_fd)
    os.close(err_fd)
    if request.get("watch"):
        _die_with(request["watch"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    from multiprocessing.connection import Connection

    from gemmconf.isolation.worker import exit_quickly, worker_main

    conn = Connection(conn_fd)
    sys.path[:] = conn.recv()
    worker_main(conn)
    exit_quickly()


def _die_with(pid: int) -> None:
    """A guest's worker: SIGKILL itself when the guest ends (what PR_SET_PDEATHSIG does for a
    worker whose parent is the process it serves)."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # the guest is gone already
        os.kill(os.getpid(), signal.SIGKILL)
        return

    def watch() -> None:
        select.select([pidfd], [], [])
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="gemmconf-guest-watch", daemon=True).start()


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


class _Connection:
    """A process's side of a server: ask it for workers and for their exit status."""

    address = ""  # the server's socket, where guests connect

    def __init__(self, key: str, control: socket.socket):
        self.key = key
        self.control = control
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
        return self.ready

    def alive(self) -> bool:
        return True

    def fork(self, env: Mapping[str, str], conn_fd: int, out_fd: int, err_fd: int) -> int | None:
        """A new worker's pid, or None where the server could not fork one."""
        try:
            if not self.wait_ready():
                return None
            request = {"op": "fork", "env": dict(env), "cwd": os.getcwd(), **self._watch()}
            reply = self._request(request, (conn_fd, out_fd, err_fd))
        except (OSError, ValueError):
            return None
        return reply.get("pid")

    def _watch(self) -> dict[str, int]:
        return {}

    def status(self, pid: int, *, block: bool) -> int | None:
        return self._request({"op": "status", "pid": pid, "block": block}).get("status")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.control.close()


class ForkServer(_Connection):
    """A server this process started and owns (it ends with this process or `close`)."""

    def __init__(self, env: Mapping[str, str]):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.folder = tempfile.mkdtemp(prefix="gemmconf-fork-")
        self.address = os.path.join(self.folder, SOCKET_NAME)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            listener.bind(self.address)
            listener.listen(64)
            with theirs:
                fds = [theirs.fileno(), listener.fileno()]
                self.process = subprocess.Popen(
                    [sys.executable, "-u", "-c", SERVER_BOOT, *map(str, fds)],
                    pass_fds=fds,
                    stdin=subprocess.DEVNULL,
                    env=dict(env),
                )
        except OSError:
            ours.close()
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        finally:
            listener.close()
        super().__init__(server_key(env), ours)
        # the folder goes with this process, not only with `close`: every pytest process that
        # started a server left one in the temp folder (140 in a day of this machine's runs,
        # 2026-11-30). Only the owner removes it (a forked child inherits atexit handlers).
        atexit.register(_remove_folder, self.folder, os.getpid())

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> bool:
        """Whether the server has imported what workers share (waiting up to `timeout`)."""
        if not self.ready:
            readable, _, _ = select.select([self.control], [], [], timeout)
            if not readable:
                return False
            data = self.control.recv(MESSAGE_BYTES)
            self.ready = bool(data) and "ready" in json.loads(data)
        return self.ready

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        if os.environ.get(SHARE_ENV) == self.address:
            del os.environ[SHARE_ENV]
        super().close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _remove_folder(folder: str, owner: int) -> None:
    """At the owner's exit: its server's folder and socket (the server ends with its owner)."""
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


class SharedServer(_Connection):
    """Another process's server, which serves this one as a guest (`SHARE_ENV`)."""

    @classmethod
    def connect(cls, address: str, env: Mapping[str, str]) -> SharedServer | None:
        """A connection to the server at `address`, if it answers at once and serves workers
        of `env`; else None."""
        key = server_key(env)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.settimeout(GUEST_TIMEOUT_S)
            sock.connect(address)
            sock.send(json.dumps({"op": "hello", "key": key}).encode())
            accepted = json.loads(sock.recv(MESSAGE_BYTES) or b"{}").get("accepted")
            sock.settimeout(None)
        except (OSError, ValueError):
            accepted = False
        if not accepted:
            sock.close()
            return None
        shared = cls(key, sock)
        shared.address, shared.ready = address, True
        return shared

    def _watch(self) -> dict[str, int]:
        return {"watch": os.getpid()}


class ForkedProcess:
    """A worker the server forked, with the part of `subprocess.Popen` the parent uses."""

    def __init__(self, pid: int, server: _Connection):
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
_shared: SharedServer | None = None  # another process's server, serving this one
_refused: tuple[str, str] | None = None  # (address, key) a shared server did not serve
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
    if _server is not None and (_server.key != key or not _server.alive()):
        _server.close()
        _server = None
    if _server is None:
        try:
            _server = ForkServer(env)
        except OSError:
            return None
    return _server


def shared_server(env: Mapping[str, str]) -> SharedServer | None:
    """The server `SHARE_ENV` names, where it serves workers with `env` (asked once per
    address and environment), or None."""
    global _shared, _refused
    address = os.environ.get(SHARE_ENV)
    if not address or not available() or (_server is not None and _server.address == address):
        return None
    key = server_key(env)
    if _shared is not None and (_shared.address, _shared.key) != (address, key):
        _shared.close()
        _shared = None
    if _shared is None and _refused != (address, key):
        _shared = SharedServer.connect(address, env)
        if _shared is None:
            _refused = (address, key)
    return _shared


def share(env: Mapping[str, str]) -> ForkServer | None:
    """Starts this process's server for workers with `env` now (where none fits) and names it
    to the processes started from now on (`SHARE_ENV`): a process that starts `gemmconf` runs
    (a test session, say) so that their first workers are forked too. A guest that asks while
    the server still imports waits for its answer (up to GUEST_TIMEOUT_S)."""
    server = server_for(env)
    if server is not None:
        os.environ[SHARE_ENV] = server.address
    return server


def start_worker(env: Mapping[str, str], conn_fd: int, out_fd: int, err_fd: int) -> Any | None:
    """A forked worker (a `ForkedProcess`), or None: start one the usual way. A server that
    this process's parent shares (`SHARE_ENV`) forks even the first one. Otherwise the
    process's first worker is spawned and starts no server (a run without a crash, in one
    pytest session, needs no other worker), unless the process has a server already; from the
    second on a server of its own is started, and shared once ready. A server still importing
    is not waited for: the worker it would fork is no sooner ready than a fresh interpreter
    started now."""
    global _needed, _shared, _refused
    shared = shared_server(env)
    if shared is not None:
        pid = shared.fork(env, conn_fd, out_fd, err_fd)
        if pid is not None:
            _needed = True
            return ForkedProcess(pid, shared)
        _refused, _shared = (shared.address, shared.key), None  # it stopped serving: not again
        shared.close()
    if not _needed and _server is None:  # a first worker, and no server: do not start one yet
        _needed = True
        return None
    _needed = True
    server = server_for(env)
    if server is None:
        return None
    try:
        if not server.wait_ready(timeout=0.0):
            return None
    except (OSError, ValueError):
        return None
    os.environ[SHARE_ENV] = server.address  # the processes started from now on may use it
    pid = server.fork(env, conn_fd, out_fd, err_fd)
    if pid is None:
        return None
    return ForkedProcess(pid, server)
