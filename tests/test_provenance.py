"""A results file names the code that ran: gemmconf's version and commit, and the packages (with
versions) each backend's code lives in (gemmconf.provenance)."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gemmconf import provenance
from gemmconf.backends import resolve
from gemmconf.report import merge

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_gemmconf_from_this_checkout_names_its_commit():
    import gemmconf

    if Path(gemmconf.__file__).resolve().parent != ROOT / "harness":
        pytest.skip("gemmconf is an installed copy here, not this checkout's files")
    source = provenance.gemmconf_source()
    assert source["version"] == importlib.metadata.version("gemmconf")
    head = git("rev-parse", "--short=12", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    assert source["commit"] == (f"{head}+dirty" if dirty else head)


def test_a_copy_git_does_not_track_has_no_commit(tmp_path):
    # an installed copy inside a checkout (a .venv in the repository) is not the checkout's code
    inside = ROOT / ".venv-provenance-test"
    inside.mkdir(exist_ok=True)
    try:
        copy = inside / "__init__.py"
        shutil.copy(ROOT / "harness" / "__init__.py", copy)
        assert provenance._commit_of(copy) is None
        assert provenance._commit_of(tmp_path / "__init__.py") is None  # no checkout at all
    finally:
        shutil.rmtree(inside)
    assert provenance._commit_of(ROOT / "harness" / "__init__.py")


def test_a_torch_compile_backend_names_the_package_of_its_registered_function():
    torch_version = importlib.metadata.version("torch")
    packages = provenance.backend_packages(resolve("dynamo:aot_eager"))
    assert packages["torch"] == torch_version  # torch._dynamo.backends registers aot_eager
    assert packages["gemmconf"] == importlib.metadata.version("gemmconf")  # the adapter
    assert "torch" not in provenance.backend_packages(resolve("reference"))


def test_the_run_and_its_merge_keep_both(suite):
    result = suite.runpytest("--backend", "eager,dynamo:aot_eager", "-p", "no:xdist", "-k", "fp32")
    assert result.ret == pytest.ExitCode.OK
    document = json.loads((suite.path / "reports" / "results.json").read_text())
    assert document["gemmconf"]["version"] == importlib.metadata.version("gemmconf")
    assert set(document["backend_packages"]) == {"eager", "dynamo:aot_eager"}
    assert "torch" in document["backend_packages"]["dynamo:aot_eager"]
    merged = merge.merge([("a.json", document), ("b.json", {**document, "records": []})])
    assert merged["gemmconf"] == document["gemmconf"]
    assert merged["backend_packages"] == document["backend_packages"]
    other = {**document, "gemmconf": {"version": "0.0.1"}, "records": []}
    merged = merge.merge([("a.json", document), ("b.json", other)])
    assert "gemmconf" not in merged  # files of two gemmconf versions: each is in merged_from
    assert [f["gemmconf"] for f in merged["merged_from"]] == [
        document["gemmconf"],
        other["gemmconf"],
    ]


def test_the_code_hash_tells_two_trees_apart_and_two_installs_of_one_tree_not(tmp_path):
    # `gemmconf report ab` checks with it that alternating runs ran two trees (installed copies
    # have no commit)
    copies = []
    for name in ("one", "two"):
        copy = tmp_path / name
        shutil.copytree(ROOT / "backend", copy / "backend")
        copies.append({"gemmconf_reference": copy / "backend"})
    (copies[1]["gemmconf_reference"] / "__pycache__" / "stale.cpython-312.pyc").parent.mkdir(
        exist_ok=True
    )
    (copies[1]["gemmconf_reference"] / "__pycache__" / "stale.cpython-312.pyc").write_bytes(b"x")
    assert provenance.hash_code(copies[0]) == provenance.hash_code(copies[1])
    kernel = next(iter(sorted(copies[1]["gemmconf_reference"].rglob("*.py"))))
    kernel.write_text(kernel.read_text() + "\n# one line more\n")
    assert provenance.hash_code(copies[0]) != provenance.hash_code(copies[1])
    assert provenance.gemmconf_source()["code"] == provenance.code_hash()
    assert len(provenance.code_hash() or "") == 12


def test_an_adapter_file_names_the_packages_it_hands_the_work_to(tmp_path, monkeypatch):
    """A lightning-thunder trial (2026-11-30): `my_thunder:backend`, a file beside the run,
    recorded gemmconf alone; the package it wraps is the one a report must name."""
    (tmp_path / "my_adapter.py").write_text(
        "import yaml\n"
        "from gemmconf.backends.dynamo import dynamo_backend\n\n"
        "def compile_with_yaml(gm, example_inputs):\n"
        "    return gm.forward\n\n"
        "backend = dynamo_backend(compile_with_yaml, name='adapted')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    packages = provenance.backend_packages(resolve("my_adapter:backend"))
    assert packages["PyYAML"] == importlib.metadata.version("PyYAML")  # what the file imports
    assert packages["gemmconf"] == importlib.metadata.version("gemmconf")
    assert "my_adapter" not in packages


def test_an_adapter_that_imports_its_library_at_the_first_call_names_it(tmp_path, monkeypatch):
    """A FlagGems trial (2026-12-02): an adapter that imported flag_gems inside its compile
    step recorded `{"flaggems": {}}`. The adapter's source is read (not run) for its imports,
    a function's body included."""
    (tmp_path / "lazy_adapter.py").write_text(
        "from gemmconf.backends.dynamo import dynamo_backend\n\n"
        "def compile_lazily(gm, example_inputs):\n"
        "    import yaml  # the library, loaded only when there is work\n\n"
        "    return gm.forward\n\n"
        "backend = dynamo_backend(compile_lazily, name='lazy')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    packages = provenance.backend_packages(resolve("lazy_adapter:backend"))
    assert packages["PyYAML"] == importlib.metadata.version("PyYAML")
    assert "lazy_adapter" not in packages
