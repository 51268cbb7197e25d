"""Ctrl-C or SIGTERM mid-run: the results so far are written, marked incomplete.

A real pytest process (a subprocess in its own session) runs the small suite on a backend that
takes a second an item; once two records are on disk, the test interrupts it. The process starts
with SIGINT at its default action, as under a terminal: a shell without job control starts
background commands with SIGINT ignored, and Python then installs no Ctrl-C handler (a fresh-clone
`make test` started that way failed the ctrl-c case twice).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import faulty_backends
import pytest
import suite_files
import warm_python


def wait_for_records(partial: Path, count: int, process: subprocess.Popen, limit: float) -> list:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        if partial.exists():
            lines = partial.read_text().splitlines()[1:]  # after the run's header line
            if len(lines) >= count:
                return [json.loads(line) for line in lines]
        time.sleep(0.1)
    process.kill()
    raise AssertionError(f"fewer than {count} records after {limit} s: {process.communicate()}")


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_the_slow_run(
    tmp_path: Path, *, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> subprocess.Popen:
    """The suite on the slow backend (0.4 s an item), in a session of its own, SIGINT at its
    default action; its output in one pipe."""
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "suites", "--backend", "faulty_backends:slow", *args],
        cwd=tmp_path,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )


def interrupt_the_slow_run(
    tmp_path: Path,
    sig: int,
    *,
    to_group: bool = False,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
    like_timeout: bool = False,
):
    """Start the slow run (`start_the_slow_run`), send `sig` once two records are on disk;
    the finished process, the records seen before the signal and the run's output.
    `like_timeout` sends it as GNU `timeout` does: to the process, then to its whole process
    group (at once there; here 0.3 s later, so that the second always arrives after the first
    was handled)."""
    process = start_the_slow_run(tmp_path, env=env, args=args)
    try:
        before = wait_for_records(tmp_path / "reports" / "results.json.partial", 2, process, 120)
        if to_group:  # what a terminal's Ctrl-C does: the whole foreground process group
            os.killpg(process.pid, sig)
        elif like_timeout:
            process.send_signal(sig)
            time.sleep(0.3)  # the race made certain: the first one's handler has run by now
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return process, before, output


@pytest.mark.parametrize(
    ("sig", "to_group"), [(signal.SIGTERM, False), (signal.SIGINT, True)], ids=["SIGTERM", "ctrl-c"]
)
def test_interrupt_writes_partial_results_marked_incomplete(tmp_path, sig, to_group):
    suite_files.lay_out(tmp_path)
    log = tmp_path / "calls.log"
    process, before, output = interrupt_the_slow_run(
        tmp_path, sig, to_group=to_group, env={faulty_backends.LOG_ENV: str(log)}
    )
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    document = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert document["complete"] is False and document["exit_status"] == 2
    ids = [r["id"] for r in document["records"]]
    assert {r["id"] for r in before} <= set(ids) and len(ids) < 6  # finished ones, not all
    assert all(r["outcome"] in ("passed", "skipped") for r in document["records"])
    assert not (tmp_path / "reports" / "results.json.partial").exists()
    for pid in {pid for pid, _, _ in faulty_backends.logged_calls(log)}:  # no worker left over
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_results_are_written_even_when_another_plugins_sessionfinish_raises(tmp_path):
    """Seen on an H200: SIGTERM at the very end of an xdist run made xdist's node teardown raise
    ("cannot send (already closed?)") in pytest_sessionfinish, before gemmconf's turn, and the
    run's 3,277 records stayed in results.json.partial. The writer now goes first."""
    suite_files.lay_out(tmp_path)
    (tmp_path / "conftest.py").write_text(
        "def pytest_sessionfinish(session, exitstatus):\n"
        "    raise OSError('cannot send (already closed?)')\n"
    )
    result = warm_python.run(
        [sys.executable, "-m", "pytest", "suites", "--backend", "eager"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "cannot send" in result.stdout + result.stderr
    document = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert len(document["records"]) == 6
    assert not (tmp_path / "reports" / "results.json.partial").exists()


def test_sigterm_finalizes_results_where_another_handler_was_installed(tmp_path):
    """On the GPU machine, a `timeout`-stopped run left only results.json.partial: something there
    had installed a SIGTERM handler first and gemmconf deferred to it. Here a conftest installs
    one that exits at once; gemmconf's must still go first and write the final results."""
    suite_files.lay_out(tmp_path)
    (tmp_path / "conftest.py").write_text(
        "import os, signal\nsignal.signal(signal.SIGTERM, lambda signum, frame: os._exit(143))\n"
    )
    process, _, output = interrupt_the_slow_run(tmp_path, signal.SIGTERM)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    document = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert document["complete"] is False and len(document["records"]) >= 2


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["in-process", "xdist"])
def test_sigterm_sent_twice_like_timeout_still_writes_the_results(tmp_path, workers):
    """On the H100, `timeout -s TERM` left only results.json.partial twice: GNU timeout signals
    its child and then the child's process group, so pytest gets SIGTERM twice at once, and the
    second one (then the default action) killed it mid-unwind. Both now count as one request."""
    suite_files.lay_out(tmp_path)
    process, before, output = interrupt_the_slow_run(
        tmp_path, signal.SIGTERM, args=workers, like_timeout=True
    )
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    document = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert document["complete"] is False
    assert {r["id"] for r in before} <= {r["id"] for r in document["records"]}
    assert not (tmp_path / "reports" / "results.json.partial").exists()


def run_the_tiny_suite_on_eager(tmp_path: Path) -> tuple[subprocess.CompletedProcess, str]:
    """The tiny suite on eager in a pytest process of its own (SIGINT at its default action),
    to its end; the process and its output."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "suites", "--backend", "eager", "-p", "no:randomly"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_default_sigint,
    )
    return result, result.stdout + result.stderr


def test_a_sigterm_after_the_results_are_written_lets_the_run_finish(tmp_path):
    """A CI engineer's trial: a SIGTERM during the terminal summary ended the run with a
    KeyboardInterrupt traceback and status 130, while results.json said complete, status 0.
    Now the summary finishes and the process's status is the one the file records."""
    suite_files.lay_out(tmp_path)
    (tmp_path / "conftest.py").write_text(
        "import os, signal, time\nimport pytest\n\n"
        "@pytest.hookimpl(trylast=True)\n"
        "def pytest_terminal_summary(terminalreporter, exitstatus, config):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(0.5)\n"
        "    terminalreporter.write_line('summary went on after the signal')\n"
    )
    result, output = run_the_tiny_suite_on_eager(tmp_path)
    assert result.returncode == pytest.ExitCode.OK, output
    assert "summary went on after the signal" in output and "Traceback" not in output
    document = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert document["complete"] is True and document["exit_status"] == 0


def test_a_sigterm_while_the_results_are_written_lets_the_file_be_written(tmp_path):
    """An H200 run stopped by `timeout` (2026-11-30): every item had ended when the SIGTERM came,
    during the final results file's write (a 3,954-record document); the KeyboardInterrupt
    raised inside json.dumps left only results.json.partial and a traceback. A SIGTERM from the
    moment that write begins now lets it finish."""
    suite_files.lay_out(tmp_path)
    (tmp_path / "conftest.py").write_text(
        "import os, signal, time\n\n"
        "def pytest_gemmconf_results_fields(records, config):\n"  # just before the write
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(0.5)\n"
        "    return {}\n"
    )
    result, output = run_the_tiny_suite_on_eager(tmp_path)
    assert "Traceback" not in output, output
    document = json.loads((tmp_path / "reports" / "results.json").read_text())
    # an H200 run of our tests (2026-11-30, 16 workers) once had this run take 195 s and end
    # with exit_status 1, alone it passed: the records that were not passes say why
    unexpected = [r for r in document["records"] if r["outcome"] not in ("passed", "skipped")]
    assert document["complete"] is True and document["exit_status"] == 0, (unexpected, output)
    assert result.returncode == pytest.ExitCode.OK, output
    assert not (tmp_path / "reports" / "results.json.partial").exists()


def test_a_repeated_sigterm_after_the_cleanup_is_still_the_same_request(tmp_path):
    """A fresh clone's `make test`, on a loaded box, died by the second of `timeout`'s two
    SIGTERMs (status -15, not 2): the run had unwound and its cleanup had put the default action
    back before the repeat arrived. After a first SIGTERM, gemmconf's handler now stays."""
    script = tmp_path / "repeat.py"
    script.write_text(
        "import os, signal, sys\n"
        "from gemmconf.plugin import recording\n"
        "class Config:\n"
        "    cleanups = []\n"
        "    stash = {}\n"
        "    def add_cleanup(self, f):\n"
        "        self.cleanups.append(f)\n"
        "config = Config()\n"
        "recording._handle_sigterm(config)\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "except KeyboardInterrupt:\n"
        "    pass\n"
        "for f in config.cleanups:\n"
        "    f()\n"
        "os.kill(os.getpid(), signal.SIGTERM)  # the repeat, after the cleanup\n"
        "sys.exit(2)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr


class _Config:
    """What `_handle_sigterm` reads of a pytest config."""

    def __init__(self) -> None:
        self.stash: dict = {}
        self.cleanups: list = []

    def add_cleanup(self, cleanup) -> None:
        self.cleanups.append(cleanup)


def test_a_repeat_within_the_window_is_the_same_request_and_a_later_one_is_not():
    """The window of `SIGTERM_REPEAT_S` on a clock of the test's own (the end-to-end cases above
    play GNU timeout's pair in real time): a repeat inside it is ignored, one after it goes to the
    handler that was installed before gemmconf's."""
    from gemmconf.plugin import recording

    passed_on: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: passed_on.append(signum))
    try:
        now = [100.0]
        recording._handle_sigterm(_Config(), clock=lambda: now[0])
        handler = signal.getsignal(signal.SIGTERM)
        with pytest.raises(KeyboardInterrupt, match="SIGTERM: the run was asked to stop"):
            handler(signal.SIGTERM, None)
        now[0] += recording.SIGTERM_REPEAT_S  # the window's edge: still the same request
        handler(signal.SIGTERM, None)
        assert passed_on == []
        now[0] += 0.5
        handler(signal.SIGTERM, None)
        assert passed_on == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is not handler  # the previous one is back
    finally:
        signal.signal(signal.SIGTERM, previous)


# Holds the pytest process in its interpreter's teardown, after the signal handlers were put back
# (Python does that before it clears the modules), and says so with a file.
_SLOW_TEARDOWN = """
import os, time


class SlowTeardown:
    def __init__(self, marker):
        # what the teardown uses is kept here: module globals may be gone by then
        self.marker, self.flags = marker, os.O_CREAT | os.O_WRONLY
        self.open, self.close, self.sleep = os.open, os.close, time.sleep

    def __del__(self):
        self.close(self.open(self.marker, self.flags))
        self.sleep(3)


held = SlowTeardown({marker!r})
"""


def test_a_sigterm_repeated_while_the_interpreter_exits_does_not_kill_it(tmp_path):
    """GNU timeout's second SIGTERM may land after pytest has returned, while Python tears its
    modules down, with the Python-level handlers back at the default action: an xdist run on a
    loaded dev CPU died of it (-15, 2026-11-29). Here the teardown waits, the repeat comes then,
    and the run still ends as interrupted."""
    suite_files.lay_out(tmp_path)
    marker = tmp_path / "tearing-down"
    (tmp_path / "conftest.py").write_text(_SLOW_TEARDOWN.format(marker=str(marker)))
    process = start_the_slow_run(tmp_path)
    try:
        wait_for_records(tmp_path / "reports" / "results.json.partial", 2, process, 120)
        process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 120
        while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the interpreter's teardown never began"
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert json.loads((tmp_path / "reports" / "results.json").read_text())["complete"] is False


def test_an_interrupt_on_an_instruction_without_a_line_number_is_still_reported():
    """An interrupt can land where the frame has no line number (`tb_lineno` None); pytest's
    rendering of that entry raised a TypeError, and a run asked to stop ended with status 1 and
    that error (make test on the dev CPU, 2026-11-30). The plugin leaves such entries out."""
    import types

    from gemmconf.plugin import recording

    def interrupted() -> KeyboardInterrupt:
        try:
            raise KeyboardInterrupt("SIGTERM: the run was asked to stop")
        except KeyboardInterrupt as exc:
            # an entry whose instruction is past its code: tb_lineno None, as CPython gives it
            lineless = types.TracebackType(exc.__traceback__, sys._getframe(), 10**6, -1)
            assert lineless.tb_lineno is None
            return exc.with_traceback(lineless)

    with pytest.raises(TypeError):  # pytest's own rendering of it
        pytest.ExceptionInfo.from_exception(interrupted()).getrepr(funcargs=True)
    excinfo = pytest.ExceptionInfo.from_exception(interrupted())
    recording.pytest_keyboard_interrupt(excinfo)
    text = str(excinfo.getrepr(funcargs=True))
    assert "SIGTERM: the run was asked to stop" in text
    assert len(excinfo.traceback) == 1  # the entry with a line number is kept
