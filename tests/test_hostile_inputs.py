"""Files from someone else run nothing and stop nothing (issue 44): suite, expectations and
results files are untrusted input. Each attempt of the issue's probe ends in a usage error naming
file:line and field, or in a harmless, quoted result.

What could hang or exhaust memory before its fix runs in a child process (`bounded`) whose
address space may grow 1 GiB past what its imports took and which is killed after `TIMEOUT`
seconds: the test fails, and the test run goes on."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gemmconf import expectations

pytest_plugins = ["pytester"]

TIMEOUT = 120  # seconds: a fixed loader answers in well under one on the slowest dev box
MEMORY = 1 << 30  # bytes of address space a child may add once its imports are done

SUITE = """
suite: tiny
scenarios:
  - name: mm
    op: mm
    shape: {M: 8, N: 8, K: 8}
    axes:
      dtype: [fp32, fp16]
"""

PRELUDE = f"""
import resource, sys
def cap_memory():
    pages = int(open("/proc/self/statm").read().split()[0])
    size = pages * resource.getpagesize() + {MEMORY}
    resource.setrlimit(resource.RLIMIT_AS, (size, size))
"""


def bounded(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run `code` (which calls cap_memory() once its imports are done) in a fresh Python."""
    try:
        return subprocess.run(
            [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {TIMEOUT} s: unbounded time")


def load_in_child(tmp_path: Path, suite_text: str, expectations_text: str | None = None) -> str:
    """Load `suite_text` (and an expectations file for backend `b`) in a bounded child; its
    output: the ScenarioError's text, or "loaded N"."""
    (tmp_path / "suite.yaml").write_text(suite_text)
    if expectations_text is not None:
        (tmp_path / "expectations").mkdir()
        (tmp_path / "expectations" / "b.yaml").write_text(expectations_text)
    result = bounded(
        """
        from pathlib import Path
        from gemmconf import expectations
        from gemmconf.scenario import ScenarioError, load_suite
        cap_memory()
        here = Path.cwd()
        try:
            instances = load_suite(here / "suite.yaml", root=here)
            if (here / "expectations").is_dir():
                expectations.load(here / "expectations", "b", instances, root=here)
        except ScenarioError as exc:
            print(exc)
        else:
            print("loaded", len(instances))
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


# ---- expectations: patterns ------------------------------------------------------------------


def test_an_expectation_glob_is_matched_in_linear_time(tmp_path):
    """`*?` ten times then Q, against ids 50 characters long: the regex `.*.` ten times
    backtracked for minutes; the entry now matches nothing, which is the usual error."""
    suite = SUITE.replace("dtype: [fp32, fp16]", "case: [{id: " + "a" * 40 + ", dtype: fp32}]")
    entry = "backend: b\nexpectations:\n  - match: '" + "*?" * 10 + "Q'\n    reason: r\n"
    out = load_in_child(tmp_path, suite, entry)
    assert out.startswith("expectations/b.yaml:3: match: pattern '*?*?") and "matches no" in out


def old_glob(pattern: str):
    """The translation the glob replaced (`*` -> `.*`), the meaning it keeps."""
    import re

    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile("".join(parts), re.DOTALL)


def test_the_linear_glob_means_what_the_regex_meant():
    import random

    draw = random.Random(44)
    for _ in range(20_000):
        pattern = "".join(draw.choice("ab*?[") for _ in range(draw.randint(0, 7)))
        text = "".join(draw.choice("ab[") for _ in range(draw.randint(0, 9)))
        expected = bool(old_glob(pattern).fullmatch(text))
        assert bool(expectations.compile_pattern(pattern).fullmatch(text)) == expected, (
            pattern,
            text,
        )
