"""Isolation workers forked from a fork server (gemmconf.isolation.forkserver): they run items
as fresh interpreters do, crash and report as they do, and one server serves the process's
workers while their environment stays the same."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import faulty_backends
import pytest
import suite_files

from gemmconf import isolation
from gemmconf.backends import RunOptions
from gemmconf.isolation import forkserver
from gemmconf.isolation.parent import worker_environment
from gemmconf.outcome import render

pytestmark = pytest.mark.skipif(not forkserver.available(), reason="no fork server here")


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> dict[str, object]:
    return suite_files.tiny_instances(tmp_path_factory.mktemp("suite"))


@pytest.fixture(autouse=True)
def a_worker_was_started_before(monkeypatch):
    """As in a process that has started a worker before, so that the next one is forked: the
    tests must not depend on which test of the xdist worker's process started one first (a
    process's first worker is spawned, `forkserver.start_worker`)."""
    monkeypatch.setattr(forkserver, "_needed", True)


def _request(instance, label: str) -> isolation.ItemRequest:
    return isolation.ItemRequest(instance, label, seed=0, device="cpu", target=None, repro="r")


def _parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _ready_server() -> forkserver.ForkServer:
    """This process's server for a plain runner's workers, once it has imported torch."""
    server = forkserver.server_for(worker_environment())
    assert server is not None and server.wait_ready()
    return server


def test_a_process_s_first_worker_is_spawned_and_starts_no_server(instances, monkeypatch):
    monkeypatch.setattr(forkserver, "_needed", False)  # as in a fresh pytest process
    monkeypatch.setattr(forkserver, "_server", None)
    monkeypatch.delenv(forkserver.SHARE_ENV, raising=False)  # started by no process with one
    runner = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
    try:
        assert runner.run(_request(instances["tiny/addmm"], "eager")).passed
        assert isinstance(runner._worker.process, subprocess.Popen)
        assert forkserver._server is None
    finally:
        runner.close()


def test_the_first_worker_does_not_wait_for_a_starting_server(instances, monkeypatch):
    monkeypatch.setenv("FORK_SERVER_TEST_KEY", "fresh")  # a server of its own, just started
    runner = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
    try:
        assert runner.run(_request(instances["tiny/addmm"], "eager")).passed
        assert isinstance(runner._worker.process, subprocess.Popen)  # spawned meanwhile
    finally:
        runner.close()


def test_workers_are_forked_by_one_server_and_judge_as_spawned_ones(instances, monkeypatch):
    _ready_server()
    forked = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
    try:
        first = forked.run(_request(instances["tiny/addmm"], "eager"))
        worker = forked._worker.process
        assert isinstance(worker, forkserver.ForkedProcess)
        server = forkserver._server
        assert server is not None and _parent_of(worker.pid) == server.process.pid
    finally:
        forked.close()
    again = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
    try:  # a second runner (another pytest session in this process): the same server
        again.run(_request(instances["tiny/addmm"], "eager"))
        assert _parent_of(again._worker.process.pid) == server.process.pid
    finally:
        again.close()
    monkeypatch.setenv(forkserver.ENV_SWITCH, "0")
    spawned = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
    try:
        second = spawned.run(_request(instances["tiny/addmm"], "eager"))
        assert isinstance(spawned._worker.process, subprocess.Popen)
        assert _parent_of(spawned._worker.process.pid) == os.getpid()
    finally:
        spawned.close()
    assert first.passed and second.passed
    assert render(first).reason == render(second).reason


def test_a_forked_worker_that_crashes_is_reported_by_its_signal(instances, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(faulty_backends.__file__).parent))
    _ready_server()
    runner = isolation.IsolatedRunner({"segfault": "faulty_backends:segfault"}, RunOptions())
    try:
        before = runner.run(_request(instances["tiny/addmm"], "segfault"))
        assert isinstance(runner._worker.process, forkserver.ForkedProcess)
        result = runner.run(_request(instances[faulty_backends.TRIGGER_ID], "segfault"))
        after = runner.run(_request(instances["tiny/addmm"], "segfault"))
        assert isinstance(runner._worker.process, forkserver.ForkedProcess)
    finally:
        runner.close()
    assert before.passed and not result.passed
    assert "crashed: SIGSEGV" in render(result).reason  # the server told the signal
    # a fresh worker served the next item: the spare started at the crash, and another after it
    assert after.passed and runner.starts == 3


