"""gemmconf.api, the interface for tools outside a pytest run: instances by pattern, an item's
program and inputs, and one item judged by the harness (never by the backend it runs)."""

from __future__ import annotations

import pytest
import torch
from planted_backends import bias_broadcast_dropped

from gemmconf import api
from gemmconf.backends.eager import EagerBackend


def test_instances_by_pattern_from_the_installed_suite() -> None:
    found = api.instances(["first/mm[bf16-*-nt]", "first/mm_zero_m[*]"])
    ids = [i.id for i in found]
    assert "first/mm[bf16-127x65x33-nt]" in ids and "first/mm_zero_m[bf16]" in ids
    assert all(i.id.startswith(("first/mm[bf16-", "first/mm_zero_m[")) for i in found)
    assert api.instances(["no-such/*"]) == []


def test_a_bad_suite_file_is_an_error_naming_its_line(tmp_path) -> None:
    (tmp_path / "bad.yaml").write_text("scenarios:\n  - name: x\n    op: mmm\n")
    with pytest.raises(api.ScenarioError, match=r"bad.yaml:3: op: "):
        api.instances(suites=tmp_path)


def test_program_builds_the_items_function_and_inputs() -> None:
    (instance,) = api.instances(["first/mm[bf16-127x65x33-nt]"])
    item = api.program(instance)
    assert len(item.arguments) == len(instance.shape_sets) == 1
    a, b = item.arguments[0]
    # "nt": b is stored (N, K), as the item gets it; the program transposes it
    assert (a.shape, b.shape, a.dtype) == ((127, 33), (65, 33), torch.bfloat16)
    with item.numerics():
        assert item.function(a, b).shape == (127, 65)
    assert api.operand_elements(instance) == 127 * 33 + 33 * 65


def test_program_marks_dynamic_dims_as_the_item_does() -> None:
    (instance,) = api.instances(["dynamic/mark_dynamic[mm_m-fp16]"])
    item = api.program(instance)
    assert len(item.arguments) >= 3 and item.dynamic is not True
    assert 0 in getattr(item.arguments[0][0], "_dynamo_dynamic_indices", set())


def test_run_gives_the_harness_verdict() -> None:
    (instance,) = api.instances(["first/mm[bf16-127x65x33-nt]"])
    verdict = api.run(instance, EagerBackend())
    assert (verdict.id, verdict.passed, verdict.summary, verdict.problems) == (
        instance.id,
        True,
        "",
        (),
    )
    assert verdict.metrics["err_ratio"] == pytest.approx(1.0) and verdict.metrics["recompiles"] == 0
    (addmm,) = api.instances(["dense_bias/addmm[bias_N-a1_b1-fp32]"])
    verdict = api.run(addmm, bias_broadcast_dropped)
    assert not verdict.passed and verdict.summary == verdict.problems[0].splitlines()[0]
    assert verdict.problems[-1].startswith("Reproduce: gemmconf explain 'dense_bias/addmm")
