"""The three ways an outside backend plugs in, each run from docs/examples/ as its docstring says:
a torch.compile backend registered by name (`--backend dynamo:NAME`, no adapter file), a kernel
library that overrides aten ops, and a backend object with a compile step of its own. Each passes
suites/dense/first.yaml, and each fails it once its kernels are broken: the examples' kernels are
what the suite judged."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import warm_python

from gemmconf import cli

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
FIRST = "dense/first.yaml"
BACKENDS = ("dynamo:blocked_mm", "aten_override:AtenOverride", "own_compile:TracingBackend")
LABELS = ("dynamo:blocked_mm", "aten-override", "tracing")


def gemmconf_run(folder: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """`gemmconf run ARGS` in `folder`, a process of its own (as a user starts it)."""
    return warm_python.run(
        [sys.executable, "-m", "gemmconf.cli", "run", *args, "-p", "no:xdist"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def installed_examples(folder: Path) -> Path:
    """The examples copied to `folder`, with `registered_compiler.compile_graph` installed under
    dynamo's entry-point group as `blocked_mm` (what its package's pyproject.toml declares)."""
    folder.mkdir(parents=True, exist_ok=True)
    for example in EXAMPLES.glob("*.py"):
        shutil.copy(example, folder)
    info = folder / "blocked_mm_example-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: blocked-mm-example\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        "[torch_dynamo_backends]\nblocked_mm = registered_compiler:compile_graph\n"
    )
    return folder


def outcomes(folder: Path) -> dict[str, dict[str, int]]:
    """Per backend label, its records' outcome counts."""
    records = json.loads((folder / "reports" / "results.json").read_text())["records"]
    found: dict[str, dict[str, int]] = {}
    for record in records:
        counts = found.setdefault(record["backend"], {})
        counts[record["outcome"]] = counts.get(record["outcome"], 0) + 1
    return found


def test_each_integration_example_passes_the_first_suite(tmp_path):
    folder = installed_examples(tmp_path / "work")
    done = gemmconf_run(folder, FIRST, "--backend", ",".join(BACKENDS), "-q")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert outcomes(folder) == {label: {"passed": 74} for label in LABELS}


def test_each_integration_example_fails_once_its_kernels_are_broken(tmp_path):
    folder = installed_examples(tmp_path / "work")
    kernels = folder / "blocked_kernels.py"
    source = kernels.read_text()
    assert "total = total + product(" in source
    kernels.write_text(source.replace("total = total + product(", "total = total - product("))
    done = gemmconf_run(folder, FIRST, "--backend", ",".join(BACKENDS), "-k", "mm and 64x64x64")
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-4000:]
    expected = {label: {"failed": 9} for label in LABELS}
    if torch.cuda.is_available():
        # aten_override registers its kernels for CPU tensors: on a GPU aten's own kernels
        # compute these items, and the records say so rather than crediting the library
        expected["aten-override"] = {"passed": 9}
        records = json.loads((folder / "reports" / "results.json").read_text())["records"]
        served = {r["computed_by"] for r in records if r["backend"] == "aten-override"}
        assert served == {"pytorch"}, served
    assert outcomes(folder) == expected


def test_a_registered_torch_compile_backend_runs_by_name(tmp_path):
    done = gemmconf_run(
        tmp_path, FIRST, "--backend", "dynamo:aot_eager", "-k", "mm_dynamic or 64x64x64-nn"
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    records = json.loads((tmp_path / "reports" / "results.json").read_text())["records"]
    assert len(records) == 4
    assert {r["backend"] for r in records} == {"dynamo:aot_eager"}
    assert {r["outcome"] for r in records} == {"passed"}
    # the compiles are counted: one graph each, the dynamic scenario's three shape sets included
    assert [r["metrics"]["compiles"] for r in records] == [1, 1, 1, 1]


def test_an_unknown_torch_compile_backend_is_a_usage_error_naming_the_known_ones(pytester):
    """`gemmconf run`'s pytest arguments, run in this process: the run stops at its start."""
    command = cli.pytest_arguments(
        [FIRST, "--backend", "dynamo:nosuch", "-p", "no:xdist"], pytester.path
    )
    done = pytester.runpytest_inprocess(*command)
    stderr = done.stderr.str()
    assert done.ret == pytest.ExitCode.USAGE_ERROR, done.stdout.str() + stderr
    assert "no torch.compile backend is named 'nosuch'" in stderr
    assert "aot_eager" in stderr and "inductor" in stderr
    assert not (pytester.path / "reports" / "results.json").exists()


def test_a_backend_list_keeps_a_backends_own_commas():
    from gemmconf.backends import split_specs

    assert split_specs("eager, inductor") == ["eager", "inductor"]
    assert split_specs("inductor-max-autotune:ATEN,TRITON,eager") == [
        "inductor-max-autotune:ATEN,TRITON",
        "eager",
    ]
    assert split_specs("dynamo:inductor,mode=max-autotune,reference:autotune,promote=4") == [
        "dynamo:inductor,mode=max-autotune",
        "reference:autotune,promote=4",
    ]
    assert split_specs("eager,") == ["eager", ""]  # an empty name stays one, to be refused


@pytest.mark.parametrize(("dynamic", "compiles"), [(False, 2), (True, 1)])
def test_a_compiler_function_as_a_backend_counts_its_compiles(dynamic, compiles):
    import torch

    from gemmconf.backends.dynamo import dynamo_backend

    graphs = []

    def my_compiler(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    backend = dynamo_backend(my_compiler, name="my-compiler")
    assert (backend.name, backend.availability()) == ("my-compiler", None)

    def program(a, b):
        return torch.mm(a, b)

    compiled = backend.compile(program, (), dynamic=dynamic)
    for m in (8, 16):
        a, b = torch.randn(m, 4), torch.randn(4, 3)
        assert torch.equal(compiled(a, b), a @ b)
    assert compiled.compiles() == len(graphs) == compiles
    assert compiled.uncaptured() is None
