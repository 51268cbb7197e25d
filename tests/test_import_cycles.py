"""No import cycles in the harness (`gemmconf`) or the reference backend (`gemmconf_reference`):
pyproject's acyclic_siblings contract checks it in `make lint` (lint-imports), and this file
checks it module by module, which also sees a package's __init__ in a cycle with its own modules.
A cycle dodged by an import inside a function is still a cycle: grimp reads those imports too.
Both are shown to fail on a cycle planted in a copy of the package."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"gemmconf": ROOT / "harness", "gemmconf_reference": ROOT / "backend"}
CONTRACT = "acyclic_siblings"


def acyclic_contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = (c for c in config["contracts"] if c["type"] == CONTRACT)
    return contract


def cycles(packages: list[str], ignored: list[str] = ()) -> list[list[str]]:
    """The import cycles among the packages' modules: each strongly connected group of two or
    more modules (or a module that imports itself), sorted; `ignored`: "a -> b" imports left
    out, as the contract's ignore_imports."""
    graph = grimp.build_graph(*packages, cache_dir=None)
    for line in ignored:
        importer, imported = (part.strip() for part in line.split("->"))
        graph.remove_import(importer=importer, imported=imported)
    modules = sorted(m for m in graph.modules if m.split(".")[0] in packages)
    inside = set(modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & inside) for m in modules}
    return _strongly_connected(edges)


def _strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; groups that are cycles only."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in edges:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if child < len(edges[node]):
                work.append((node, child + 1))
                nxt = edges[node][child]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:  # back in the caller: pass the lowest index up
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in edges[node]:
                    found.append(sorted(group))
    return sorted(found)


def test_the_harness_and_the_reference_backend_have_no_import_cycle():
    assert cycles(list(PACKAGES), acyclic_contract().get("ignore_imports", [])) == []


def test_the_cycle_finder_finds_each_cycle_once():
    edges = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": ["d"], "e": ["a"], "f": []}
    assert _strongly_connected(edges) == [["a", "b", "c"], ["d"]]


def planted_copy(tmp_path: Path, module: str, imported: str) -> Path:
    """A copy of both packages where `module` imports `imported` inside a function (the dodge
    that used to hide the plugin's cycle), with pyproject's acyclic contract as its config."""
    for name, source in PACKAGES.items():
        shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    if module:
        path = tmp_path / Path(*module.split(".")).with_suffix(".py")
        path.write_text(path.read_text() + f"\n\ndef _planted():\n    import {imported}\n")
    contract = acyclic_contract()
    config = {
        "importlinter": {"root_packages": list(PACKAGES)},
        "importlinter:contract:acyclic": {
            "name": contract["name"],
            "type": CONTRACT,
            "ancestors": contract["ancestors"],
        },
    }
    if contract.get("ignore_imports"):
        config["importlinter:contract:acyclic"]["ignore_imports"] = contract["ignore_imports"]
    lines = []
    for section, values in config.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            if isinstance(value, list):  # ini lists: one value a line
                value = "".join(f"\n    {v}" for v in value)
            lines.append(f"{key} = {value}")
    (tmp_path / ".importlinter").write_text("\n".join(lines) + "\n")
    return tmp_path


def check_copy(copy: Path) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
    """lint-imports with the contract, and `cycles`, run on the copy (not the installed
    package: a fresh process whose path finds the copy first)."""
    # the copy first; what was on the path stays after it (grimp and import-linter installed
    # apart, as on the GPU machine's `pip --target`), and so does their script folder
    path = [str(copy), str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    scripts = os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", "")))
    lint = shutil.which("lint-imports", path=scripts)
    assert lint is not None, f"no lint-imports beside {sys.executable} or on PATH"
    linted = subprocess.run(
        [lint, "--no-cache"], cwd=copy, env=env, capture_output=True, text=True, timeout=300
    )
    ignored = acyclic_contract().get("ignore_imports", [])
    script = (
        "import json, test_import_cycles as t, gemmconf; "
        f"assert gemmconf.__file__.startswith({str(copy)!r}), gemmconf.__file__; "
        f"print(json.dumps(t.cycles({list(PACKAGES)!r}, {ignored!r})))"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], cwd=copy, env=env, capture_output=True, text=True
    )
    assert found.returncode == 0, found.stderr
    return linted, json.loads(found.stdout)


@pytest.mark.parametrize(
    ("module", "imported", "cycle"),
    [
        (None, None, None),  # the copy as it is: kept
        # two features of the plugin, as the dodge hid it (items -> verdict -> items)
        ("gemmconf.plugin.verdict", "gemmconf.plugin.items", ["plugin.items", "plugin.verdict"]),
        # a leaf of the harness reaching up (runner -> outcome -> runner)
        ("gemmconf.outcome", "gemmconf.runner", ["outcome", "runner"]),
    ],
)
def test_a_cycle_planted_in_a_copy_breaks_the_contract_and_is_found(
    tmp_path, module, imported, cycle
):
    linted, found = check_copy(planted_copy(tmp_path, module, imported))
    output = linted.stdout + linted.stderr
    if cycle is None:
        assert linted.returncode == 0, output
        assert found == []
        return
    assert linted.returncode == 1, output
    assert "No cycles are allowed" in output and "BROKEN" in output
    assert len(found) == 1 and {f"gemmconf.{m}" for m in cycle} <= set(found[0])
