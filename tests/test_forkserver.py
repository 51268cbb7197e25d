"""Isolation workers forked from a fork server (gemmconf.isolation.forkserver): they run items
as fresh interpreters do, crash and report as they do, and one server serves the process's
workers while their environment stays the same."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
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
    assert after.passed and runner.starts == 2  # a fresh worker served the next item


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
    with theirs:
        server = subprocess.Popen(
            [sys.executable, "-u", "-c", forkserver.SERVER_BOOT, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    ours.close()  # the parent is gone before the server is ready
    _, stderr = server.communicate(timeout=300)
    assert server.returncode == 0 and stderr == "", stderr