def test_another_environment_gets_another_server(instances, monkeypatch):
    runner = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
    try:
        runner.run(_request(instances["tiny/addmm"], "eager"))
        before = forkserver._server
    finally:
        runner.close()
    monkeypatch.setenv("FORK_SERVER_TEST_KEY", "another")
    runner = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
    try:
        assert runner.run(_request(instances["tiny/addmm"], "eager")).passed
        assert forkserver._server is not before
        assert before.process.poll() is not None  # the old server ended
    finally:
        runner.close()


def test_variables_read_at_run_time_keep_the_server():
    """pytest's and gemmconf's own variables are read after the fork, from the environment the
    worker is given whole: a test or session that sets one keeps the server (and its forks)."""
    env = {"PATH": "/usr/bin", "TORCH_LOGS": "+dynamo"}
    same = {**env, "GEMMCONF_MEMORY_SHARED": "123", "PYTEST_XDIST_WORKER_COUNT": "3", "HOME": "/x"}
    same["PY_COLORS"] = "0"  # as pytester sets it for each in-process run
    assert forkserver.server_key(same) == forkserver.server_key(env)
    assert forkserver.server_key({**env, "TORCH_LOGS": ""}) != forkserver.server_key(env)


def test_the_server_forks_only_while_it_has_one_thread(monkeypatch):
    """A fork copies one thread: with another running (holding a lock, say) the child could
    hang, so the server refuses and closes what it was given."""
    monkeypatch.setattr(forkserver.threading, "active_count", lambda: 2)
    read, write = os.pipe()
    given = [read, write, os.dup(write)]
    reply = forkserver._fork(None, {"env": {}, "cwd": "/"}, given)
    assert "refused" in reply and "2 threads" in reply["refused"]
    for fd in given:
        with pytest.raises(OSError):
            os.fstat(fd)


def test_a_worker_the_server_cannot_give_is_spawned(instances, monkeypatch):
    monkeypatch.setattr(forkserver.ForkServer, "fork", lambda *args: None)  # refused, or failed
    runner = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
    try:
        assert runner.run(_request(instances["tiny/addmm"], "eager")).passed
        assert isinstance(runner._worker.process, subprocess.Popen)
    finally:
        runner.close()


