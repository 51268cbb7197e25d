"""A backward scenario's backward under compiled autograd (`compiled_autograd:`): the field is
validated at load, reaches the run and the repro, and a backend's compiled-autograd path is
what the compiled-autograd ports judge: a wrong gradient there, or a backend that keeps its
backward out of compiled autograd, fails them while passing the aot_autograd path."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import compiled_autograd_backends
import pytest

from gemmconf import kinds
from gemmconf.backends import resolve
from gemmconf.backends.eager import EagerBackend
from gemmconf.checks.compiled_autograd import NOT_THROUGH_DYNAMO_NOTE, AutogradCounts
from gemmconf.repro import repro_source
from gemmconf.runner import run_item
from gemmconf.scenario import CompiledAutograd, ScenarioError, load_suite

TESTS = Path(__file__).resolve().parent
SUITES = TESTS.parent / "suites"
INSTANCES = {i.id: i for i in load_suite(SUITES / "backward/backward.yaml")}
LINEAR_RELU = "backward/compiled_autograd_linear[linear_relu]"
DYNAMIC = "backward/compiled_autograd_dynamic[batches_10_20_30]"


def run(ident: str, backend, *, compiled_autograd: bool = True):
    instance = INSTANCES[ident]
    if not compiled_autograd:  # the same item with its backward through aot_autograd
        instance = dataclasses.replace(instance, compiled_autograd=None)
    return run_item(instance, backend, seed=0, device="cpu", target=None)


def test_the_compiled_autograd_ports_run_their_backward_under_it_with_the_seeds_counts():
    ports = {i: s for i, s in INSTANCES.items() if s.name.startswith("compiled_autograd_")}
    assert len(ports) == 8
    counted = CompiledAutograd(captures=1, compiles=1)
    for ident, instance in ports.items():
        large = instance.name == "compiled_autograd_large_linear"  # the seed counts nothing
        assert instance.compiled_autograd == (CompiledAutograd() if large else counted), ident
    assert all(i.compiled_autograd is None for i in INSTANCES.values() if i.id not in ports)


def _load(tmp_path: Path, fields: str):
    path = tmp_path / "ca.yaml"
    path.write_text(
        textwrap.dedent(
            """
            scenarios:
              - name: ca
                op: linear
                shape: {M: 4, N: 4, K: 4}
            """
        ).lstrip()
        + textwrap.indent(textwrap.dedent(fields).strip() + "\n", "    ")
    )
    return load_suite(path)


@pytest.mark.parametrize(
    ("fields", "line", "message"),
    [
        ("compiled_autograd: true", 5, "needs backward: true"),
        ("backward: true\ncompiled_autograd: {captures: -1}", 6, "captures must be an integer"),
        ("backward: true\ncompiled_autograd: {compiles: 1.5}", 6, "compiles must be an integer"),
        ("backward: true\ncompiled_autograd: {capture: 1}", 6, "did you mean 'captures'"),
        ("backward: true\ncompiled_autograd: yes please", 6, "expected true, false or a mapping"),
    ],
)
def test_a_bad_compiled_autograd_field_names_file_line_and_field(tmp_path, fields, line, message):
    with pytest.raises(ScenarioError) as caught:
        _load(tmp_path, fields)
    text = str(caught.value)
    assert f"ca.yaml:{line}" in text and "compiled_autograd" in text and message in text


def test_compiled_autograd_true_checks_no_counts_and_false_is_off(tmp_path):
    (on,) = _load(tmp_path, "backward: true\ncompiled_autograd: true")
    (off,) = _load(tmp_path, "backward: true\ncompiled_autograd: false")
    assert on.compiled_autograd == CompiledAutograd(captures=None, compiles=None)
    assert off.compiled_autograd is None


@pytest.mark.parametrize("ident", [LINEAR_RELU, DYNAMIC])
def test_a_wrong_gradient_in_the_captured_backward_fails_where_aot_autograd_passes(ident):
    backend = compiled_autograd_backends.wrong_captured_backward
    outcome = run(ident, backend)
    assert outcome.kind == kinds.WRONG_VALUES, outcome.problems
    assert "the gradient of" in outcome.problems[0].describe()
    assert outcome.metrics["autograd_captures"] == 1
    assert run(ident, backend, compiled_autograd=False).passed


def test_a_backend_that_keeps_its_backward_out_of_compiled_autograd_fails_its_counts():
    backend = compiled_autograd_backends.ignores_compiled_autograd
    outcome = run(LINEAR_RELU, backend)
    (problem,) = outcome.problems  # the gradients are right: aot_autograd's
    assert isinstance(problem, AutogradCounts) and problem.kind == kinds.CODE_CHECK
    assert problem.describe().startswith(
        "Compiled autograd counts: 0 backward graph(s) captured (expected 1), "
        "0 compiled for the backend (expected 1): the backward ran outside compiled autograd"
    )
    assert run(LINEAR_RELU, backend, compiled_autograd=False).passed


def test_a_torch_compile_backend_has_its_backward_captured_once_over_the_items_calls():
    for ident in (LINEAR_RELU, DYNAMIC):
        outcome = run(ident, resolve("dynamo:aot_eager"))
        assert outcome.passed, outcome.problems
        assert outcome.metrics["autograd_captures"] == 1
        assert outcome.metrics["autograd_compiles"] == 1
        # the forward's graph, and the captured backward graph counted apart from the budget
        assert outcome.metrics["compiles"] == 2


def test_eager_is_not_a_torch_compile_backend_and_says_so():
    outcome = run(LINEAR_RELU, EagerBackend())
    assert outcome.passed
    assert NOT_THROUGH_DYNAMO_NOTE in outcome.notes
    assert outcome.metrics["autograd_captures"] == 0


def test_the_repro_runs_the_backward_under_compiled_autograd_and_checks_its_counts(tmp_path):
    spec = "compiled_autograd_backends:ignores_compiled_autograd"
    source = repro_source(INSTANCES[LINEAR_RELU], spec)
    assert "COMPILED_AUTOGRAD = True" in source and "AUTOGRAD_CAPTURES = 1" in source
    path = tmp_path / "repro.py"
    path.write_text(source)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
    done = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "compiled autograd counts: 0 backward graph(s) captured (expected 1)" in done.stdout
