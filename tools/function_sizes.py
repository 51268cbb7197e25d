"""The size budget `make lint` keeps in harness/ and backend/ (issue 45, item 11), so that a
function's growth shows at review time instead of settling.

- Length: no function longer than MAX_LINES lines, counted from its `def` line to its last
  line (decorators not counted; its docstring and comments are).
- Complexity: ruff's C901 (McCabe) at the bound of pyproject.toml's [tool.ruff.lint.mccabe].
  `ruff check .` applies it too; this script also sees the files pyproject's per-file-ignores
  exempt from C901, and noqa comments.

A Triton or Gluon kernel body (a function decorated `@triton.jit`, `@gluon.jit`) may pass a
limit where it says why, in one line: a `# long: <why>` comment directly above its decorators
for its length, `# noqa: C901 <why>` on its `def` line for its complexity. Nothing else may.

Functions in files that other work has open are listed in ALLOWED (`path:function lines N` or
`path:function complexity N`, N its size when listed). A listed function may shrink but not
grow; an entry whose function is gone or back within the limit fails until it is removed, and
a file that pyproject exempts from C901 must still hold a listed complex function: the list
only empties.

Run from the repository root: `python tools/function_sizes.py`. Exit status 1, and one line per
offence (`path:line: function: what`), when the budget is broken.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOTS = ("harness", "backend")
MAX_LINES = 80
ALLOWED = Path("tools/function_sizes_allowed.txt")  # relative to the repository root
KERNEL_DECORATORS = ("jit",)  # the last part of a kernel's decorator: triton.jit, gluon.jit
LONG_REASON = re.compile(r"#\s*long:\s*(\S.*)$")
NOQA = re.compile(r"#\s*noqa:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)(.*)$")


@dataclass(frozen=True)
class Function:
    """One function or method of a source file, as the budget sees it."""

    path: str  # relative to the repository root, with forward slashes
    line: int  # its `def` line
    name: str  # qualified within its file: Class.method, outer.inner
    lines: int
    kernel: bool  # decorated as a Triton or Gluon kernel
    long_reason: str | None  # the text of a `# long:` comment directly above it
    noqa_reason: str | None  # the words after a C901 noqa code on its `def` line ("" if none)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}: {self.name}"


def functions(root: Path, path: Path) -> Iterator[Function]:
    """Every function and method of one source file, nested ones included."""
    source = path.read_text()
    lines = source.splitlines()
    relative = path.relative_to(root).as_posix()

    def visit(node: ast.AST, prefix: str) -> Iterator[Function]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                yield _function(relative, lines, child, name)
                yield from visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, prefix + child.name + ".")
            else:
                yield from visit(child, prefix)

    yield from visit(ast.parse(source, str(path)), "")


def _function(
    path: str, lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef, name: str
) -> Function:
    assert node.end_lineno is not None
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    long_reason = None
    above = first - 2  # index of the line above the first decorator
    while above >= 0 and lines[above].strip().startswith("#"):
        found = LONG_REASON.search(lines[above])
        if found:
            long_reason = found.group(1).strip()
        above -= 1
    noqa = NOQA.search(lines[node.lineno - 1])
    if noqa is not None and "C901" not in re.split(r"\s*,\s*", noqa.group(1)):
        noqa = None
    return Function(
        path=path,
        line=node.lineno,
        name=name,
        lines=node.end_lineno - node.lineno + 1,
        kernel=any(_decorator_name(d) in KERNEL_DECORATORS for d in node.decorator_list),
        long_reason=long_reason,
        noqa_reason=None if noqa is None else noqa.group(2).strip(),
    )


def _decorator_name(decorator: ast.expr) -> str:
    """The last part of a decorator's name: `jit` for @triton.jit and @triton.jit(...)."""
    if isinstance(decorator, ast.Call):
        decorator = decorator.func
    if isinstance(decorator, ast.Attribute):
        return decorator.attr
    return decorator.id if isinstance(decorator, ast.Name) else ""


def complexity_bound(root: Path) -> int:
    with (root / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["tool"]["ruff"]["lint"]["mccabe"]["max-complexity"]


def exempt_from_c901(root: Path) -> set[str]:
    """The files under ROOTS that pyproject's per-file-ignores exempt from C901."""
    with (root / "pyproject.toml").open("rb") as f:
        ignores = tomllib.load(f)["tool"]["ruff"]["lint"].get("per-file-ignores", {})
    return {
        path
        for path, codes in ignores.items()
        if path.startswith(tuple(f"{r}/" for r in ROOTS)) and {"C901", "C90"} & set(codes)
    }


def complexities(root: Path, bound: int) -> dict[tuple[str, int], int]:
    """(path, def line) -> McCabe complexity of each function over `bound`, from ruff's C901,
    noqa comments and per-file-ignores set aside (this script judges those)."""
    command = [
        sys.executable,
        "-m",
        "ruff",
        "check",
        "--select",
        "C901",
        "--config",
        f"lint.mccabe.max-complexity={bound}",
        "--config",
        "lint.per-file-ignores = {}",
        "--ignore-noqa",
        "--no-cache",
        "--exit-zero",
        "--output-format",
        "json",
        *ROOTS,
    ]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=True)
    found = {}
    for diagnostic in json.loads(done.stdout):
        size = re.search(r"too complex \((\d+) >", diagnostic["message"])
        assert size, diagnostic["message"]
        path = Path(diagnostic["filename"]).resolve().relative_to(root.resolve()).as_posix()
        found[path, diagnostic["location"]["row"]] = int(size.group(1))
    return found