def test_a_server_whose_parent_ended_while_it_started_exits_quietly():
    """A run that ends while its fork server still imports torch (seen on an H200, 2026-11-29:
    a BrokenPipeError traceback on the terminal after the run) leaves no trace of it."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with theirs, listener:
        fds = [theirs.fileno(), listener.fileno()]
        server = subprocess.Popen(
            [sys.executable, "-u", "-c", forkserver.SERVER_BOOT, *map(str, fds)],
            pass_fds=fds,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    ours.close()  # the parent is gone before the server is ready
    _, stderr = server.communicate(timeout=300)
    assert server.returncode == 0 and stderr == "", stderr


# A process started from a test (as `gemmconf run` is): one IsolatedRunner item, then what its
# worker was, printed as JSON; "die" ends the process at once, its worker still running.
GUEST = """
import json, os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import suite_files
from gemmconf import isolation
from gemmconf.backends import RunOptions
instances = suite_files.tiny_instances(Path(sys.argv[2]))
runner = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
request = isolation.ItemRequest(
    instances["tiny/addmm"], "eager", seed=0, device="cpu", target=None, repro="r"
)
passed = runner.run(request).passed
worker = runner._worker.process
parent = int(Path(f"/proc/{worker.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
kind = type(worker).__name__
print(json.dumps({"passed": passed, "kind": kind, "pid": worker.pid, "parent": parent}))
sys.stdout.flush()
if sys.argv[3] == "die":
    os.kill(os.getpid(), 9)
runner.close()
"""


def _shared_ready_server(instances, monkeypatch) -> forkserver.ForkServer:
    """This process's server, ready and shared (as after a test process's second worker)."""
    monkeypatch.delenv(forkserver.SHARE_ENV, raising=False)  # restored after the test
    server = _ready_server()
    runner = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
    try:
        assert runner.run(_request(instances["tiny/addmm"], "eager")).passed
    finally:
        runner.close()
    assert os.environ[forkserver.SHARE_ENV] == server.address
    return server


def _guest(tmp_path: Path, how: str, **env: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", GUEST, str(Path(__file__).parent), str(tmp_path), how],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )
    assert done.stdout, done.stderr
    return json.loads(done.stdout.splitlines()[0])


@pytest.fixture(scope="module")
def died_guest(instances, tmp_path_factory) -> tuple[dict, int, float]:
    """One guest that ended at once after its first item (GUEST "die"), started while this
    process's server was ready and shared: what it printed of its worker, the server's pid, and
    when it had ended (`time.monotonic()`). The tests below only read it (one xdist worker runs
    them both: `xdist_group`)."""
    with pytest.MonkeyPatch.context() as patch:
        server = _shared_ready_server(instances, patch)
        guest = _guest(tmp_path_factory.mktemp("guest"), "die")
        return guest, server.process.pid, time.monotonic()


@pytest.mark.xdist_group("died_guest")
def test_a_process_started_here_forks_even_its_first_worker_from_this_server(died_guest):
    guest, server_pid, _ = died_guest
    assert guest == {**guest, "passed": True, "kind": "ForkedProcess"}
    assert guest["parent"] == server_pid


def test_a_process_whose_workers_need_another_environment_spawns_its_own(
    instances, monkeypatch, tmp_path
):
    server = _shared_ready_server(instances, monkeypatch)
    guest = _guest(tmp_path, "close", FORK_SERVER_TEST_KEY="another")
    assert guest == {**guest, "passed": True, "kind": "Popen"}
    assert guest["parent"] != server.process.pid


@pytest.mark.xdist_group("died_guest")
def test_a_guest_s_worker_dies_with_the_guest_and_is_reaped(died_guest):
    guest, _, ended = died_guest
    assert guest["kind"] == "ForkedProcess"
    deadline = ended + 30  # from the guest's end, whenever this test runs
    while True:
        try:
            os.kill(guest["pid"], 0)  # a zombie answers too: gone means reaped
        except ProcessLookupError:
            break
        if time.monotonic() > deadline:
            pytest.fail(f"the worker {guest['pid']} outlived its guest")
        time.sleep(0.05)


def test_the_server_keeps_serving_after_a_guest_sends_garbage(instances, monkeypatch):
    server = _shared_ready_server(instances, monkeypatch)
    assert stat.S_IMODE(os.stat(Path(server.address).parent).st_mode) == 0o700
    for junk in (b"not json", json.dumps({"op": "fork"}).encode(), b""):
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
            sock.connect(server.address)
            sock.settimeout(10)
            sock.send(junk)
            if junk:
                assert sock.recv(1024) == b""  # the server dropped this guest, nothing more
    runner = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
    try:
        assert runner.run(_request(instances["tiny/addmm"], "eager")).passed
        assert _parent_of(runner._worker.process.pid) == server.process.pid
    finally:
        runner.close()


def _pipes_and_sockets(pid: int) -> set[str]:
    """What the process's descriptors above stdin open, of pipes and sockets (`pipe:[inode]`)."""
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile
            target = os.readlink(fd)
            if int(fd.name) > 0 and target.startswith(("pipe:", "socket:")):
                found.add(target)
    return found


def test_a_forked_worker_holds_none_of_the_server_s_descriptors(instances, monkeypatch):
    """The server's control socket, its listener, its guests' connections and its SIGCHLD pipe
    stay the server's: a worker holding one would keep a guest's connection or the listener open
    after the server dropped it."""
    server = _shared_ready_server(instances, monkeypatch)
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as guest:
        guest.connect(server.address)  # a guest connected while the worker is forked
        runner = isolation.IsolatedRunner({"eager": "eager"}, RunOptions())
        try:
            assert runner.run(_request(instances["tiny/addmm"], "eager")).passed
            worker = runner._worker.process.pid
            assert _parent_of(worker) == server.process.pid
            shared = _pipes_and_sockets(server.process.pid) & _pipes_and_sockets(worker)
        finally:
            runner.close()
    assert shared == set()


OWNER = """
import os, sys
from gemmconf.isolation import forkserver
server = forkserver.ForkServer(dict(os.environ))
child = os.fork()
if child == 0:
    sys.exit(0)  # a forked child's normal exit runs the atexit handlers it inherited
os.waitpid(child, 0)
print(server.folder, os.path.isdir(server.folder), flush=True)
"""


def test_a_server_s_folder_goes_with_the_process_that_started_it():
    """Every pytest process that started a fork server left its folder in the temp folder (140
    in a day of this machine's runs, 2026-11-30): its owner's exit removes it; a forked child's
    exit does not."""
    done = subprocess.run(
        [sys.executable, "-c", OWNER], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    folder, kept_after_child = done.stdout.split()
    assert kept_after_child == "True"  # the child left it to its owner
    assert not Path(folder).exists()
