"""README's quickstart, as written: its backend and expectations file run the installed suite
with `gemmconf run` from a folder of their own."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def quickstart_blocks(language: str) -> list[str]:
    text = README.read_text().split("## Quickstart", 1)[1].split("\n## ", 1)[0]
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
