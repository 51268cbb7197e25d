"""The size budget `make lint` keeps (tools/function_sizes.py, ruff's C901): the repository is
within it, and planted long or complex functions are named by file, line and function."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("function_sizes", REPO / "tools/function_sizes.py")
assert _spec is not None and _spec.loader is not None
sizes = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = sizes  # its dataclasses look their module up
_spec.loader.exec_module(sizes)

with (REPO / "pyproject.toml").open("rb") as _f:
    BOUND = tomllib.load(_f)["tool"]["ruff"]["lint"]["mccabe"]["max-complexity"]


def long_function(name: str, lines: int, decorator: str = "", above: str = "") -> str:
    """A function of `lines` lines (its def line included), simple in every other way."""
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 2))
    return f"{above}{decorator}def {name}():\n{body}    return 0\n\n\n"


def complex_function(name: str, complexity: int, noqa: str = "", decorator: str = "") -> str:
    """A short function of McCabe complexity `complexity`: one path, and one more per `if`."""
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(complexity - 1))
    return f"{decorator}def {name}(x):{noqa}\n{branches}    return -1\n\n\n"


def line_of(source: str, name: str) -> int:
    return next(
        i for i, line in enumerate(source.splitlines(), 1) if line.startswith(f"def {name}(")
    )


def tree(tmp_path: Path, files: dict[str, str], allowed: str = "", ignores: str = "") -> Path:
    """A repository root with harness/ files, the repository's C901 bound and an allow-list."""
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.ruff.lint.mccabe]\nmax-complexity = {BOUND}\n"
        f"[tool.ruff.lint.per-file-ignores]\n{ignores}"
    )
    for name, text in {"harness/__init__.py": "", "backend/__init__.py": "", **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "tools").mkdir()
    (tmp_path / sizes.ALLOWED).write_text(textwrap.dedent(allowed))
    return tmp_path


def problems(root: Path) -> list[str]:
    return sizes.check(root, sizes.read_allowed(root / sizes.ALLOWED))


def test_the_repository_is_within_its_budget():
    assert sizes.main(["--root", str(REPO)]) == 0


def test_a_planted_long_function_fails_naming_file_line_function_and_length(tmp_path):
    source = long_function("fits", 80) + long_function("too_long", 81)
    root = tree(tmp_path, {"harness/planted.py": source})
    assert problems(root) == [
        "harness/planted.py:83: too_long: 81 lines, over the budget of 80: split it"
    ]
    assert sizes.main(["--root", str(root)]) == 1


def test_a_planted_complex_function_fails_here_and_under_ruff(tmp_path):
    source = complex_function("fits", BOUND) + complex_function("tangled", BOUND + 1)
    root = tree(tmp_path, {"backend/planted.py": source})
    line = line_of(source, "tangled")
    assert problems(root) == [
        f"backend/planted.py:{line}: tangled: complexity {BOUND + 1}, over the bound of {BOUND} "
        "(ruff C901): split it"
    ]
    # `make lint`'s ruff check, with the repository's configuration, fails on it too
    ruff = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise"]
    done = subprocess.run(
        [*ruff, "--config", str(REPO / "pyproject.toml"), "backend/planted.py"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert f"C901 `tangled` is too complex ({BOUND + 1} > {BOUND})" in done.stdout
    assert "`fits`" not in done.stdout


def test_a_long_kernel_body_passes_only_where_it_says_why(tmp_path):
    jit = "@triton.jit\n"
    source = (
        long_function("kernel_says_why", 90, jit, "# long: one body for Triton\n")
        + long_function("kernel_silent", 90, jit)
        + long_function("host_says_why", 90, "", "# long: a host function\n")
        + long_function("short_kernel", 20, "@gluon.jit\n", "# long: it was long once\n")
    )
    root = tree(tmp_path, {"backend/kernels.py": source})
    found = problems(root)
    assert [p.split(":")[2].strip() for p in found] == [
        "kernel_silent",
        "host_says_why",
        "short_kernel",
    ]
    assert found[0].endswith(
        "split it (a kernel body may say why in a '# long: ...' line above its decorator)"
    )
    assert "exempts kernel bodies only" in found[1]
    assert "drop '# long:'" in found[2]


def test_a_complex_kernel_body_passes_only_with_a_reason_after_its_noqa(tmp_path):
    over = BOUND + 3
    source = (
        complex_function(
            "kernel", over, "  # noqa: C901 one constexpr branch per op", "@triton.jit\n"
        )
        + complex_function("bare_noqa", over, "  # noqa: C901", "@triton.jit\n")
        + complex_function("host", over, "  # noqa: C901 it reads fine")
    )
    found = problems(tree(tmp_path, {"backend/kernels.py": source}))
    assert [p.split(":")[2].strip() for p in found] == ["bare_noqa", "host"]
    assert "must say why" in found[0] and "exempts kernel bodies only" in found[1]


def test_the_allow_list_lets_listed_functions_shrink_but_not_grow_or_linger(tmp_path):
    source = (
        long_function("grew", 95)
        + long_function("shrank", 85)
        + long_function("split_since", 40)
        + long_function("new_one", 81)  # in a listed file: not admitted
        + complex_function("tangled", BOUND + 5)
    )
    allowed = f"""\
        harness/listed.py:grew          lines       90
        harness/listed.py:shrank        lines       90
        harness/listed.py:split_since   lines       100
        harness/listed.py:gone          lines       100
        harness/listed.py:tangled       complexity  {BOUND + 5}
        """
    ignores = '"harness/listed.py" = ["C901"]\n"harness/other.py" = ["C901"]\n'
    files = {"harness/listed.py": source, "harness/other.py": ""}
    found = problems(tree(tmp_path, files, allowed, ignores))
    split_since, new_one = line_of(source, "split_since"), line_of(source, "new_one")
    assert found == [
        "harness/listed.py:1: grew: lines 95, grown past the 90 "
        "tools/function_sizes_allowed.txt allows: split it",
        f"harness/listed.py:{split_since}: split_since: lines within the budget of 80 now: "
        "remove its 'lines' entry from tools/function_sizes_allowed.txt",
        f"harness/listed.py:{new_one}: new_one: 81 lines, over the budget of 80: split it",
        "harness/listed.py:gone: listed in tools/function_sizes_allowed.txt but gone: remove its "
        "'lines' entry",
        "harness/other.py: pyproject's per-file-ignores exempt it from C901 but "
        "tools/function_sizes_allowed.txt lists no complex function in it: remove the exemption",
    ]


@pytest.mark.parametrize(
    "line", ["harness/x.py:f", "harness/x.py:f size 3", "harness/x.py:f lines x"]
)
def test_a_malformed_allow_list_line_is_refused(tmp_path, line):
    path = tmp_path / "allowed.txt"
    path.write_text(f"# comment\n{line}\n")
    with pytest.raises(SystemExit, match=r"allowed\.txt:2: expected"):
        sizes.read_allowed(path)
