"""Where a run's code came from, for the results file: gemmconf's own version (its commit,
when it runs from a git checkout, and a hash of its code, which an installed copy has too, so
that `gemmconf report ab` can tell two trees' runs apart), and the distribution and version of
each package a backend's code lives in (`openvino 2026.4.1` for `dynamo:openvino`, `torch
2.13.0` for `inductor`).

A failure report names versions so that a reader can reproduce it and an upstream issue can cite
them; a results file that says only "dynamo:openvino" does not say which OpenVINO.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import importlib.util
import subprocess
import sys
import threading
import types
from pathlib import Path
from typing import Any

GIT_TIMEOUT_S = 5.0


def gemmconf_source() -> dict[str, str]:
    """{"version": ..., "commit": ..., "code": ...}: the installed distribution's version; where
    the package is a file git tracks in a checkout, that checkout's commit (`+dirty` when tracked
    files differ from it); and `code_hash()`. An installed copy has no commit: a checkout around
    the virtualenv it sits in is not where its code came from."""
    import gemmconf

    source: dict[str, str] = {}
    version = _version("gemmconf")
    if version:
        source["version"] = version
    commit = _commit_of(Path(gemmconf.__file__))
    if commit:
        source["commit"] = commit
    code = code_hash()
    if code:
        source["code"] = code
    return source


CODE_PACKAGES = ("gemmconf", "gemmconf_reference")  # the harness and the reference backend


@functools.cache
def code_hash() -> str | None:
    """`hash_code` of the installed harness and reference backend (None: neither is found)."""
    roots = {}
    for package in CODE_PACKAGES:
        spec = importlib.util.find_spec(package)  # located, not imported
        if spec is not None and spec.submodule_search_locations:
            roots[package] = Path(next(iter(spec.submodule_search_locations)))
    return hash_code(roots) if roots else None


def hash_code(roots: dict[str, Path]) -> str:
    """12 hex digits of SHA-256 over the Python files under each package's folder (its name,
    the file's relative path and bytes, in path order): equal for two installs of one tree,
    different for trees whose code differs. The suite's files have their own hash
    (`suite_version`)."""
    digest = hashlib.sha256()
    for package, root in sorted(roots.items()):
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{package}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _commit_of(path: Path) -> str | None:
    folder = str(path.parent)

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", folder, *args],
                capture_output=True,
                text=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    if git("ls-files", "--error-unmatch", path.name) is None:
        return None  # not a checkout's file: an installed copy
    commit = git("rev-parse", "--short=12", "HEAD")
    if commit is None:
        return None
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return f"{commit}+dirty" if dirty else commit


def backend_packages(backend: Any) -> dict[str, str]:
    """{distribution: version} of the packages that define `backend`: its class's (or
    function's) module, and for a torch.compile backend named by its registered name, the
    module of the function registered under that name. Where one of those modules belongs to
    no distribution (an adapter file beside the run, `my_thunder.py`), the packages it imports
    (`lightning-thunder`): the code the adapter hands the work to."""
    modules = {getattr(backend, "__module__", None), type(backend).__module__}
    compiler = getattr(backend, "compiler", None)
    if isinstance(compiler, str):
        modules.add(_registered_module(compiler))
    elif compiler is not None:
        modules.add(getattr(compiler, "__module__", None))
    modules = {m for m in modules if m and m != "builtins"}
    for module in sorted(modules):
        if not _distributions().get(module.partition(".")[0]):
            modules |= _imported_by(module) | _imports_in_source(module)
    found: dict[str, str] = {}
    for module in sorted(modules):
        for dist in _distributions().get(module.partition(".")[0], ()):
            version = _version(dist)
            if version:
                found[dist] = version
    return dict(sorted(found.items()))


def _imported_by(module: str) -> set[str]:
    """The top-level packages whose modules, classes or functions `module`'s namespace holds
    (what a loaded adapter module imported)."""
    loaded = sys.modules.get(module)
    names: set[str] = set()
    for value in vars(loaded).values() if loaded is not None else ():
        name = (
            value.__name__
            if isinstance(value, types.ModuleType)
            else getattr(value, "__module__", None)
        )
        if isinstance(name, str) and name.partition(".")[0] != module.partition(".")[0]:
            names.add(name.partition(".")[0])
    return names


def _imports_in_source(module: str) -> set[str]:
    """The top-level packages `module`'s source file imports anywhere, a function's body
    included (read, never run): an adapter that imports its library at its first call named
    none (a FlagGems trial, 2026-12-02: `backend_packages: {"flaggems": {}}`). Relative imports
    are the adapter's own."""
    loaded = sys.modules.get(module)
    path = getattr(loaded, "__file__", None)
    if not isinstance(path, str) or not path.endswith(".py"):
        return set()
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.partition(".")[0])
    return names - {module.partition(".")[0]}


def _registered_module(name: str) -> str | None:
    if "torch" not in sys.modules:
        return None
    try:
        from torch._dynamo import lookup_backend

        return getattr(lookup_backend(name), "__module__", None)
    except Exception:  # an unknown name is availability's to report
        return None


def read_distributions_soon() -> None:
    """Start reading which distributions provide which top-level modules, in a thread: it reads
    every installed distribution's file list (2.8 s of a run's start on the GPU machines' Python,
    2026-11-30), which a run needs only when it names its backends' packages in its results."""
    threading.Thread(target=_distributions, name="gemmconf-distributions", daemon=True).start()


_DISTRIBUTIONS_READ = threading.Lock()


def _distributions() -> dict[str, list[str]]:
    with _DISTRIBUTIONS_READ:  # a caller waits for a read already under way
        return _read_distributions()


@functools.cache
def _read_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
