"""Standalone repros (`gemmconf repro ID --backend X`): the file runs where only torch (and the
backend's own package) can be imported, from a folder outside the checkout, and fails as the
item failed under gemmconf (the same err_ratio, on the same values); a passing item's repro
exits 0. Each failure's details name the command, as `gemmconf explain` does."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import warm_python
from planted_backends import K_TAIL_COMPILER

from gemmconf import api
from gemmconf.repro import ReproUnsupported, repro_source, unsupported

# Runs a file as __main__ where gemmconf cannot be imported (it is installed in this
# environment, so the check is an import hook rather than an empty site-packages).
WITHOUT_GEMMCONF = """
import runpy, sys


class NoGemmconf:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("gemmconf", "gemmconf_reference"):
            raise ImportError(f"{name}: a standalone repro imports no gemmconf")


sys.meta_path.insert(0, NoGemmconf())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

FAILING = "first/mm[fp32-127x65x33-nn]"  # K = 33: one product dropped
PASSING = "first/mm[fp32-64x64x64-nn]"  # K = 64: nothing dropped
BACKEND = "dynamo:planted_k_tail"


def installed(site: Path) -> Path:
    site.mkdir(parents=True)
    # a torch.compile backend with a planted bug, installed under dynamo's entry-point group
    # (as a package of its own would be): mm sums K only up to its last multiple of 16
    (site / "planted_k_tail.py").write_text(K_TAIL_COMPILER)
    info = site / "planted_k_tail-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: planted-k-tail\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[torch_dynamo_backends]\nplanted_k_tail = planted_k_tail:compile_graph\n"
    )
    return site


def gemmconf(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return warm_python.run(
        [sys.executable, "-m", "gemmconf.cli", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )


def standalone(file: Path, folder: Path, site: Path) -> subprocess.CompletedProcess:
    """`python FILE` from `folder`, with `site` (the backend's package) importable and gemmconf
    not."""
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_GEMMCONF, str(file)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(folder)},
    )


def test_a_repro_runs_without_gemmconf_and_fails_as_the_item_did(tmp_path):
    work = installed(tmp_path / "work")  # the backend's package, where gemmconf runs
    done = gemmconf(
        work,
        "run",
        "dense/first.yaml",
        "--backend",
        BACKEND,
        "-k",
        "fp32-127x65x33-nn or fp32-64x64x64-nn",
        "-p",
        "no:xdist",
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    records = json.loads((work / "reports" / "results.json").read_text())["records"]
    found = {r["id"]: r for r in records}
    assert {i: r["outcome"] for i, r in found.items()} == {FAILING: "failed", PASSING: "passed"}
    command = f"gemmconf repro '{FAILING}' --backend {BACKEND}"
    assert command in found[FAILING]["details"]  # each failure names its repro
    explained = gemmconf(work, "explain", FAILING, "--backend", BACKEND)
    assert f"standalone repro: {command}" in explained.stdout

    elsewhere = tmp_path / "elsewhere"  # outside the checkout: nothing of it on the path
    elsewhere.mkdir()
    ratios = {}
    for item, status in ((FAILING, 1), (PASSING, 0)):
        file = elsewhere / f"repro_{status}.py"
        wrote = gemmconf(work, "repro", item, "--backend", BACKEND, "-o", str(file))
        assert wrote.returncode == 0, wrote.stderr
        text = file.read_text()
        imports = [line for line in text.splitlines() if re.match(r"\s*(import|from) ", line)]
        assert not [line for line in imports if "gemmconf" in line], imports
        assert "torch.compile(fn, backend='planted_k_tail', dynamic=DYNAMIC)" in text
        ran = standalone(file, elsewhere, work)
        assert ran.returncode == status, ran.stdout[-3000:] + ran.stderr[-3000:]
        ratios[item] = re.findall(r"err_ratio (\S+) > 3 allowed", ran.stdout)
    # the same values as gemmconf judged: its err_ratio is the repro's first draw's
    assert f"{found[FAILING]['metrics']['err_ratio']:.4g}" == ratios[FAILING][0]
    assert ratios[PASSING] == []


# A `module:attr` backend in a file beside the run (as an outside author writes one): no bug
BESIDE = """
class Compiled:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *inputs):
        return self.fn(*inputs)


class Beside:
    name = "beside"

    def availability(self):
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        return Compiled(fn)


backend = Beside()
"""


def test_a_repro_written_elsewhere_says_how_to_import_a_backend_from_here(tmp_path):
    """The onnxrt trial's TVM fallback (2026-11-30) ran `repro ID --backend tvm_relax:backend -o
    ../file.py` and then `python ../file.py` as printed: ModuleNotFoundError tvm_relax."""
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    (work / "beside_backend.py").write_text(BESIDE)
    file = elsewhere / "repro.py"
    wrote = gemmconf(work, "repro", PASSING, "--backend", "beside_backend:backend", "-o", str(file))
    assert wrote.returncode == 0, wrote.stderr
    said = wrote.stdout.strip().split("run it: ")[-1]
    assert said == f"PYTHONPATH={work.resolve()} python {file}"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work)}
    run = [sys.executable, str(file)]
    plain = subprocess.run(run, cwd=work, capture_output=True, text=True, env=env, timeout=600)
    # a path to set, not the backend's failure (a torchax trial's repro said "FAILED ... the
    # backend raised ModuleNotFoundError", 2026-12-01)
    assert plain.returncode == 2, plain.stdout[-3000:] + plain.stderr[-3000:]
    assert "cannot import beside_backend, the module --backend beside_backend:backend" in (
        plain.stderr
    )
    assert "not the backend's failure" in plain.stderr and "FAILED" not in plain.stdout
    env["PYTHONPATH"] = str(work.resolve())
    ran = subprocess.run(run, cwd=work, capture_output=True, text=True, env=env, timeout=600)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    here = gemmconf(work, "repro", PASSING, "--backend", "beside_backend:backend")
    assert here.stdout.strip().endswith(
        "run it: python repro_first_mm_fp32_64x64x64_nn_beside_backend_backend.py"
    )


