"""`gemmconf` and `pytest` commands for the tests, forked from a warm interpreter.

A test that runs `python -m pytest ...` or `gemmconf run ...` in a subprocess pays for a fresh
interpreter importing torch, dynamo, Triton, pytest and gemmconf: about 6 s of CPU on the 2-core
dev CPU before the command does anything, in about 70 of make test's subprocesses. `run` (a
`subprocess.run` for those commands) and `runpytest` (a `pytester.runpytest_subprocess`) fork
the command instead from an interpreter that imported all of that once: one per test process,
started at its first use, single-threaded, running no torch op (the fork server of
gemmconf.isolation does the same for isolation workers).

The forked process is what a fresh interpreter would be for the command: the environment whole,
the working directory, `sys.argv`, `sys.path` as Python builds it from PYTHONPATH and the
working directory, standard input, output and error, the default signal handlers, and an exit
status. It is not where a fresh interpreter differs: a command whose environment differs from
the warm interpreter's in a variable read at import (anything outside `RUN_TIME`), other
interpreter flags, a script file, or code of the caller's own (unless the caller says it runs
warm: `code_runs_warm`) run as a real subprocess, which is also what every test whose subject is
the process itself (signals, imports, a standalone repro) calls directly.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

# What a gemmconf command's `python -c` says in the tests (test_readme, test_attribution).
GEMMCONF_MAIN = "import sys; from gemmconf.cli import main; sys.exit(main())"
MODULES = {"pytest": "pytest", "gemmconf.cli": "gemmconf"}
# Variables read at run time only (pytest's, gemmconf's and the shell's): a command whose
# environment differs from the warm interpreter's in any other runs as a real subprocess. Two
# that an in-process gemmconf run sets in a test worker's environment for good are here too:
# KINETO_LOG_LEVEL (read when a profiler first starts) and TRITON_INTERPRET (read where a
# kernel is defined: the reference backend's, defined after the fork; the backend calls none
# of the Triton library's own, defined at Triton's import). Without them 44 commands of 15
# test files ran cold (2026-12-01).
RUN_TIME = frozenset(
    ("HOME", "USERPROFILE", "PWD", "OLDPWD", "COLUMNS", "LINES", "PY_COLORS", "NO_COLOR", "PATH")
) | {"KINETO_LOG_LEVEL", "TRITON_INTERPRET"}
RUN_TIME_PREFIXES = ("PYTEST_", "GEMMCONF_")
SWITCH = "GEMMCONF_TESTS_WARM"  # "0": every command as a real subprocess
BOOT = "import sys; sys.path.insert(0, sys.argv[1]); import warm_python; warm_python.serve()"
MESSAGE_BYTES = 1 << 20


def run(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    capture_output: bool = False,
    text: bool = False,
    check: bool = False,
    code_runs_warm: bool = False,
) -> subprocess.CompletedProcess:
    """`subprocess.run(args, ...)` for the arguments given, standard input empty; forked from
    the warm interpreter where `args` is `sys.executable -m pytest|gemmconf.cli ...` or
    `sys.executable -c GEMMCONF_MAIN ...` and the environment allows (module docstring). With
    `code_runs_warm`, any `sys.executable -c CODE ...` too: the caller says that CODE does not
    depend on what a fresh interpreter has not imported yet."""
    env = dict(os.environ if env is None else env)
    program = _program(args)
    if code_runs_warm and len(args) >= 3 and list(args[:2]) == [sys.executable, "-c"]:
        program = program or "code"
    server = _server(env) if program is not None else None
    if server is None:
        return subprocess.run(
            list(args),
            cwd=cwd,
            env=env,
            timeout=timeout,
            capture_output=capture_output,
            text=text,
            check=check,
            stdin=subprocess.DEVNULL,
        )
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(tempfile.TemporaryFile()) for _ in range(2 * capture_output)]
        out, err = (f.fileno() for f in files) if capture_output else (1, 2)  # else: inherited
        folder = os.fspath(cwd or os.getcwd())
        code = server.call(program, list(args), folder, env, out, err, timeout)
        captured = [_read(f, text) for f in files] if capture_output else [None, None]
    done = subprocess.CompletedProcess(list(args), code, *captured)
    if check:
        done.check_returncode()
    return done


def runpytest(pytester: pytest.Pytester, *args: str, timeout: float | None = None):
    """`pytester.runpytest_subprocess(*args, timeout=...)`, forked from the warm interpreter:
    the same folder for `--basetemp`, the same PYTHONPATH (pytester's folder first)."""
    from _pytest.pytester import RunResult

    base = tempfile.mkdtemp(prefix="runpytest-", dir=pytester.path)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH", "")]))
    start = time.monotonic()
    done = run(
        [sys.executable, "-m", "pytest", f"--basetemp={base}", *args],
        cwd=os.getcwd(),
        env=env,
        timeout=timeout,
        capture_output=True,
        text=True,
    )
    print(done.stdout, end="")  # as pytester shows them on failure
    print(done.stderr, end="", file=sys.stderr)
    duration = time.monotonic() - start
    return RunResult(done.returncode, done.stdout.splitlines(), done.stderr.splitlines(), duration)


def _program(args: Sequence[str]) -> str | None:
    """The module whose main a command runs ("pytest", "gemmconf"), or None (not ours)."""
    if len(args) < 3 or args[0] != sys.executable:
        return None
    if args[1] == "-m":
        return MODULES.get(args[2])
    if args[1] == "-c" and args[2] == GEMMCONF_MAIN:
        return "gemmconf"
    return None


def _read_at_import(env: Mapping[str, str]) -> dict[str, str]:
    """The part of an environment that the warm interpreter's imports may have read."""
    return {
        k: v
        for k, v in env.items()
        if k not in RUN_TIME and k != "PYTHONPATH" and not k.startswith(RUN_TIME_PREFIXES)
    }


def _read(file: Any, text: bool) -> str | bytes:
    file.seek(0)
    data = file.read()
    return data.decode(errors="replace") if text else data


class _Server:
    """The warm interpreter of this process, and one connection per command to it."""

    def __init__(self, env: Mapping[str, str]) -> None:
        folder = tempfile.mkdtemp(prefix="gemmconf-warm-")
        atexit.register(shutil.rmtree, folder, True)  # the socket's folder, with this process
        self.address = os.path.join(folder, "socket")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.address)
        listener.listen(16)
        self.process = subprocess.Popen(
            [sys.executable, "-c", BOOT, str(Path(__file__).parent), str(listener.fileno())],
            pass_fds=(listener.fileno(),),
            stdin=subprocess.DEVNULL,
            env=env,
        )
        listener.close()

    def call(
        self,
        program: str,
        args: list[str],
        cwd: str,
        env: dict[str, str],
        out: int,
        err: int,
        timeout: float | None,
    ) -> int:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with conn:
            conn.connect(self.address)
            request = {"program": program, "argv": args[1:], "cwd": cwd, "env": env}
            with open(os.devnull, "rb") as stdin:
                fds = [stdin.fileno(), out, err]
                socket.send_fds(conn, [json.dumps(request).encode()], fds)
            pid = int(_message(conn)["pid"])
            conn.settimeout(timeout)
            try:
                return int(_message(conn)["exit"])
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired(args, timeout) from None


