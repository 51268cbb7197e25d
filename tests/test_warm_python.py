"""The tests' warm interpreter (tests/warm_python.py): a command forked from it behaves as the
same command in a fresh interpreter (output, exit status, working directory, environment,
sys.path and argv), a command it cannot stand for runs as a real subprocess, and a timeout
kills the command."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import warm_python

# A test file that prints what a fresh `python -m pytest` process would see, then fails
PROBE = textwrap.dedent(
    """
    import os, sys

    def test_where():
        print("cwd", os.getcwd())
        print("path0", sys.path[0])
        print("on-path", os.environ["PYTHONPATH"].split(os.pathsep)[0] in sys.path)
        print("argv0", os.path.basename(sys.argv[0]))
        print("marker", os.environ.get("GEMMCONF_WARM_PROBE"))
        print("parent", os.getppid())
        assert False, "as planned"
    """
)


def _seen(output: str) -> list[str]:
    keys = ("cwd ", "path0 ", "on-path ", "argv0 ", "marker ")
    return [line for line in output.splitlines() if line.startswith(keys)]


def test_a_forked_command_sees_what_a_fresh_one_sees(tmp_path):
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "elsewhere").mkdir()
    env = {  # the worker's environment as it was (tests before may have left variables in it)
        **warm_python._BASELINE,
        "PYTHONPATH": str(tmp_path / "elsewhere"),
        "GEMMCONF_WARM_PROBE": "set by the test",
    }
    command = [sys.executable, "-m", "pytest", "test_probe.py", "-s", "-q", "-p", "no:gemmconf"]
    command += ["-p", "no:cacheprovider", "-p", "no:randomly"]
    fresh = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    warm = warm_python.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    # the fresh one is this process's child; the warm one, a child of the warm interpreter's
    assert f"parent {os.getpid()}" in fresh.stdout and f"parent {os.getpid()}" not in warm.stdout
    assert fresh.returncode == warm.returncode == pytest.ExitCode.TESTS_FAILED
    assert _seen(warm.stdout) == _seen(fresh.stdout)
    assert "marker set by the test" in warm.stdout and "as planned" in warm.stdout


def test_a_command_it_cannot_stand_for_runs_as_a_subprocess():
    # read by torch at import: a forked child of an interpreter that imported torch without it
    # would not be the fresh process the test asked for
    env = {**os.environ, "TORCH_LOGS": "dynamo"}
    assert warm_python._server(env) is None
    assert warm_python._program([sys.executable, "-c", "print(1)"]) is None  # the caller's code
    assert warm_python._program([sys.executable, "-B", "-m", "pytest"]) is None  # other flags
    done = warm_python.run([sys.executable, "-c", "print('real')"], capture_output=True, text=True)
    assert done.stdout == "real\n"


def test_a_timeout_kills_the_command(tmp_path):
    (tmp_path / "test_sleep.py").write_text(
        "import time\n\ndef test_sleep():\n    time.sleep(60)\n"
    )
    command = [sys.executable, "-m", "pytest", "test_sleep.py", "-p", "no:gemmconf", "-q"]
    with pytest.raises(subprocess.TimeoutExpired):
        warm_python.run(command, cwd=tmp_path, capture_output=True, timeout=3)
