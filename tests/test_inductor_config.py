"""A scenario's `inductor_config` (the config patch its seed test compiled under): checked at load
with the entry's file:line named, applied by the inductor backends around their compile and
calls (and only by them), carried into the record and the standalone repro."""

from __future__ import annotations

import importlib
import json
import os
import textwrap
from pathlib import Path

import pytest
import torch
from suite_files import load_one, write_suite

from gemmconf.backends import resolve
from gemmconf.backends.base import for_item
from gemmconf.backends.inductor import make_inductor, make_inductor_max_autotune
from gemmconf.repro import repro_source
from gemmconf.runner import run_item
from gemmconf.scenario import SCENARIO_FIELDS, ScenarioError, load_suite
from gemmconf.scenario.inductor_options import refused

# A bool option inductor reads while it lowers a GEMM, and leaves alone on a CPU
pytest_plugins = ["pytester"]

FORCED = "test_configs.force_extern_kernel_in_multi_template"

SUITE = f"""
scenarios:
  - name: mm
    op: mm
    shape: {{M: 8, N: 8, K: 8}}
    inductor_config:
      {FORCED}: true
      cutlass.cutlass_max_profiling_configs: 1
"""


def instance(tmp_path: Path, text: str = SUITE):
    return load_one(tmp_path, text)


def test_the_field_is_kept_in_the_files_order(tmp_path):
    assert "inductor_config" in SCENARIO_FIELDS
    got = instance(tmp_path)
    assert got.inductor_config == ((FORCED, True), ("cutlass.cutlass_max_profiling_configs", 1))


def test_an_integer_for_a_float_option_is_kept_as_a_float(tmp_path):
    config = importlib.import_module("torch._inductor.config")
    name = next(
        n for n in config.get_config_copy() if config.get_type(n) is float and not refused(n)
    )
    text = SUITE.replace(f"{FORCED}: true", f"{name}: 2")
    assert dict(instance(tmp_path, text).inductor_config)[name] == 2.0
    assert type(dict(instance(tmp_path, text).inductor_config)[name]) is float


@pytest.mark.parametrize(
    ("entry", "line", "words"),
    [
        ("triton.enable_persistant_tma_matmul: true", 7, "did you mean"),
        ("max_autotune: [true]", 7, "must be a scalar"),
        ('max_autotune: "1"', 7, "takes true or false, got '1'"),
        ("cutlass.cutlass_max_profiling_swizzle_options: 1", 7, "not a scalar"),
        ("cpp.cxx: /bin/sh", 7, "not taken from a suite file"),
        ("fx_graph_remote_cache: true", 7, "not taken from a suite file"),
        ("trace.enabled: true", 7, "not taken from a suite file"),
        ("1: true", 7, "option names are text"),
    ],
)
def test_a_bad_entry_names_its_line_and_the_field(tmp_path, entry, line, words):
    text = SUITE.replace("cutlass.cutlass_max_profiling_configs: 1", entry)
    with pytest.raises(ScenarioError) as info:
        load_suite(write_suite(tmp_path, text))
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 's.yaml'}:{line}: inductor_config: "), message
    assert words in message and "(in s/mm)" in message


def test_a_field_that_is_no_mapping_is_an_error(tmp_path):
    text = SUITE.split("    inductor_config:")[0] + "    inductor_config: [max_autotune]\n"
    with pytest.raises(ScenarioError, match=r"s\.yaml:5: inductor_config: expected a mapping"):
        load_suite(write_suite(tmp_path, text))


def test_the_scenario_config_wins_over_the_labels_and_only_inductor_takes_it(tmp_path):
    item = instance(tmp_path, SUITE.replace(f"{FORCED}: true", "max_autotune_gemm_backends: ATEN"))
    label = make_inductor_max_autotune("TRITON")
    assert label.inductor_patches()["max_autotune_gemm_backends"] == "TRITON"
    scoped = for_item(label, item)
    assert scoped.inductor_patches()["max_autotune_gemm_backends"] == "ATEN"
    assert scoped.inductor_patches()["cutlass.cutlass_max_profiling_configs"] == 1
    assert scoped.name == label.name and label.inductor_patches()["max_autotune"] is True
    eager = resolve("eager")
    assert for_item(eager, item) is eager  # other backends ignore it
    plain = make_inductor()
    no_config = instance(tmp_path, SUITE.split("    inductor_config:")[0])
    assert for_item(plain, no_config) is plain


