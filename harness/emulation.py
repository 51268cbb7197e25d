"""Eager's result where eager has no kernel, and the block-scaled metrics (SQNR).

Some ops run in eager PyTorch on some devices only (`OpSpec.emulated_where_missing`): `F.scaled_mm`
with MX or NVFP4 scales needs sm100, with 1x128/128x128 blocks sm90, and the CPU has TensorWise
and RowWise only; `torch._scaled_grouped_mm` runs on sm90 alone. Where eager has no kernel, an
item still judges the backend: against the fp64 product of the exactly dequantized inputs alone
(as `numeric: fp64` does), with a *stand-in* for eager's result that gives the oracle the output's
shape and dtype: the op's reference program on the dequantized inputs in fp32, rounded to the
output dtype (what eager's kernels compute, up to summation order).

Whether eager lacks the kernel is probed, not assumed: eager runs a small canonical instance of
the same op, recipe, dtypes, layouts and output dtype (M = N = K = 128, two groups) on the
device, once per such key and device. If that runs, eager has the kernel, no stand-in is made,
and an eager error on the item's own inputs stays what it is (the scenario is wrong).

`block_scaled_metrics` adds `sqnr_db`, the signal-to-quantization-noise ratio of the backend's
result against the fp64 reference, 20 log10(|ref| / |actual - ref|), beside `err_ratio` for
scaled ops (torch's own MX/NVFP4 tests judge by it: > 22 dB for MXFP8, 16 dB for NVFP4).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from gemmconf import inputs, oracle, program
from gemmconf.scenario import ScenarioInstance

CANONICAL = (("B", 2), ("M", 128), ("N", 128), ("K", 128))


def stand_in(instance: ScenarioInstance, device: str) -> Callable[[inputs.Inputs], Any] | None:
    """A function from an item's inputs to eager's result, where eager has no kernel for the
    instance on `device`; None where eager has one (module docstring)."""
    if not instance.spec.emulated_where_missing or instance.checks.raises:
        return None
    if _eager_runs(_probe_key(instance), str(device)):
        return None
    return rounded_reference(instance, device)


def rounded_reference(
    instance: ScenarioInstance, device: str
) -> Callable[[inputs.Inputs], Any] | None:
    """A function from an item's inputs to the op's reference program run on them in fp32 and
    rounded to the result dtype: what eager's kernels compute, up to summation order (the
    stand-in of `stand_in`, and the result an error scenario that allows one is measured by,
    `raises: {or_correct: true}`). None for an op judged exactly (no fp64 reference)."""
    reference = program.make_reference(instance)
    if reference is None:
        return None
    dtype = _result_dtype(instance)

    def emulate(item_inputs: inputs.Inputs) -> Any:
        assert item_inputs.reference is not None
        exact = (inputs.exact(t) for t in item_inputs.reference)
        args = [t.to(device).float() if t.is_floating_point() else t.to(device) for t in exact]
        return reference(*args).to(dtype)

    return emulate


def _result_dtype(instance: ScenarioInstance) -> torch.dtype:
    from gemmconf.gemm.dtypes import torch_dtype

    casts = [step.arg for step in instance.epilogue if step.kind == "cast"]
    if casts:  # the program's last cast decides (the reference keeps fp64 and skips casts)
        return torch_dtype(casts[-1])
    return torch_dtype(instance.gemm_dtype)


def _probe_key(instance: ScenarioInstance) -> ScenarioInstance:
    """The canonical instance whose eager run decides (module docstring)."""
    return replace(
        instance,
        id=f"{instance.op}-probe",
        shape_sets=(tuple((d, s) for d, s in CANONICAL if _uses(instance, d)),),
        group_sizes=None,
        values="default",
        axes=(),
        source="",
        name="probe",
        suite="probe",
        doc=None,
        seed_test=None,
        markers=(),
    )


def _uses(instance: ScenarioInstance, dim: str) -> bool:
    exprs = [str(e) for o in instance.operands for e in o.shape] + [
        str(e) for e in instance.bias or ()
    ]
    return any(dim in e for e in exprs) or (dim == "B" and instance.spec.grouped)


@functools.cache
def _eager_runs(probe: ScenarioInstance, device: str) -> bool:
    fn = program.make_function(probe)
    probe_inputs = inputs.build(probe, 0, 0, device)
    try:
        fn(*probe_inputs.tensors)
    except (RuntimeError, ValueError, NotImplementedError, TypeError):
        return False
    return True


def block_scaled_metrics(instance: ScenarioInstance, actual: Any, reference: Any) -> dict[str, Any]:
    """`sqnr_db` of the backend's first output against the fp64 reference, for scaled ops."""
    if not instance.spec.scaled:
        return {}
    got, ref = _first_tensor(actual), _first_tensor(reference)
    if got is None or ref is None or got.shape != ref.shape or ref.numel() == 0:
        return {}
    # in pieces, on the backend output's device: a large reference may be held on the host
    got, ref = got.detach().reshape(-1), ref.detach().reshape(-1)
    noise = signal = 0.0
    for _, piece in oracle.pieces(ref.numel()):
        part = ref[piece].to(got.device, torch.float64)
        noise += float((got[piece].to(torch.float64) - part).square().sum())
        signal += float(part.square().sum())
    noise, signal = math.sqrt(noise), math.sqrt(signal)
    if not math.isfinite(noise) or signal == 0:
        return {}
    return {"sqnr_db": math.inf if noise == 0 else 20 * math.log10(signal / noise)}


def _first_tensor(value: Any) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, tuple | list) and value:
        return _first_tensor(value[0])
    return None
