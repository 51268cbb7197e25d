"""The tiny suite that the plugin's self-tests run, and the one way a test lays out a suite folder:
tests/conftest.py's `make_suite` and `suite` fixtures use it, and tests that run pytest in a
process of their own call `lay_out` on their folder."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# 6 instances: 5 run on a CPU (one of them faulty_backends' trigger, mm[fp16-17x9x33]), 1 is
# skipped for hardware.
TINY = """
suite: tiny
scenarios:
  - name: mm
    op: mm
    axes:
      dtype: [fp32, fp16]
      shape: [{M: 8, N: 8, K: 8}, {M: 17, N: 9, K: 33}]
  - name: addmm
    op: addmm
    shape: {M: 8, N: 8, K: 16}
    bias: [N]
  - name: mm_sm90
    op: mm
    shape: {M: 8, N: 8, K: 8}
    requires: {min_class: sm90}
"""


def lay_out(
    directory: Path,
    text: str = TINY,
    *,
    expectations: Mapping[str, str] | None = None,
    ini: bool = True,
    cache: bool = False,
) -> Path:
    """`directory`/suites/tiny.yaml holding `text`, and its folder `expectations/` where
    `expectations` gives one (backend -> the file's text). With `ini`, a tox.ini in `directory`
    naming the suite folder (gemmconf_suites) and putting this folder on the path (the planted
    backends); `cache`: keep pytest's cache (for --lf and --ff). Returns the suite folder."""
    suites = directory / "suites"
    suites.mkdir(exist_ok=True)
    (suites / "tiny.yaml").write_text(text)
    if expectations is not None:
        (suites / "expectations").mkdir(exist_ok=True)
        for backend, entries in expectations.items():
            (suites / "expectations" / f"{backend}.yaml").write_text(entries)
    if ini:
        addopts = "" if cache else "addopts = -p no:cacheprovider\n"
        (directory / "tox.ini").write_text(
            f"[pytest]\n{addopts}pythonpath = {TESTS}\ngemmconf_suites = suites\n"
        )
    return suites


def python_path(*first: Path | str) -> str:
    """PYTHONPATH for a child process: `first`, then this process's own entries (where gemmconf
    itself may be importable from: a GPU machine's copy outside the venv)."""
    inherited = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    return os.pathsep.join(str(entry) for entry in (*first, *inherited) if str(entry))


def write_suite(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    """A suite file of `text` (dedented) in tmp_path."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def load_one(tmp_path: Path, text: str):
    """The one instance a suite text expands to."""
    from gemmconf.scenario import load_suite

    (found,) = load_suite(write_suite(tmp_path, text))
    return found


def tiny_instances(folder: Path) -> dict:
    """The tiny suite's instances by id, from a suite file written in `folder`."""
    from gemmconf.scenario import load_suite

    path = folder / "t.yaml"
    path.write_text(TINY)
    return {i.id: i for i in load_suite(path, root=path.parent)}
