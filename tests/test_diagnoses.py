"""Diagnoses of wrong values (gemmconf.diagnoses): a failed result that is the product of its
inputs rounded to a narrower float than the item allows says so, naming the float; other wrong
results (a dropped K tail, low-precision accumulation, a right result) get no such note."""

from __future__ import annotations

import planted_backends
import pytest
import torch

from gemmconf import api, inputs, program
from gemmconf.diagnoses import narrow_inputs_note


def _to_bf16(func, args, kwargs):
    """fp32 GEMMs whose multiplied operands are rounded to bf16 (matmul precision 'medium');
    a bias or C is added as it is."""
    if not all(a.dtype == torch.float32 for a in args if isinstance(a, torch.Tensor)):
        return NotImplemented
    addend = {torch.addmm: 0, torch.baddbmm: 0, torch.nn.functional.linear: 2}.get(func)
    rounded = [
        a.bfloat16().float() if isinstance(a, torch.Tensor) and i != addend else a
        for i, a in enumerate(args)
    ]
    return func(*rounded, **kwargs)


BF16_INPUTS = planted_backends.PlantedBackend("bf16-inputs", _to_bf16)


def note_for(instance_id: str, backend) -> str | None:
    (instance,) = api.instances([instance_id])
    built = inputs.build(instance, 0, 0)
    with program.numerics(instance):
        fn = program.make_function(instance)
        actual = backend.compile(fn, built.tensors, dynamic=None)(*built.tensors)
    return narrow_inputs_note(instance, built, actual, program.make_reference(instance))


@pytest.mark.parametrize(
    ("instance_id", "backend", "words"),
    [
        ("first/mm[fp32-127x65x33-nn]", BF16_INPUTS, "rounded to bf16 (a, b; 8 significant bits"),
        ("first/addmm[fp32-bias_N-plain]", BF16_INPUTS, "rounded to bf16"),
        ("first/bmm[fp32-2b17x9x65]", BF16_INPUTS, "8 significant bits where the item allows 24"),
        # TF32's license taken for bf16 (the trial's "err_ratio 7188")
        (
            "integrity/tf32_precision[mm-2b64x48x256]",
            planted_backends.bf16_under_tf32,
            "matmul precision 'medium'",
        ),
        (
            "first/mm[fp32-64x64x64-nn]",
            planted_backends.tf32_without_permission,
            "rounded to TF32 or fp16",
        ),
    ],
)
def test_a_product_of_narrowed_inputs_is_named(instance_id, backend, words):
    note = note_for(instance_id, backend)
    assert note is not None and words in note, note


@pytest.mark.parametrize(
    ("instance_id", "backend"),
    [
        ("first/mm[fp32-127x65x33-nn]", planted_backends.k_tail_dropped),
        ("first/mm[bf16-32x48x1024-nn]", planted_backends.low_precision_accumulation),
        ("first/mm[fp32-127x65x33-nn]", planted_backends.unfused_bias_add),  # a right result
        ("integrity/tf32_precision[mm-2b64x48x256]", planted_backends.tf32_without_permission),
    ],
)
def test_other_results_are_not_called_narrowed(instance_id, backend):
    assert note_for(instance_id, backend) is None
