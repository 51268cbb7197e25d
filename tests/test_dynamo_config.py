"""A scenario's `dynamo_config` (the dynamo options its seed compiled under): checked at load
against an allow-list and dynamo's own option table, with the entry's file:line named; applied by
every torch.compile-based backend (inductor, reference, dynamo:NAME) around its compile and calls;
carried into the record, `gemmconf explain` and the standalone repro."""

from __future__ import annotations

import importlib
import json
import textwrap
from pathlib import Path

import pytest
from suite_files import load_one, write_suite

from gemmconf.backends import resolve
from gemmconf.backends.base import for_item
from gemmconf.backends.inductor import InductorBackend, make_inductor
from gemmconf.repro import repro_source
from gemmconf.runner import run_item
from gemmconf.scenario import SCENARIO_FIELDS, ScenarioError, load_suite
from gemmconf.scenario.dynamo_options import ALLOWED

pytest_plugins = ["pytester"]

CAPTURE = "capture_dynamic_output_shape_ops"

# the seed port's program (seed_aoti/zero_grid_with_unbacked_symbols), small: M - 2 rows picked
# by nonzero(), 3, 0 and 5 of them over one dynamic compile
SUITE = f"""
scenarios:
  - name: mm
    op: nonzero_mm
    dtype: fp16
    dynamo_config:
      {CAPTURE}: true
    compile: {{mode: dynamic, max_compiles: 1}}
    shapes: [{{M: 5, N: 8, K: 4}}, {{M: 2, N: 8, K: 4}}, {{M: 7, N: 8, K: 4}}]
    checks:
      filecheck:
        - artifact: python
          backends: [inductor]
          check: |
            CHECK: [[U:u[0-9]+]] = buf{{{{[0-9]+}}}}.size(0)
"""


def instance(tmp_path: Path, text: str = SUITE):
    return load_one(tmp_path, text)


def without_field(text: str = SUITE) -> str:
    return text.replace(f"    dynamo_config:\n      {CAPTURE}: true\n", "")


def test_the_field_is_kept_in_the_files_order(tmp_path):
    assert "dynamo_config" in SCENARIO_FIELDS
    text = SUITE.replace(
        f"{CAPTURE}: true", f"{CAPTURE}: true\n      capture_scalar_outputs: false"
    )
    got = instance(tmp_path, text)
    assert got.dynamo_config == ((CAPTURE, True), ("capture_scalar_outputs", False))
    assert got.inductor_config == ()


def test_the_allowed_options_are_options_of_this_torchs_dynamo():
    config = importlib.import_module("torch._dynamo.config")
    assert set(ALLOWED) <= set(config.get_config_copy())


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        (
            "capture_dynamic_output_shape_opss: true",
            "did you mean 'capture_dynamic_output_shape_ops'",
        ),
        ("recompile_limit: 1", "dynamo_config sets only capture_dynamic_output_shape_ops"),
        ("compiled_autograd: true", "not taken from a suite file"),
        ("debug_dir_root: /tmp", "not taken from a suite file"),
        (f"{CAPTURE}: [true]", "must be a scalar"),
        (f'{CAPTURE}: "yes"', "takes true or false, got 'yes'"),
        ("2: true", "option names are text"),
    ],
)
def test_a_bad_entry_names_its_line_and_the_field(tmp_path, entry, words):
    with pytest.raises(ScenarioError) as info:
        load_suite(write_suite(tmp_path, SUITE.replace(f"{CAPTURE}: true", entry)))
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 's.yaml'}:6: dynamo_config: "), message
    assert words in message and "(in s/mm)" in message


def test_a_field_that_is_no_mapping_is_an_error(tmp_path):
    text = SUITE.replace(f"dynamo_config:\n      {CAPTURE}: true", f"dynamo_config: [{CAPTURE}]")
    with pytest.raises(ScenarioError, match=r"s\.yaml:5: dynamo_config: expected a mapping"):
        load_suite(write_suite(tmp_path, text))


@pytest.mark.parametrize("spec", ["inductor", "inductor-max-autotune", "reference", "dynamo:eager"])
def test_every_torch_compile_backend_takes_it_and_eager_has_no_use_for_it(tmp_path, spec):
    item = instance(tmp_path)
    backend = resolve(spec)
    scoped = for_item(backend, item)
    assert scoped is not backend and scoped.dynamo_config == {CAPTURE: True}
    assert scoped.name == backend.name and getattr(backend, "dynamo_config", {}) == {}
    assert for_item(backend, instance(tmp_path, without_field())) is backend
    eager = resolve("eager")
    assert for_item(eager, item) is eager


def test_the_port_needs_it_to_keep_one_compile_and_an_unbacked_m(tmp_path):
    """The program passes on inductor under the field, in one compile, with an unbacked M in
    inductor's code; a backend that drops the field (dynamo breaks the graph at nonzero(), the
    GEMM's M is backed and 0 specialises) fails the compile budget and the code check."""
    config = importlib.import_module("torch._dynamo.config")
    item = instance(tmp_path)
    outcome = run_item(item, make_inductor(), seed=0, device="cpu", target=None)
    assert outcome.passed, outcome.problems
    assert outcome.metrics["compiles"] == 1
    assert getattr(config, CAPTURE) is False  # scoped to the item's compile and calls

    class DropsTheField(InductorBackend):
        def for_instance(self, instance):
            return self

    dropped = run_item(item, DropsTheField(), seed=0, device="cpu", target=None)
    assert not dropped.passed
    kinds = {type(problem).__name__ for problem in dropped.problems}
    assert {"Recompiled", "CodeCheckFailed"} <= kinds, dropped.problems
    assert dropped.metrics["compiles"] > 1


def test_a_torch_compile_backend_by_name_runs_under_it(tmp_path):
    outcome = run_item(
        instance(tmp_path), resolve("dynamo:eager"), seed=0, device="cpu", target=None
    )
    assert outcome.passed, outcome.problems
    assert outcome.metrics["compiles"] == 1


def test_the_repro_sets_it_for_torch_compile_backends(tmp_path):
    item = instance(tmp_path)
    source = repro_source(item, "dynamo:eager")
    assert f"DYNAMO_CONFIG = {{{CAPTURE!r}: True}}" in source
    assert "set_dynamo_config()" in source and "COMPILED_BY_TORCH = True" in source
    assert "DYNAMO_CONFIG = {}" in repro_source(instance(tmp_path, without_field()), "eager")


def test_explain_shows_it(tmp_path, capsys):
    from gemmconf.cli import main

    write_suite(tmp_path, SUITE)
    assert main(["explain", "s/mm", "--suites", str(tmp_path), "--backend", "eager"]) == 0
    assert f"dynamo_config (torch.compile-based backends) {{{CAPTURE!r}: True}}" in (
        capsys.readouterr().out
    )


def test_the_record_carries_the_field(make_suite):
    pytester = make_suite(textwrap.dedent(SUITE).replace("scenarios:", "suite: tiny\nscenarios:"))
    result = pytester.runpytest("--backend", "eager", "-p", "no:xdist", "--no-isolate")
    result.assert_outcomes(passed=1)
    (record,) = json.loads((pytester.path / "reports" / "results.json").read_text())["records"]
    assert record["dynamo_config"] == {CAPTURE: True}
    assert "inductor_config" not in record
