"""`toolchain.pin_ptxas`: one ptxas for every process of a run, chosen before anything compiles
(torch's for a run with an inductor backend, else Triton's own), a user's TRITON_PTXAS_PATH
kept."""

from __future__ import annotations

import inspect
import stat
from pathlib import Path

import pytest

from gemmconf import toolchain


def _package(root: Path, folder: str, *, executable: bool | None = True) -> Path:
    """A package folder with a ptxas in `folder` (none where `executable` is None)."""
    (root / folder).mkdir(parents=True)
    if executable is not None:
        tool = root / folder / "ptxas"
        tool.write_text("#!/bin/sh\n")
        tool.chmod(stat.S_IRWXU if executable else stat.S_IRUSR)
    return root


@pytest.fixture
def packages(tmp_path):
    torch_dir = _package(tmp_path / "torch", "bin")
    triton_dir = _package(tmp_path / "triton", "backends/nvidia/bin")
    return {"torch_dir": torch_dir, "triton_dir": triton_dir}


def test_a_run_without_inductor_pins_tritons_own_ptxas(packages):
    environ: dict[str, str] = {}
    choice = toolchain.pin_ptxas(environ, **packages)
    tritons = str(packages["triton_dir"] / "backends/nvidia/bin/ptxas")
    assert environ == {toolchain.PTXAS_ENV: tritons} and choice.path == tritons
    assert "Triton's own" in choice.line()
    # a worker inherits the variable and keeps it, whatever its own packages hold
    inherited = dict(environ)
    assert toolchain.pin_ptxas(inherited, inductor=True, **packages).path == tritons
    assert inherited == environ


def test_a_run_with_an_inductor_backend_pins_torchs(packages):
    environ: dict[str, str] = {}
    choice = toolchain.pin_ptxas(environ, inductor=True, **packages)
    assert choice.path == environ[toolchain.PTXAS_ENV] == str(packages["torch_dir"] / "bin/ptxas")
    assert "inductor" in choice.why


def test_a_users_ptxas_is_kept(packages):
    environ = {toolchain.PTXAS_ENV: "/opt/cuda/bin/ptxas"}
    choice = toolchain.pin_ptxas(environ, inductor=True, **packages)
    assert environ == {toolchain.PTXAS_ENV: "/opt/cuda/bin/ptxas"}
    assert choice.path == "/opt/cuda/bin/ptxas" and "as set" in choice.why


@pytest.mark.parametrize("executable", [False, None])
def test_nothing_is_set_where_torch_ships_no_executable_ptxas(tmp_path, packages, executable):
    environ: dict[str, str] = {}
    torch_dir = _package(tmp_path / "cpu-torch", "bin", executable=executable)
    choice = toolchain.pin_ptxas(environ, torch_dir=torch_dir, triton_dir=packages["triton_dir"])
    assert environ == {} and choice.path is None


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ("reference", False),
        ("eager,reference:split_k=3", False),
        ("inductor", True),
        ("reference,inductor-max-autotune:ATEN,TRITON", True),
        ("dynamo:inductor,mode=max-autotune", True),
        ("dynamo:aot_eager", False),
        ("my_pkg.backends:inductor_like", False),
    ],
)
def test_runs_inductor(option, expected):
    assert toolchain.runs_inductor(option) is expected


def test_the_rule_is_the_one_inductor_applies():
    """torch's own function (private) still sets this variable to torch/bin/ptxas and leaves a
    set one alone: when it changes, `pin_ptxas` must follow it."""
    compile_tasks = pytest.importorskip("torch._inductor.runtime.compile_tasks")
    source = inspect.getsource(compile_tasks._set_triton_ptxas_path)
    assert f'os.environ.get("{toolchain.PTXAS_ENV}") is not None' in source
    assert '"bin" / "ptxas"' in source
    assert f'os.environ["{toolchain.PTXAS_ENV}"] = str(ptxas)' in source
