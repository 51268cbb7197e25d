"""How the package plugs into gemmconf: the entry point, the packaged expectations file, and the
import contract that keeps it to what an outside backend author has."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import gemmconf_cutlass
import pytest
from gemmconf_cutlass.backend import CutlassBackend

import gemmconf
from gemmconf import bundled_suites, expectations
from gemmconf.backends import BUILTINS, UnknownBackendError, known_backends, resolve
from gemmconf.cli import main as gemmconf_main

GEMMCONF_PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"
# What the package may import from gemmconf (the contract's forbidden list is the rest).
ALLOWED = ("gemmconf.backends.base", "gemmconf.backends.dynamo", "gemmconf.backends.cache")
ALLOWED_PACKAGES = ("gemmconf.api", "gemmconf.gemm")
NAMESPACES = ("gemmconf", "gemmconf.backends")  # package __init__s a contract cannot single out


def test_backend_cutlass_resolves_through_the_installed_entry_point() -> None:
    assert "cutlass" not in BUILTINS
    (info,) = [b for b in known_backends() if b.name == "cutlass"]
    assert info.origin == "entry point (gemmconf-cutlass)"
    backend = resolve("cutlass")
    assert isinstance(backend, CutlassBackend) and backend.name == "cutlass"
    assert backend.compile_timeout_s > 0
    with pytest.raises(UnknownBackendError, match=r"backend 'cutlass' takes no option"):
        resolve("cutlass:fast")


def test_gemmconf_backends_lists_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert gemmconf_main(["backends"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("cutlass "))
    assert "entry point (gemmconf-cutlass)" in line


def test_the_expectations_file_is_found_through_the_backend_object() -> None:
    [(packaged, declared_by)] = expectations.packaged_files(resolve("cutlass"), "cutlass")
    assert packaged == Path(gemmconf_cutlass.__file__).with_name("expectations.yaml")
    assert "expectations' attribute" in declared_by
    assert packaged.is_file()
    # the suite has no file of its own for cutlass, so a run uses the packaged one
    assert not expectations.path_for(bundled_suites() / "expectations", "cutlass").exists()


@pytest.mark.skipif(not GEMMCONF_PYPROJECT.is_file(), reason="needs gemmconf's checkout")
def test_a_run_applies_the_packaged_expectations(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "suites/int8/int_mm.yaml", "--backend", "cutlass"),
            "--allow-unavailable",  # no GPU here: its items skip; the expectations still apply
            *("-k", "cpu_only_layouts", "-p", "no:xdist", "-p", "no:cacheprovider", "-q"),
            *("--results", str(results)),
        ],
        cwd=GEMMCONF_PYPROJECT.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    records = json.loads(results.read_text())["records"]
    assert records and all(r["outcome"] == "skipped" for r in records)
    assert all(
        r["reason"].startswith("expected skip: the scenario runs on the CPU") for r in records
    )
    assert all("gemmconf_cutlass/expectations.yaml:" in r["reason"] for r in records)


@pytest.mark.skipif(not GEMMCONF_PYPROJECT.is_file(), reason="needs gemmconf's checkout")
def test_the_import_contract_forbids_every_other_gemmconf_module() -> None:
    config = tomllib.loads(GEMMCONF_PYPROJECT.read_text())["tool"]["importlinter"]
    assert "gemmconf_cutlass" in config["root_packages"]
    contracts = config["contracts"]  # some have no source_modules (acyclic, independence)
    (contract,) = [c for c in contracts if c.get("source_modules") == ["gemmconf_cutlass"]]
    forbidden = contract["forbidden_modules"]
    assert {"gemmconf_reference", "pytest"} <= set(forbidden)
    modules = [m.name for m in pkgutil.walk_packages(gemmconf.__path__, "gemmconf.")]
    uncovered = [
        name
        for name in modules
        if name not in (*ALLOWED, *NAMESPACES)
        and not name.startswith(ALLOWED_PACKAGES)
        and not any(name == f or name.startswith(f + ".") for f in forbidden)
    ]
    assert not uncovered, f"add to the gemmconf_cutlass contract's forbidden_modules: {uncovered}"
    assert not [f for f in forbidden if f.startswith((*ALLOWED, *ALLOWED_PACKAGES))]