def test_inductor_compiles_and_calls_under_the_scenario_config(tmp_path, monkeypatch):
    compile_fx_module = importlib.import_module("torch._inductor.compile_fx")
    config = importlib.import_module("torch._inductor.config")
    real = compile_fx_module.compile_fx
    seen: list[bool] = []

    def watching(*args, **kwargs):
        seen.append(config.test_configs.force_extern_kernel_in_multi_template)
        return real(*args, **kwargs)

    monkeypatch.setattr(compile_fx_module, "compile_fx", watching)
    item = instance(tmp_path)
    outcome = run_item(item, make_inductor(), seed=0, device="cpu", target=None)
    assert outcome.passed, outcome.problems
    assert seen and all(seen)  # every compile ran under the seed's option
    assert config.test_configs.force_extern_kernel_in_multi_template is False  # scoped

    seen.clear()  # the same backend on a scenario without the field: inductor's default
    plain = instance(tmp_path, SUITE.split("    inductor_config:")[0])
    assert run_item(plain, make_inductor(), seed=0, device="cpu", target=None).passed
    assert seen and not any(seen)


def test_the_repro_compiles_with_the_scenario_config(tmp_path):
    item = instance(tmp_path)
    source = repro_source(item, "inductor")
    assert f"options={{{FORCED!r}: True, 'cutlass.cutlass_max_profiling_configs': 1}}" in source
    assert "the scenario's inductor_config" in source
    torch.compile(lambda x: x, options=dict(item.inductor_config))  # torch takes the options
    assert FORCED not in repro_source(item, "eager")


def test_the_record_carries_the_field(make_suite):
    pytester = make_suite(textwrap.dedent(SUITE).replace("scenarios:", "suite: tiny\nscenarios:"))
    result = pytester.runpytest("--backend", "eager", "-p", "no:xdist", "--no-isolate")
    result.assert_outcomes(passed=1)
    (record,) = json.loads((pytester.path / "reports" / "results.json").read_text())["records"]
    assert record["inductor_config"] == {FORCED: True, "cutlass.cutlass_max_profiling_configs": 1}


def test_a_config_that_turns_autotuning_on_gets_autotunings_compile_time(tmp_path):
    from gemmconf.backends.inductor import AUTOTUNE_COMPILE_S, CUTLASS_COMPILE_S

    plain = make_inductor()
    autotuned = instance(tmp_path, SUITE.replace(f"{FORCED}: true", "max_autotune: true"))
    assert plain.compile_timeout_s == 0.0
    assert for_item(plain, autotuned).compile_timeout_s == AUTOTUNE_COMPILE_S
    assert for_item(plain, instance(tmp_path)).compile_timeout_s == 0.0  # no max-autotune
    cutlass = make_inductor_max_autotune("CUTLASS")
    assert for_item(cutlass, instance(tmp_path)).compile_timeout_s == CUTLASS_COMPILE_S


def test_the_option_table_is_read_from_the_cache_without_importing_inductor(tmp_path):
    """The table of inductor's options is cached (JSON) by the first process that imports
    inductor; a later process that loads a suite using the field reads it and imports nothing of
    inductor (that import cost every suite-loading pytest process seconds), and reads the same
    table as inductor's own."""
    import subprocess
    import sys

    probe = (
        "import sys, json\n"
        "from gemmconf.scenario import inductor_options as o\n"
        "table = o._table()\n"
        "print(json.dumps({'inductor': 'torch._inductor' in sys.modules, 'names': len(table),"
        " 'tma': str(table['triton.enable_persistent_tma_matmul'].scalars)}))\n"
    )
    env = {**os.environ, "GEMMCONF_CACHE": str(tmp_path)}
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
            ).stdout.splitlines()[-1]
        )
        for _ in range(2)
    ]
    assert runs[0]["inductor"] and not runs[1]["inductor"], runs  # made, then read
    assert runs[0]["names"] == runs[1]["names"] > 100
    assert runs[0]["tma"] == runs[1]["tma"] == str((bool,))
    assert len(list((tmp_path / "inductor-options").glob("*.json"))) == 1


def test_a_damaged_cache_is_made_again(tmp_path, monkeypatch):
    from gemmconf.scenario import inductor_options

    monkeypatch.setenv("GEMMCONF_CACHE", str(tmp_path))
    inductor_options._table.cache_clear()
    try:
        made = inductor_options._table()
        (cached,) = (tmp_path / "inductor-options").glob("*.json")
        cached.write_text('{"x": [["no-such-type"], "?"]}')
        inductor_options._table.cache_clear()
        assert inductor_options._table() == made
        assert json.loads(cached.read_text()).keys() == made.keys()
    finally:
        inductor_options._table.cache_clear()