def _message(conn: socket.socket) -> dict[str, Any]:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            raise RuntimeError("the warm interpreter's command ended without an exit status")
        data += chunk
    return json.loads(data)


_lock = threading.Lock()
_servers: dict[int, _Server] = {}


# The environment this module was imported under, before any test's monkeypatch: the warm
# interpreter's, whichever test starts it.
_BASELINE = dict(os.environ)


def _server(env: Mapping[str, str]) -> _Server | None:
    """This process's warm interpreter (started at the first call, with the environment this
    module was imported under), or None where it cannot serve `env`: `env` differs from that one
    in what an import may read, or the platform cannot pass descriptors."""
    if os.environ.get(SWITCH) == "0" or not hasattr(socket, "send_fds"):
        return None
    if _read_at_import(env) != _read_at_import(_BASELINE):
        return None
    with _lock:
        server = _servers.get(os.getpid())
        if server is None or server.process.poll() is not None:
            server = _servers[os.getpid()] = _Server(_BASELINE)
        return server


# The warm interpreter's side.


def serve() -> None:
    """Import what the commands import, then for each connection: receive a command, fork a
    watcher that forks the command, says its pid, waits for it and says its exit status."""
    listener = socket.socket(fileno=int(sys.argv[2]))
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import numpy  # noqa: F401
    import torch
    import torch._dynamo  # noqa: F401
    import triton  # noqa: F401
    import yaml  # noqa: F401

    import gemmconf.cli
    import gemmconf.plugin  # noqa: F401

    # sys.path as `-c` made it, before BOOT put this folder first: "", PYTHONPATH, the rest
    base_path = [p for p in sys.path[2:] if p not in _pythonpath(os.environ)]
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # watchers: reaped by the kernel
    while True:
        conn, _ = listener.accept()
        message, fds, _, _ = socket.recv_fds(conn, MESSAGE_BYTES, 3)
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            _watch(conn, json.loads(message), fds, base_path)
        conn.close()
        for fd in fds:
            os.close(fd)


def _watch(conn: socket.socket, request: dict[str, Any], fds: list[int], base: list[str]) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _become(request, fds, base)  # returns nowhere: the command's own exit
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(OSError):  # the caller gone (a timeout) is no reason to stop
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    _, status = os.waitpid(pid, 0)
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
    os._exit(0)


def _become(request: dict[str, Any], fds: list[int], base: list[str]) -> None:
    """This forked process as a fresh `python -m <module> ARGS` would start, then the command,
    and its exit (`_exit_as_python_would`)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for number, fd in enumerate(fds):
        os.dup2(fd, number)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    argv = request["argv"]
    first = os.getcwd() if argv[0] == "-m" else ""
    sys.path[:] = [first, *_pythonpath(os.environ), *base]
    if argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
    else:
        sys.argv = [sys.modules[argv[1]].__file__, *argv[2:]]
    if request["program"] == "pytest":
        sys.argv[0] = os.path.join(os.path.dirname(pytest.__file__), "__main__.py")
        main = pytest.console_main
    elif request["program"] == "code":
        module = sys.modules["__main__"] = types.ModuleType("__main__")
        code = compile(argv[1], "<string>", "exec")

        def main() -> None:
            exec(code, module.__dict__)

    else:
        from gemmconf.cli import main
    _exit_as_python_would(main)


def _exit_as_python_would(main: Any) -> None:
    """Run `main` to its exit status, then exit as the interpreter does (a SystemExit's code,
    a traceback and 1 for any other exception, atexit's functions, buffers flushed) but without
    tearing down the modules, as an isolation worker ends (`exit_quickly`): with torch imported
    that is a second or more of CPU a process."""
    from gemmconf.isolation.worker import exit_quickly

    try:
        code = main()
    except SystemExit as stop:
        code = stop.code
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    exit_quickly(code or 0)


def _pythonpath(env: Mapping[str, str]) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
