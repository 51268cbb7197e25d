"""README's quickstart, as written: its backend and expectations file run the installed suite
with `gemmconf run` from a folder of their own."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def quickstart_blocks(language: str, section: str = "Quickstart") -> list[str]:
    text = README.read_text().split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(rf"^( *)```{language}\n(.*?)^\1```", text, flags=re.S | re.M)
    return [
        "\n".join(line[len(indent) :] for line in body.splitlines()) + "\n"
        for indent, body in blocks
    ]


def test_the_quickstart_backend_runs_the_shipped_suite(tmp_path):
    (backend,) = quickstart_blocks("python")
    (expectations,) = quickstart_blocks("yaml")
    (tmp_path / "my_gemm.py").write_text(backend)
    (tmp_path / "my-gemm.yaml").write_text(expectations)
    command = [sys.executable, "-c", "import sys; from gemmconf.cli import main; sys.exit(main())"]
    command += ["run", "--backend", "my_gemm:MyGemm", "--expectations", "my-gemm.yaml"]
    command += ["-m", "cpu", "-k", "first or scaled", "--no-isolate", "-p", "no:xdist", "-q"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    records = json.loads((tmp_path / "reports" / "results.json").read_text())["records"]
    outcomes = {(r["op"], r["outcome"]) for r in records}
    assert {("mm", "passed"), ("scaled_mm", "xfailed"), ("addmm", "skipped")} <= outcomes
    assert {r["backend"] for r in records} == {"my-gemm"}
    refused = next(r for r in records if r["op"] == "scaled_mm")
    assert refused["kind"] == "unsupported" and "no fp8 yet" in refused["reason"]
    assert (tmp_path / "reports" / "conformance.html").is_file()


LIBRARY = """\
import torch


def my_mm(a, b):  # no aten mm inside: it would call this override again
    return (a[:, :, None] * b[None, :, :]).sum(1)


def my_addmm(c, a, b, *, beta=1, alpha=1):
    product = alpha * my_mm(a, b)
    return product if beta == 0 else beta * c + product


"""

BACKEND = """

class Library:
    name = "library"

    def availability(self):
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        return Compiled(fn)
"""


def run_library(folder: Path, module: str) -> list[dict]:
    command = [sys.executable, "-c", "import sys; from gemmconf.cli import main; sys.exit(main())"]
    command += ["run", "--backend", f"{module}:Library", "-m", "cpu", "-p", "no:xdist", "-q"]
    command += ["-k", "first and fp32", "--no-isolate"]
    subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)
    return json.loads((folder / "reports" / "results.json").read_text())["records"]


def test_the_aten_override_example_is_judged_and_the_process_wide_one_is_not(tmp_path):
    """README's library, its overrides on for each call only: judged (its mm and addmm pass).
    The same kernels registered for the whole process: every item "PyTorch altered"."""
    (block,) = quickstart_blocks("python", "A backend that overrides aten ops")
    block = block.replace('"CUDA"', '"CPU"')  # this machine's
    (tmp_path / "per_call.py").write_text(LIBRARY + block + BACKEND)
    process_wide = block.replace(
        "class Compiled",
        "_LIB = torch.library.Library('aten', 'IMPL')\n"
        "_LIB.impl('addmm', my_addmm, 'CPU')\n\n\nclass Compiled",
    )
    (tmp_path / "process_wide.py").write_text(LIBRARY + process_wide + BACKEND)
    records = run_library(tmp_path, "per_call")
    assert {"mm", "addmm", "bmm"} == {r["op"] for r in records}
    assert all(r["outcome"] == "passed" for r in records), [r["reason"] for r in records]
    records = run_library(tmp_path, "process_wide")
    assert records and all(r["kind"] == "crash" for r in records)
    assert all(r["reason"].startswith("PyTorch altered: library changed") for r in records)
