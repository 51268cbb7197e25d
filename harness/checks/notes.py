"""Notes beside a numeric failure that say what the numbers alone do not: that eager was a
stand-in, or that the result is the product without K's tail."""

from __future__ import annotations

import dataclasses
import math

import torch

from gemmconf import chunked, inputs
from gemmconf.checks.base import NOTHING, Findings
from gemmconf.item import Draw, ItemRun
from gemmconf.outcome import NumericFailure

# beside a numeric failure of an item eager has no kernel for (gemmconf.emulation)
EMULATED_NOTE = (
    'Eager has no kernel for this item here: "eager" above is a stand-in (the fp64 '
    "reference's program run in fp32, rounded to the output dtype) that gives the result's "
    "shape and dtype, and the backend was judged against fp64 alone (metrics.eager_emulated)."
)

# The K steps of kernels' main loops a dropped K tail is looked for behind (K - r a multiple of
# one), and the largest failed item whose truncated products are computed to look.
K_TAIL_STEPS = (8, 16, 32, 64, 128, 256)
K_TAIL_MAX_FLOPS = 2**28
# how much closer the result must be to the truncated product than to the whole: bf16 outputs'
# own rounding keeps a dropped tail's results 30x (not 100x) closer at K = 65
K_TAIL_CLOSER = 10.0


def _numeric_failure(item: ItemRun) -> NumericFailure | None:
    return next((p for p in item.problems if isinstance(p, NumericFailure)), None)


class EmulatedEager:
    name = "eager emulated"

    def applies(self, item: ItemRun) -> bool:
        return item.stand_in is not None

    def run(self, item: ItemRun) -> Findings:
        return Findings(notes=(EMULATED_NOTE,)) if _numeric_failure(item) else NOTHING


class KTail:
    """A failed shape set's result that is, to a tenth of its error, the product without K's
    last r elements (K - r a multiple of one of K_TAIL_STEPS): the note that says so. A
    wrong-values reason alone ("err_ratio 7e+05") does not point at K; a kernel that steps K
    by a tile and skips the remainder is a common bug. Not for backward scenarios, results
    that are not one tensor, and items past K_TAIL_MAX_FLOPS."""

    name = "K tail"

    def applies(self, item: ItemRun) -> bool:
        return item.reference_fn is not None and not item.instance.backward

    def run(self, item: ItemRun) -> Findings:
        failure = _numeric_failure(item)
        if failure is None:
            return NOTHING
        note = _k_tail_note(item, failure)
        return NOTHING if note is None else Findings(notes=(note,))


def _k_tail_note(item: ItemRun, failure: NumericFailure) -> str | None:
    draw = item.draws[failure.shape_set][0]
    axes = _k_axes(item, draw)
    if not axes:
        return None
    instance, item_inputs, actual = item.instance, draw.inputs, draw.actual
    k = item_inputs.dims["K"]
    item.stage = "looking for a dropped K tail"
    got = actual.detach().to("cpu", torch.complex128 if actual.is_complex() else torch.float64)
    if tuple(got.shape) != tuple(draw.expected.shape):  # a wrong layout: told apart already
        return None

    def error_against(reference: torch.Tensor) -> float:
        return float((got - reference.to("cpu", got.dtype)).abs().max())

    def error(reference_inputs: tuple[torch.Tensor, ...]) -> float:
        changed = dataclasses.replace(item_inputs, reference=reference_inputs)
        return error_against(chunked.Evaluator(instance, changed, "cpu")(item.reference_fn))

    judged = draw.judged  # the judgment's fp64 reference, where the draw kept it
    if judged is not None and isinstance(judged.reference, torch.Tensor):
        full = error_against(judged.reference)
    else:
        full = error(item_inputs.reference)
    if not math.isfinite(full):  # NaN or Inf in the result: no tail explains that
        return None
    # a tail of all of K would leave zeros (or the bias): nothing tells that from a backend
    # that returns zeros, so some of K must have been summed
    for tail in sorted({k % step for step in K_TAIL_STEPS} - {0, k}):
        cut_error = error(_without_tail(item_inputs, axes, k, tail))
        if cut_error * K_TAIL_CLOSER <= full:
            return (
                f"The result is the product without K's last "
                f"{'element' if tail == 1 else f'{tail} elements'} (K = {k}, "
                f"{k - tail} of them summed): its largest error is {cut_error:.3g} against "
                f"that product and {full:.3g} against the whole. A K tail dropped, as by a "
                "kernel that steps K and skips what is left."
            )
    return None


def _k_axes(item: ItemRun, draw: Draw) -> dict[str, int]:
    """Where K is in each reference input that has it, by input name; empty where the note
    does not apply (no reference, K under 2, not one floating-point tensor, too many FLOPs)."""
    instance, item_inputs, actual = item.instance, draw.inputs, draw.actual
    k = item_inputs.dims.get("K", 0)
    if item_inputs.reference is None or k < 2:
        return {}
    if not isinstance(actual, torch.Tensor) or not isinstance(draw.expected, torch.Tensor):
        return {}
    if not actual.numel() or not (actual.is_floating_point() or actual.is_complex()):
        return {}
    if instance.spec.flops(item_inputs.dims) > K_TAIL_MAX_FLOPS:
        return {}
    axes = {}  # input name -> the axis of K in its reference tensor
    for operand in instance.operands:
        exprs = [str(e) for e in operand.shape]
        if "K" not in exprs or operand.name not in item_inputs.names:
            continue
        axes[operand.name] = inputs.reference_axis(operand, exprs.index("K"))
    return axes


def _without_tail(
    item_inputs: inputs.Inputs, axes: dict[str, int], k: int, tail: int
) -> tuple[torch.Tensor, ...]:
    """The reference inputs with K's last `tail` elements zeroed (copies where K is theirs)."""
    assert item_inputs.reference is not None
    cut = []
    for name, tensor in zip(item_inputs.names, item_inputs.reference, strict=True):
        if name in axes:
            tensor = inputs.exact(tensor).clone()
            tensor.narrow(axes[name], k - tail, tail).zero_()
        cut.append(tensor)
    return tuple(cut)
