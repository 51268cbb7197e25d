"""A backend packaged as an outside author would: `gemmconf new-backend`, pip-installed, found
through its entry point, with the expectations file it ships. Its declared refusals are reported
as unsupported: an xfail where its file expects them, a failure of kind "unsupported" elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import suite_files
import warm_python

from gemmconf import cli

SUITE = """
suite: tiny
scenarios:
  - name: mm
    op: mm
    shape: {M: 32, N: 32, K: 32}
    axes:
      dtype: [fp32, fp16]
  - name: int8
    op: int_mm
    shape: {M: 32, N: 32, K: 32}
  - name: fp8
    op: scaled_mm
    scaling: tensorwise
    shape: {M: 32, N: 32, K: 32}
    requires: {features: [fp8]}  # the CPU's (torch 2.13) or the GPU's
"""

# No network, no build environment: the package builds with this environment's setuptools.
PIP_INSTALL = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
PIP_INSTALL += ["--no-index"]
PYTEST = [sys.executable, "-m", "pytest", "suites", "--backend", "toy", "-p", "no:xdist"]


def test_an_installed_backend_package_with_its_own_expectations(tmp_path, capsys):
    assert cli.main(["new-backend", "toy", "--dir", str(tmp_path)]) == 0
    assert "wrote" in capsys.readouterr().out
    package = tmp_path / "toy"
    # the author's known failure: int8 is refused (the template's supports) and expected so
    (package / "toy" / "expectations.yaml").write_text(
        "backend: toy\nexpectations:\n"
        "  - match: {op: int_mm}\n    reason: int8 comes next release\n"
    )
    site = tmp_path / "site"
    subprocess.run(
        [*PIP_INSTALL, "--target", str(site), str(package)],
        check=True,
        timeout=300,
    )
    work = tmp_path / "work"
    (work / "suites").mkdir(parents=True)
    (work / "suites" / "tiny.yaml").write_text(SUITE)
    (work / "pytest.ini").write_text("[pytest]\ngemmconf_suites = suites\n")
    env = {**os.environ, "PYTHONPATH": suite_files.python_path(site)}
    done = warm_python.run(
        [*PYTEST, "--no-isolate", "-rfx"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    document = json.loads((work / "reports" / "results.json").read_text())
    found = {r["id"]: r for r in document["records"]}
    assert {i: r["outcome"] for i, r in found.items()} == {
        "tiny/mm[fp32]": "passed",
        "tiny/mm[fp16]": "passed",
        "tiny/int8": "xfailed",
        "tiny/fp8": "failed",
    }
    assert found["tiny/int8"]["kind"] == found["tiny/fp8"]["kind"] == "unsupported"
    assert found["tiny/fp8"]["reason"] == "unsupported by toy: scaled_mm is not implemented"
    assert "FAILED suites/tiny.yaml::fp8[@toy] - unsupported by toy" in done.stdout
    # an entry of the shipped file that matches nothing in the suite stops the run, naming it
    (site / "toy" / "expectations.yaml").write_text(
        "backend: toy\nexpectations:\n  - {match: {op: bmm}, reason: stale}\n"
    )
    done = warm_python.run(
        PYTEST,
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"{site / 'toy' / 'expectations.yaml'}:3: match: pattern '{{op: bmm}}'" in done.stderr
