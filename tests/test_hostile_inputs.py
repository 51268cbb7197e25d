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
from gemmconf.scenario import ScenarioError, load_suite

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


# ---- suite and expectations files: YAML -------------------------------------------------------


def alias_bomb() -> str:
    """Nine levels of nine aliases in a scenario's `doc` (whose error message repr()s it)."""
    items = ["&x0 [" + ", ".join(['"aaaaaaaaaa"'] * 9) + "]"]
    items += [f"&x{i} [" + ", ".join([f"*x{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return SUITE.replace("    axes:", "    doc: [" + ", ".join(items) + "]\n    axes:")


def test_a_yaml_alias_bomb_is_a_usage_error(tmp_path):
    out = load_in_child(tmp_path, alias_bomb())
    assert out.startswith("suite.yaml:7: doc: with its aliases written out the document holds")


def test_a_recursive_alias_is_a_usage_error(tmp_path):
    out = load_in_child(tmp_path, SUITE.replace("    axes:", "    doc: &d [*d]\n    axes:"))
    assert out == "suite.yaml:7: doc: alias *d inside the node &d it names (a recursive structure)"


def test_aliases_the_shipped_files_use_still_load(tmp_path):
    suite = SUITE.replace("shape: {M: 8, N: 8, K: 8}", "shape: &s {M: 8, N: 8, K: 8}")
    suite += "  - {name: again, op: mm, shape: *s}\n"
    assert load_in_child(tmp_path, suite) == "loaded 3"


def test_deep_nesting_is_a_usage_error_not_a_crash(tmp_path):
    """100,000 nested brackets segfaulted the whole pytest run inside PyYAML."""
    out = load_in_child(tmp_path, "suite: nest\nscenarios: " + "[" * 100_000 + "\n")
    assert out == "suite.yaml:2: scenarios: nested more than 64 mappings or lists deep"


def test_a_file_past_the_size_limit_is_refused_unread(tmp_path):
    (tmp_path / "big.yaml").write_text(SUITE + "#" * (1 << 20) + "\n")
    with pytest.raises(ScenarioError, match=r"big.yaml: file: 1,048,691 bytes, past the limit"):
        load_suite(tmp_path / "big.yaml", root=tmp_path)


def test_a_file_of_too_many_values_is_a_usage_error(tmp_path):
    text = SUITE.replace("    axes:", "    doc: [" + ",".join(["1"] * 100_000) + "]\n    axes:")
    out = load_in_child(tmp_path, text)
    assert out == "suite.yaml:7: doc: more than 100,000 values, lists and mappings"


@pytest.mark.parametrize(
    ("where", "value"),
    [("id", r'"a\e[2J\e[31mRED"'), ("doc", r'"ok\rhidden"'), ("doc", '"left\u202eright"')],
)
def test_control_characters_in_a_suite_are_a_usage_error(tmp_path, where, value):
    """An escape sequence in an axis value's id reached the terminal in every node id."""
    text = SUITE.replace("dtype: [fp32, fp16]", f"case: [{{{where}: {value}, dtype: fp32}}]")
    if where == "doc":
        text = SUITE.replace("    axes:", f"    doc: {value}\n    axes:")
    (tmp_path / "suite.yaml").write_text(text)
    with pytest.raises(ScenarioError) as caught:
        load_suite(tmp_path / "suite.yaml", root=tmp_path)
    assert f": {where}: control character U+" in str(caught.value)


def test_control_characters_in_an_expectation_reason_are_a_usage_error(tmp_path):
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "b.yaml").write_text(
        'backend: b\nexpectations:\n  - match: "tiny/*"\n    reason: "\\e[2Jhidden"\n'
    )
    instances = load_suite(tmp_path / "suite.yaml", root=tmp_path)
    with pytest.raises(ScenarioError) as caught:
        expectations.load(tmp_path / "e", "b", instances, root=tmp_path)
    assert str(caught.value).startswith("e/b.yaml:4: reason: control character U+001B in")


def run_in_child(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """pytest on `folder`'s suite (eager, in process), bounded like the loaders above."""
    return bounded(
        f"""
        import pytest, torch, gemmconf.plugin
        cap_memory()
        sys.exit(pytest.main(["suites", "--backend", "eager", "--no-isolate", "-p",
                              "no:cacheprovider", *{list(args)!r}]))
        """,
        folder,
    )


def test_a_run_on_a_hostile_suite_folder_is_a_usage_error_and_keeps_the_results(pytester):
    """Sharing a suite folder is enough: its expectations file loads by itself. Each attempt
    stops the run at start-up with exit 4 naming file:line and field; the previous run's
    results stay as they were."""
    suites = pytester.path / "suites"
    suites.mkdir()
    (suites / "tiny.yaml").write_text(SUITE)
    pytester.makeini("[pytest]\ngemmconf_suites = suites\n")
    assert run_in_child(pytester.path).returncode == 0
    results = pytester.path / "reports" / "results.json"
    before = results.read_bytes()
    glob = "backend: eager\nexpectations:\n  - match: '" + "*?" * 10 + "Q'\n    reason: r\n"
    long_ids = SUITE.replace("dtype: [fp32, fp16]", "case: [{id: " + "a" * 40 + ", dtype: fp32}]")
    attempts = {
        "tiny.yaml:7: doc: with its aliases written out": {"tiny.yaml": alias_bomb()},
        "tiny.yaml:1: scenarios: nested more than 64": {"tiny.yaml": "scenarios: " + "[" * 10**5},
        "expectations/eager.yaml:3: match: pattern '*?*?*?": {
            "tiny.yaml": long_ids,
            "expectations/eager.yaml": glob,
        },
    }
    (suites / "expectations").mkdir()
    for message, files in attempts.items():
        for name, text in files.items():
            (suites / name).write_text(text)
        result = run_in_child(pytester.path)
        assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stderr[-2000:]
        assert f"ERROR: invalid suite or expectations file: suites/{message}" in result.stderr
        assert results.read_bytes() == before
        (suites / "tiny.yaml").write_text(SUITE)
        (suites / "expectations" / "eager.yaml").unlink(missing_ok=True)
