"""Batch invariance (`checks: {batch_invariant: true}`): the first rows of a call on fewer rows
(M = 1 and M / 2) are the full call's first rows bit for bit."""

from __future__ import annotations

from typing import Any

from gemmconf import inputs, integrity
from gemmconf.checks.base import NOTHING, Findings
from gemmconf.item import ItemRun
from gemmconf.outcome import BatchVariant
from gemmconf.scenario import ScenarioInstance


class BatchInvariant:
    name = "batch invariant"

    def applies(self, item: ItemRun) -> bool:
        return item.instance.checks.batch_invariant

    def run(self, item: ItemRun) -> Findings:
        backend_inputs, first = item.backend_inputs[0], item.first_draw
        m = backend_inputs.dims.get("M", 0)
        compiled = item.compiled
        for part in sorted({1, m // 2} - {0, m}):
            item.stage = "slicing the inputs to fewer rows"
            sliced = _rows(item.instance, backend_inputs, part)
            result = item.backend_call(
                f"the call with the first {part} row(s) (M={part})",
                lambda sliced=sliced: compiled(*sliced),
            )
            item.stage = "comparing rows between calls"
            d = integrity.first_difference(
                first.actual, result, view=lambda t, part=part: t[..., :part, :]
            )
            if d is not None:
                problem = BatchVariant(m, part, d)
                return Findings(problems=(problem,))
        return NOTHING


def _rows(instance: ScenarioInstance, item_inputs: inputs.Inputs, m: int) -> tuple[Any, ...]:
    """The inputs with only the first `m` rows of every dimension that is M."""
    shapes: dict[str, tuple[Any, ...]] = {}
    for operand in instance.operands:
        shape = list(operand.shape)
        if operand.layout == "t":
            shape[-2], shape[-1] = shape[-1], shape[-2]
        shapes[operand.name] = tuple(shape)
    addend = instance.spec.addend
    if instance.bias is not None and addend is not None:
        shapes[addend.name] = instance.bias
    steps = [s for s in instance.epilogue if s.kind == "add_tensor"]
    for i, step in enumerate(steps):
        shapes[f"other{i}"] = tuple(step.arg)
    m_full = item_inputs.dims["M"]
    sliced = []
    for name, tensor in zip(item_inputs.names, item_inputs.tensors, strict=True):
        exprs = shapes.get(name)
        if name == "scale_a" and tensor.dim() >= 1 and tensor.shape[0] == m_full:
            exprs = ("M",) + ("_",) * (tensor.dim() - 1)
        if exprs is not None and len(exprs) == tensor.dim():
            for dim, expr in enumerate(exprs):
                if str(expr) == "M":
                    tensor = tensor.narrow(dim, 0, m)
        sliced.append(tensor)
    return tuple(sliced)