def read_allowed(path: Path) -> dict[tuple[str, str], int]:
    """(`path:function`, "lines" | "complexity") -> the size listed."""
    allowed = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            function, kind, size = line.split()
            if kind not in ("lines", "complexity"):
                raise ValueError(kind)
            allowed[function, kind] = int(size)
        except ValueError:
            message = f"{path}:{number}: expected 'path:function lines|complexity N'"
            raise SystemExit(message) from None
    return allowed


def check(root: Path, allowed: dict[tuple[str, str], int]) -> list[str]:
    """One line per offence against the budget in `root`'s harness/ and backend/."""
    bound = complexity_bound(root)
    found = [
        function
        for top in ROOTS
        for path in sorted((root / top).rglob("*.py"))
        for function in functions(root, path)
    ]
    complexity = complexities(root, bound)
    limits = {"lines": MAX_LINES, "complexity": bound}
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    for function in found:
        key = f"{function.path}:{function.name}"
        sizes = {
            "lines": function.lines,
            "complexity": complexity.get((function.path, function.line)),
        }
        for kind, size in sizes.items():
            listed = allowed.get((key, kind))
            if listed is not None:
                seen.add((key, kind))
                problems += _listed(function, kind, size, listed, limits[kind])
        problems += _length(function, (key, "lines") in allowed)
        problems += _complexity(
            function, sizes["complexity"], bound, (key, "complexity") in allowed
        )
    for key, kind in sorted(set(allowed) - seen):
        problems.append(f"{key}: listed in {ALLOWED} but gone: remove its '{kind}' entry")
    listed_files = {key.split(":", 1)[0] for key, kind in allowed if kind == "complexity"}
    for path in sorted(exempt_from_c901(root) - listed_files):
        problems.append(
            f"{path}: pyproject's per-file-ignores exempt it from C901 but {ALLOWED} lists no "
            "complex function in it: remove the exemption"
        )
    return problems


def _listed(function: Function, kind: str, size: int | None, listed: int, limit: int) -> list[str]:
    if size is None or size <= limit:  # size None: ruff found it within the bound
        return [
            f"{function.where}: {kind} within the budget of {limit} now: remove its '{kind}' "
            f"entry from {ALLOWED}"
        ]
    if size > listed:
        return [
            f"{function.where}: {kind} {size}, grown past the {listed} {ALLOWED} allows: split it"
        ]
    return []


def _length(function: Function, listed: bool) -> list[str]:
    over = function.lines > MAX_LINES
    if function.long_reason is not None and not function.kernel:
        return [f"{function.where}: a '# long:' comment exempts kernel bodies only"]
    if function.long_reason is not None and not over:
        return [f"{function.where}: {function.lines} lines, within {MAX_LINES}: drop '# long:'"]
    if not over or listed or function.long_reason:
        return []
    why = " (a kernel body may say why in a '# long: ...' line above its decorator)"
    return [
        f"{function.where}: {function.lines} lines, over the budget of {MAX_LINES}: split it"
        + (why if function.kernel else "")
    ]


def _complexity(function: Function, size: int | None, bound: int, listed: bool) -> list[str]:
    noqa = function.noqa_reason
    if noqa is not None and not function.kernel:
        return [f"{function.where}: '# noqa: C901' exempts kernel bodies only"]
    if noqa is not None and size is None:
        return [f"{function.where}: complexity within {bound}: drop '# noqa: C901'"]
    if noqa == "" and size is not None:
        return [f"{function.where}: '# noqa: C901' must say why after the code"]
    if size is None or listed or noqa:
        return []
    why = " (a kernel body may say why after a '# noqa: C901' on its def line)"
    return [
        f"{function.where}: complexity {size}, over the bound of {bound} (ruff C901): split it"
        + (why if function.kernel else "")
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args(argv)
    allowed_path = args.root / ALLOWED
    allowed = read_allowed(allowed_path) if allowed_path.exists() else {}
    problems = check(args.root, allowed)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} over the size budget (tools/function_sizes.py)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
