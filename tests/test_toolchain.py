"""`toolchain.pin_ptxas`: one ptxas for every process of a run (inductor's rule, applied before
anything compiles), a user's TRITON_PTXAS_PATH kept."""

from __future__ import annotations

import inspect
import stat
from pathlib import Path

import pytest

from gemmconf import toolchain


def _torch_dir(tmp_path: Path, *, ptxas: bool, executable: bool = True) -> Path:
    (tmp_path / "bin").mkdir(parents=True)
    if ptxas:
        tool = tmp_path / "bin" / "ptxas"
        tool.write_text("#!/bin/sh\n")
        tool.chmod(stat.S_IRWXU if executable else stat.S_IRUSR)
    return tmp_path


def test_torchs_ptxas_is_pinned_where_torch_ships_one(tmp_path):
    environ: dict[str, str] = {}
    choice = toolchain.pin_ptxas(environ, _torch_dir(tmp_path, ptxas=True))
    assert environ == {toolchain.PTXAS_ENV: str(tmp_path / "bin" / "ptxas")}
    assert choice.path == environ[toolchain.PTXAS_ENV]
    assert "inductor" in choice.line()
    # a worker started from that process inherits the variable and keeps it
    again = toolchain.pin_ptxas(dict(environ), _torch_dir(tmp_path / "other", ptxas=True))
    assert again.path == choice.path


def test_a_users_ptxas_is_kept(tmp_path):
    environ = {toolchain.PTXAS_ENV: "/opt/cuda/bin/ptxas"}
    choice = toolchain.pin_ptxas(environ, _torch_dir(tmp_path, ptxas=True))
    assert environ == {toolchain.PTXAS_ENV: "/opt/cuda/bin/ptxas"}
    assert choice.path == "/opt/cuda/bin/ptxas" and "as set" in choice.why


@pytest.mark.parametrize("executable", [False, None])
def test_nothing_is_set_without_an_executable_ptxas_in_torch(tmp_path, executable):
    environ: dict[str, str] = {}
    torch_dir = _torch_dir(tmp_path, ptxas=executable is not None, executable=bool(executable))
    choice = toolchain.pin_ptxas(environ, torch_dir)
    assert environ == {} and choice.path is None
    assert "bundles" in choice.line()


def test_the_rule_is_the_one_inductor_applies():
    """torch's own function (private) still sets this variable to torch/bin/ptxas and leaves a set
    one alone: when it changes, `pin_ptxas` must follow it."""
    compile_tasks = pytest.importorskip("torch._inductor.runtime.compile_tasks")
    source = inspect.getsource(compile_tasks._set_triton_ptxas_path)
    assert f'os.environ.get("{toolchain.PTXAS_ENV}") is not None' in source
    assert '"bin" / "ptxas"' in source
    assert f'os.environ["{toolchain.PTXAS_ENV}"] = str(ptxas)' in source
