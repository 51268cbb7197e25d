"""README as written: its quickstart's backend and expectations file run the installed suite with
`gemmconf run` from a folder of their own, its op table is the domain table's ops and its layout
shows every top-level folder of the repository."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import warm_python

from gemmconf.gemm.ops import OPS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


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
    done = warm_python.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
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
    # the items of dense/first.yaml, the one file -k selects from: the other 26 go unexpanded
    command += ["run", "dense/first.yaml", "--backend", f"{module}:Library", "-m", "cpu"]
    command += ["-p", "no:xdist", "-q", "-k", "first and fp32", "--no-isolate"]
    warm_python.run(command, cwd=folder, capture_output=True, text=True, timeout=600)
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


def section(heading: str) -> str:
    """The text of README's `## heading` section, up to the next `## ` heading."""
    text = README.read_text(encoding="utf-8")
    assert f"\n## {heading}\n" in text, f"README has no '## {heading}' section"
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_op_table_lists_every_op_of_the_domain_table():
    """Every op of harness/gemm/ops.py in the first column of README's op table, and no other."""
    rows = [line for line in section("The ops").splitlines() if line.startswith("| `")]
    listed = {name for row in rows for name in re.findall(r"`([a-z_0-9]+)`", row.split("|")[1])}
    assert set(OPS) - listed == set(), "ops of harness/gemm/ops.py missing from README's op table"
    assert listed - set(OPS) == set(), "README's op table names ops harness/gemm/ops.py lacks"


def tracked_top_level_folders() -> set[str]:
    """The repository's top-level folders that hold tracked files (what a clone has)."""
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout: " + done.stderr.strip())
    return {path.split("/", 1)[0] for path in done.stdout.split("\0") if "/" in path}


def test_the_layout_shows_every_top_level_folder():
    """README's "Project layout" block names each top-level folder (`name/` first on a line)."""
    (block,) = re.findall(r"^```\n(.*?)^```", section("Project layout"), flags=re.S | re.M)
    first_words = [line.split()[0] for line in block.splitlines() if line[:1].strip()]
    shown = {word.rstrip("/") for word in first_words if word.endswith("/")}
    folders = tracked_top_level_folders()
    assert folders - shown == set(), "top-level folders missing from README's layout"
    assert shown - folders == set(), "README's layout shows folders the repository lacks"
