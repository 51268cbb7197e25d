"""Diagnoses: what a failed item's wrong values most likely are, where a reason's numbers alone
("err_ratio 7188") point nowhere. Each is a standalone function of the item's instance, its
inputs, the backend's result and the fp64 reference program; it returns the note the item's
details end with, or None where the diagnosis does not fit.

- `narrow_inputs_note`: a float result that is, to a tenth of its error, the product of the
  inputs rounded to a narrower float (bf16, fp16, TF32) than the item allows: a backend that
  rounds fp32 operands to bf16 under TF32's license (matmul precision "medium"), or to TF32
  where fp32 is asked for. The oracle says only that the error is thousands of times eager's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import torch

from gemmconf import chunked, inputs
from gemmconf.gemm.dtypes import DTYPES
from gemmconf.scenario import ScenarioInstance

__all__ = ["NARROW_CLOSER", "NARROW_MAX_FLOPS", "narrow_inputs_note"]

# how much closer the result must be to the narrowed product than to the whole
NARROW_CLOSER = 10.0
NARROW_MAX_FLOPS = 2**28  # the largest item whose narrowed products are computed to look


def _tf32(values: torch.Tensor) -> torch.Tensor:
    """fp32 `values` rounded to TF32 (10 explicit mantissa bits, to nearest), as fp64."""
    bits = values.to(torch.float32).contiguous().view(torch.int32)
    rounded = (bits + ((bits >> 13) & 1) + (1 << 12) - 1) & ~((1 << 13) - 1)
    return rounded.view(torch.float32).view(values.shape).to(torch.float64)


def _through(dtype: torch.dtype) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda values: values.to(dtype).to(torch.float64)


# (the narrower float's name, its mantissa bits, its rounding of fp64 values), narrowest first
_NARROWER: tuple[tuple[str, int, Callable[[torch.Tensor], torch.Tensor]], ...] = (
    ("bf16", 8, _through(torch.bfloat16)),
    ("fp16", 11, _through(torch.float16)),
    ("TF32", 11, _tf32),
)
# significant bits of the products an item allows: TF32 items may round their fp32 inputs to TF32
_MANTISSA = {"fp64": 53, "fp32": 24, "tf32": 11, "fp16": 11, "bf16": 8}


def narrow_inputs_note(
    instance: ScenarioInstance,
    item_inputs: inputs.Inputs,
    actual: Any,
    reference_fn: Callable[..., Any] | None,
    *,
    full_error: float | None = None,
) -> str | None:
    """The note for a failed result that is the product of its GEMM operands rounded to a
    narrower float than the item's (module docstring), else None. `item_inputs` are the draw
    the result was computed from (its fp64 `reference` inputs are rounded); `full_error`, the
    result's largest error against the whole fp64 product where the caller has it (else it is
    computed). None for exact ops, backward items, results that are not one float tensor, and
    items past NARROW_MAX_FLOPS."""
    spec = instance.spec
    if reference_fn is None or spec.exact or instance.backward:
        return None
    if item_inputs.reference is None or not isinstance(actual, torch.Tensor):
        return None
    if not actual.numel() or not actual.is_floating_point():
        return None
    if spec.flops(item_inputs.dims) > NARROW_MAX_FLOPS:
        return None
    multiplied = {
        o.name
        for o in instance.operands
        if o.name in item_inputs.names and o.name not in spec.writes and DTYPES.get(o.dtype)
    }
    bits = min((_MANTISSA.get(instance.operand(n).dtype, 0) for n in multiplied), default=0)
    if not multiplied or not bits:
        return None
    got = actual.detach().to("cpu", torch.float64)

    def error(reference_inputs: tuple[torch.Tensor, ...]) -> float:
        changed = dataclasses.replace(item_inputs, reference=reference_inputs)
        reference = chunked.Evaluator(instance, changed, "cpu")(reference_fn)
        if not isinstance(reference, torch.Tensor) or reference.shape != got.shape:
            return math.nan
        return float((got - reference.to("cpu", torch.float64)).abs().max())

    whole = full_error if full_error is not None else error(item_inputs.reference)
    if not math.isfinite(whole) or whole == 0:
        return None
    fits = []  # (error against the narrowed product, name, bits)
    for name, narrow_bits, rounding in _NARROWER:
        if narrow_bits >= bits:
            continue  # no narrower than the item allows
        rounded = tuple(
            rounding(inputs.exact(tensor).to(torch.float64)) if n in multiplied else tensor
            for n, tensor in zip(item_inputs.names, item_inputs.reference, strict=True)
        )
        narrowed = error(rounded)
        if math.isfinite(narrowed) and narrowed * NARROW_CLOSER <= whole:
            fits.append((narrowed, name, narrow_bits))
    if not fits:
        return None
    narrowed, name, narrow_bits = min(fits)
    # TF32 and fp16 keep the same bits of values in fp16's range: both fit, equally
    same = [n for e, n, _ in fits if n != name and e <= narrowed * 1.01]
    called = " or ".join([name, *same])
    operands = ", ".join(sorted(multiplied))
    medium = name == "bf16" and instance.dtype in ("fp32", "tf32")
    return (
        f"The result is the product of the inputs rounded to {called} ({operands}; "
        f"{narrow_bits} significant bits where the item allows {bits}): its largest error is "
        f"{narrowed:.3g} against that product and {whole:.3g} against the exact one. The "
        f"backend computed with {called} inputs"
        + (", as matmul precision 'medium' does, where TF32 at most is allowed" if medium else "")
        + "."
    )
