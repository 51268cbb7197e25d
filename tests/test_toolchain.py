"""`toolchain.pin_ptxas`: one ptxas for every process of a run, chosen before anything compiles
(torch's for a run with an inductor backend, else Triton's own), a user's TRITON_PTXAS_PATH
kept."""

from __future__ import annotations

import compileall
import inspect
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import suite_files

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


def _note(tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> str:
    """What `bytecode_note` says of a package `fresh` (just written, never imported) in a Python
    started with `flags` (and without PYTHONDONTWRITEBYTECODE, which `-B` stands for)."""
    code = "from gemmconf import toolchain; print(toolchain.bytecode_note('fresh'))"
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, *flags, "-c", code],
        env={**inherited, "PYTHONPATH": suite_files.python_path(tmp_path), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def test_a_package_a_python_without_bytecode_compiles_in_every_process_is_named(tmp_path):
    (tmp_path / "fresh").mkdir()
    (tmp_path / "fresh" / "__init__.py").write_text("VALUE = 1\n")
    note = _note(tmp_path, "-B")  # -B: no bytecode written, as PYTHONDONTWRITEBYTECODE
    assert "writes no bytecode" in note and f"compileall -q {tmp_path / 'fresh'}" in note
    assert _note(tmp_path) == "None"  # a Python that writes bytecode: nothing to say
    compileall.compile_dir(tmp_path / "fresh", quiet=1)
    assert _note(tmp_path, "-B") == "None"  # compiled once: every process reads it
    # where bytecode goes to a prefix folder, that folder is where it must be
    assert "writes no bytecode" in _note(tmp_path, "-B", env={"PYTHONPYCACHEPREFIX": "elsewhere"})


def test_the_header_says_so_where_torch_is_compiled_in_every_process(tmp_path):
    suite_files.lay_out(tmp_path)
    done = subprocess.run(
        [sys.executable, "-B", "-m", "pytest", "suites", "--collect-only", "-p", "no:xdist"],
        cwd=tmp_path,
        # an empty prefix folder: torch's bytecode is not where Python looks, nor written there
        env={**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "gemmconf: Python writes no bytecode here" in done.stdout
    assert "torch has none" in done.stdout