# A `module:attr` backend that crashes in native code (reads address 0) on every call
CRASHING = BESIDE.replace(
    "        return self.fn(*inputs)",
    "        import ctypes\n\n        return ctypes.string_at(0)",
)


def test_a_repro_of_a_crash_prints_where_it_crashed(tmp_path):
    """A FlagGems trial (2026-12-02): the repro of its K = 0 SIGSEGV exited 139 printing
    nothing. It prints the Python stack that reached the crash, the backend's frame in it."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "crashing_backend.py").write_text(CRASHING)
    file = tmp_path / "repro.py"
    spec = "crashing_backend:backend"
    wrote = gemmconf(work, "repro", PASSING, "--backend", spec, "-o", str(file))
    assert wrote.returncode == 0, wrote.stderr
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "PYTHONPATH": str(work.resolve())}
    ran = subprocess.run(
        [sys.executable, str(file)], cwd=work, capture_output=True, text=True, env=env, timeout=600
    )
    assert ran.returncode == -11, ran.stdout[-3000:] + ran.stderr[-3000:]  # SIGSEGV
    assert "Fatal Python error: Segmentation fault" in ran.stderr, ran.stderr[-3000:]
    assert "crashing_backend.py" in ran.stderr, ran.stderr[-3000:]


def test_a_repro_names_what_it_cannot_write():
    (instance,) = api.instances(["first/mm[fp32-64x64x64-nn]"])
    with pytest.raises(ReproUnsupported, match="a repro is for one backend"):
        repro_source(instance, "eager,inductor")
    (mx,) = [i for i in api.instances(["*mx*"]) if i.scaling == "mx"][:1]
    with pytest.raises(ReproUnsupported, match="not written as code yet"):
        repro_source(mx, "eager")
    # what a failure's details and the failure groups say instead of a command that would fail
    assert "not written as code yet" in unsupported(mx)
    assert unsupported(instance) is None


def test_a_backend_named_as_a_run_records_it_gets_the_spec_to_pass(tmp_path, monkeypatch, capsys):
    """`--backend tvm-relax` (the name a run of `my_tvm:backend` records) is no spec; explain
    and repro say which spec the run in this folder was given."""
    from gemmconf.cli import main
    from gemmconf.report import results

    (tmp_path / "reports").mkdir()
    document = {"format": results.FORMAT, "version": results.VERSION, "records": []}
    document["backend_specs"] = {"tvm-relax": "my_tvm:backend"}
    (tmp_path / "reports" / "results.json").write_text(json.dumps(document))
    monkeypatch.chdir(tmp_path)
    for command in ("repro", "explain"):
        assert main([command, "first/mm[fp32-64x64x64-nn]", "--backend", "tvm-relax"]) == 2
        said = capsys.readouterr().err
        assert "unknown backend 'tvm-relax'" in said
        assert "pass --backend my_tvm:backend" in said
    assert main(["repro", "first/mm[fp32-64x64x64-nn]", "--backend", "nothing-known"]) == 2
    assert "pass --backend" not in capsys.readouterr().err


def test_explain_and_repro_take_the_node_id_a_run_printed(capsys):
    """A lightning-thunder trial (2026-11-30) pasted `seeds/max_autotune.yaml::matmul_dropout[@…]`
    from a run's output into `explain` and got "no instance"."""
    from gemmconf.cli import main

    for wanted in (
        "seeds/max_autotune.yaml::matmul_dropout[@thunder]",
        "suites/seeds/max_autotune.yaml::matmul_dropout[@thunder]",
        "matmul_dropout[@thunder]",
    ):
        assert main(["explain", wanted]) == 0
        assert capsys.readouterr().out.startswith("seed_max_autotune/matmul_dropout  (")
    # a file that does not hold it, and a name in no suite, name nothing
    assert main(["explain", "dense/first.yaml::matmul_dropout[@thunder]"]) == 2
    assert main(["explain", "nowhere[@thunder]"]) == 2
    assert "no instance" in capsys.readouterr().err


@pytest.mark.parametrize("operand", ["a", "b"])
def test_a_repro_quantizes_fp8_operands_as_the_harness_does(operand):
    """A standalone repro carries its own copy of the fp8 quantizer (it imports no gemmconf):
    values, scales and dequantized values equal the harness's bit for bit, for every
    non-microscaling recipe."""
    import torch

    from gemmconf import repro_template
    from gemmconf.gemm.scaling import RECIPES

    compared = 0
    for recipe in (r for r in RECIPES.values() if not r.microscaling):
        block = recipe.block(operand)  # as gemmconf.repro writes the call
        for shape in ((256, 384), (3, 128, 256), (0, 128)):
            x = torch.randn(shape, generator=torch.Generator().manual_seed(len(shape))) * 2
            args = (x, block, torch.float8_e4m3fn, recipe.per_tensor, recipe.scales_column_major)
            try:
                ours = recipe.quantize(x, operand, torch.float8_e4m3fn)
            except RuntimeError:  # blocks that do not tile the shape: neither quantizes it
                with pytest.raises(RuntimeError):
                    repro_template.quantize(*args)
                continue
            values, scale, dequantized = repro_template.quantize(*args)
            assert torch.equal(values.view(torch.uint8), ours.values.view(torch.uint8))
            assert torch.equal(scale, ours.scale) and torch.equal(dequantized, ours.dequantized)
            compared += 1
    assert compared >= 8
