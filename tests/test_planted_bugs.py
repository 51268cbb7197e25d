"""Every planted-bug backend fails the items that expose its bug, and only plausible ones.

The run goes through `runner.run_item`, the same code the plugin calls, over the repository's
foundation suite (suites/dense/first.yaml).
"""

from __future__ import annotations

from pathlib import Path

import planted_backends
import pytest
import torch

from gemmconf.outcome import render
from gemmconf.runner import run_item
from gemmconf.scenario import load_suite

FIRST = Path(__file__).resolve().parents[1] / "suites" / "dense" / "first.yaml"


@pytest.fixture(scope="module")
def instances():
    return load_suite(FIRST)


def failing(backend, instances) -> set[str]:
    return {
        i.id
        for i in instances
        if not run_item(i, backend, seed=0, device="cpu", target=None, repro="-").passed
    }


# backend -> (ids that must fail, a predicate every failing id must satisfy)
CAUGHT = {
    "bias_broadcast_dropped": (
        {
            "first/addmm[fp32-bias_N-plain]",
            "first/addmm[bf16-bias_M1-a2_b-0.5]",
            "first/addmm[fp16-bias_1N-plain]",
        },
        lambda i: "addmm" in i and "bias_MN" not in i,
    ),
    "low_precision_accumulation": (
        {"first/mm[fp16-32x48x1024-nn]", "first/mm[fp16-32x48x1024-col]"},
        lambda i: "x1024-" in i and "fp32" not in i,
    ),
    "wrong_output_dtype": (
        {"first/mm[fp16-64x64x64-nn]", "first/bmm[bf16-3b32x32x32]", "first/mm_zero_m[bf16]"},
        lambda i: "fp16" in i or "bf16" in i or "mark_dynamic" in i,
    ),
    "recompiles_every_shape": (
        {"first/mm_dynamic", "first/mm_mark_dynamic"},
        lambda i: "dynamic" in i,
    ),
    "tf32_without_permission": (
        {"first/mm[fp32-64x64x64-nn]", "first/addmm[fp32-bias_MN-plain]"},
        lambda i: "fp32" in i or i in ("first/mm_dynamic", "first/mm_inductor_code"),
    ),
    "ignores_strides": (
        {"first/mm[fp32-64x64x64-col]", "first/mm[bf16-127x65x33-nt]"},
        lambda i: i.endswith("-nt]") or i.endswith("-col]"),
    ),
    "crashes_on_zero_size": (
        {"first/mm_zero_m[fp32]", "first/mm_zero_m[bf16]"},
        lambda i: "zero" in i,
    ),
}


def test_every_planted_backend_is_covered():
    assert set(CAUGHT) == set(planted_backends.ALL)


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_planted_bug_is_caught(name, instances):
    must_fail, plausible = CAUGHT[name]
    failed = failing(planted_backends.ALL[name], instances)
    assert must_fail <= failed, f"{name} escaped: {sorted(must_fail - failed)}"
    unexpected = {i for i in failed if not plausible(i)}
    assert not unexpected, f"{name} failed items its bug cannot explain: {sorted(unexpected)}"


def test_eager_passes_all_of_them(instances):
    from gemmconf.backends.eager import EagerBackend

    assert failing(EagerBackend(), instances) == set()


def test_a_wrong_eager_is_refuted_by_fp64_and_named(instances, monkeypatch):
    """Eager itself can be wrong (an H200 with torch 2.11: inf in half of a blockwise fp8 GEMM
    with fp16 output). A right backend then passes with metrics.eager_wrong set, and eager run as
    a backend fails."""
    from gemmconf import program
    from gemmconf.backends.eager import EagerBackend

    instance = next(i for i in instances if i.op == "mm" and i.dtype == "fp16")
    make_function = program.make_function

    def broken_eager(inst):
        fn = make_function(inst)

        def eager(*args):
            out = fn(*args)
            return out.masked_fill(torch.arange(out.shape[-1]) % 2 == 1, float("inf"))

        return eager

    class RightBackend:
        name = "right"

        def availability(self):
            return None

        def compile(self, fn, example_inputs, *, dynamic):
            return EagerBackend().compile(make_function(instance), example_inputs, dynamic=dynamic)

    monkeypatch.setattr(program, "make_function", broken_eager)
    right = run_item(instance, RightBackend(), seed=0, device="cpu", target=None, repro="-")
    assert right.passed, render(right).details
    dims = instance.dims()
    assert right.metrics["eager_wrong"] == dims["M"] * (dims["N"] // 2)
    wrong = run_item(instance, EagerBackend(), seed=0, device="cpu", target=None, repro="-")
    assert not wrong.passed and "Eager is wrong at" in render(wrong).details
