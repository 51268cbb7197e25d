"""Whether PyTorch in this process is still the PyTorch that eager and the fp64 reference must run.

Every verdict compares the backend with eager and with an fp64 reference, both computed by aten's
own GEMM kernels in the same process. A backend that changes those for the whole process changes
eager and the reference too, and its wrong answers then agree with them and pass: a kernel
library registering `torch.library.Library("aten", "IMPL")` overrides at import (an outside
author's, with a planted addmm bug: 36 items passed at err_ratio 1.0), or in `compile()` without
undoing them; a dispatch or function mode left on; `torch.mm` or `Tensor.__matmul__` replaced.

So the harness remembers (`remember`, at the start of each isolation worker and of the pytest
process, before any backend is imported):
- for each overload of each aten op the suite's programs reach (`GEMM_ATEN`), the kernel at
  each dispatch key that computes dense CPU and CUDA values (`VALUE_KEYS`; the CUDA ones only
  where the process has CUDA);
- the GEMM functions and Tensor methods of torch that programs call (`NAMESPACES`);
- the dispatch and function modes on.

`altered()` lists what differs now, and any kernel at those keys registered from Python code
outside torch's own package (a backend imported before the snapshot). The runner looks before
eager runs and before it judges each shape set, and no item of an altered process is judged
(`outcome.EagerAltered`). Whose doing it was decides the item's outcome: a backend is blamed
when its import altered PyTorch (`isolation.configured_backend`), or its calls did, between a
clean look and an altered one (`blame`); its own items fail as its crash, and the items of
other backends in the same process are errors, not their failures.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from gemmconf.gemm.ops import OPS

# the aten ops the suite's programs dispatch to (gemm.ops, OpSpec.aten), and those composite
# ops decompose into (linear and matmul: mm, addmm, bmm, mv, dot, ...)
DECOMPOSED = ("mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot")
# aten's weight-only quantized GEMMs (float activations, int8 or packed int4 weights), where this
# torch has them: no program of the suite reaches them, a quantization library's call may (an
# optimum-quanto trial, 2026-12-02: `_weight_int8pack_mm` computed 75 passes that read "computed
# by the backend" with no aten GEMM seen, and its crashes "before any GEMM kernel ran")
WEIGHT_ONLY = tuple(
    op
    for op in ("_weight_int8pack_mm", "_weight_int4pack_mm", "_weight_int4pack_mm_for_cpu")
    if hasattr(torch.ops.aten, op)
)
GEMM_ATEN = tuple(sorted({spec.aten for spec in OPS.values()} | set(DECOMPOSED) | set(WEIGHT_ONLY)))
# What each of them multiplies: "scaled" (fp8, MX, NVFP4 operands and their scales), "integer"
# (int8 operands, exact int32 sums), "weight-only" (float activations, quantized weights) or
# "float"; a GEMM of one kind run for a program whose GEMMs are of another computes operands the
# caller made (gemmconf.checks.computed_by).
WEIGHT_ONLY_KIND = "weight-only"
GEMM_KIND = {
    **dict.fromkeys(GEMM_ATEN, "float"),
    **dict.fromkeys(WEIGHT_ONLY, WEIGHT_ONLY_KIND),
    **{
        spec.aten: "scaled" if spec.scaled else "integer" if spec.exact else "float"
        for spec in OPS.values()
    },
}
# where a program's Python names live (gemm.ops' call templates: torch.mm, F.linear, a @ b), and
# which of them are GEMMs (torch replaces some others itself: torch 2.11's dynamo wraps
# torch.manual_seed on first use)
NAMESPACES = (("torch", torch), ("torch.nn.functional", F), ("torch.Tensor", torch.Tensor))
GEMM_NAME = re.compile(r"mm|matmul|linear")
# the dispatch keys whose kernels compute an eager call's values on dense CPU and CUDA tensors
# (composite kernels land on CPU and CUDA in the computed table; meta kernels only trace)
VALUE_KEYS = frozenset(
    ("CPU", "CUDA", "AutogradCPU", "AutogradCUDA", "AutocastCPU", "AutocastCUDA")
)
_TORCH_DIR = os.path.dirname(torch.__file__)
_PYTHON_SOURCE = re.compile(r"registered at (.+\.py):\d+")
_DEBUG = re.compile(r"^SafeKernelFunction\(debug='(.*)'\)$")  # the lookup's repr


@dataclass(frozen=True)
class Snapshot:
    """What answers for the GEMM ops in this process, as `altered` compares it."""

    kernels: dict[str, str]  # "aten::addmm CPU" -> "registered at ...RegisterCPU_2.cpp:5051"
    functions: dict[str, int]  # "torch.mm" -> id of the object there
    modes: tuple[str, ...]  # dispatch and function modes on, by class name
    device: str = "privateuseone"  # the name of torch's PrivateUse1 device (`device_changed`)

    @staticmethod
    def take() -> Snapshot:
        return Snapshot(_kernels(), _functions(), _modes(), _private_device())


_remembered: Snapshot | None = None
_culprit: str | None = None  # the backend first seen altering PyTorch in this process


def remember() -> Snapshot:
    """The snapshot to compare with: taken by the first call in this process."""
    global _remembered
    if _remembered is None:
        _remembered = Snapshot.take()
    return _remembered


def blame(backend: str) -> None:
    """`backend` altered PyTorch: its import did, or its calls between a clean look and one that
    was not. The first one blamed stays the culprit: later changes pile onto its."""
    global _culprit
    if _culprit is None:
        _culprit = backend


def culprit() -> str | None:
    """The backend blamed for altering PyTorch in this process, if one was."""
    return _culprit


def altered() -> tuple[str, ...]:
    """What differs from the remembered snapshot (taken now if none was), one line each."""
    then, now = remember(), Snapshot.take()
    found = []
    if now.kernels != then.kernels:
        found += [
            f"{name}'s kernel is {_where(now.kernels.get(name, 'gone'))} "
            f"(it was {_where(then.kernels.get(name, 'not registered'))})"
            for name in sorted(then.kernels.keys() | now.kernels.keys())
            if then.kernels.get(name) != now.kernels.get(name)
        ]
    found += [
        f"{name}'s kernel is {_where(kernel)}, from Python code outside torch"
        for name, kernel in sorted(now.kernels.items())
        if then.kernels.get(name) == kernel and _foreign_python(kernel)
    ]
    if now.functions != then.functions:
        found += [
            f"{name} was replaced (now {_describe(name)})"
            for name, ident in sorted(then.functions.items())
            if now.functions[name] != ident
        ]
    if now.modes != then.modes:
        found.append(
            f"the modes on are {', '.join(now.modes) or 'none'} "
            f"(they were {', '.join(then.modes) or 'none'})"
        )
    return tuple(found)


def device_changed() -> tuple[str, ...]:
    """What a backend changed of torch's devices since the process started, one line each: the
    PrivateUse1 device renamed (`torch.utils.rename_privateuse1_backend`, as a library that
    brings its own device does at import: torchax names it "jax"). Eager's values stay aten's,
    so `altered` does not count it; but torch.compile asks that device for its streams while
    dynamo traces any program and fails in such a process, whatever the backend does with the
    graph (a torchax trial, 2026-12-01): a failure before the backend got the graph is then not
    torch.compile's own (`outcome.ItemOutcome.before_backend`)."""
    then, now = remember().device, _private_device()
    if now == then:
        return ()
    return (
        f"torch's PrivateUse1 device is named {now!r} here, {then!r} before the backend was "
        "imported (torch.utils.rename_privateuse1_backend)",
    )


def _private_device() -> str:
    """The name of torch's PrivateUse1 device (a string lookup: no device is initialised)."""
    name = getattr(torch._C, "_get_privateuse1_backend_name", None)
    return name() if name is not None else "privateuseone"


def _kernels() -> dict[str, str]:
    """Where the kernel of every GEMM overload at every value key this process can reach was
    registered, by "aten::addmm CPU" (torch's computed-kernel lookup, asked only where its
    presence test says a kernel is: 0.3 ms for the CPU keys' 99 kernels on the dev CPU with
    torch 2.13, about two looks an item; where a torch lacks it, the ops' dispatch tables)."""
    lookup = getattr(torch._C, "_dispatch_get_computed_kernel_for_dispatch_key", None)
    present = getattr(torch._C, "_dispatch_has_computed_kernel_for_dispatch_key", None)
    kernels = {}
    for qualified in _overloads(GEMM_ATEN):  # (cached: the ops' overloads never change)
        if lookup is not None and present is not None:
            for key in _reachable_keys():
                if present(qualified, key):
                    kernels[f"{qualified} {key}"] = repr(lookup(qualified, _dispatch_key(key)))
            continue
        try:
            table = torch._C._dispatch_dump_table(qualified)
        except RuntimeError:  # an op this torch lacks
            continue
        for line in table.splitlines():
            key, _, kernel = line.partition(": ")
            if key in _reachable_keys():
                kernels[f"{qualified} {key}"] = kernel
    return kernels


@functools.cache
def _reachable_keys() -> tuple[str, ...]:
    """The value keys whose kernels can compute in this process: a process without CUDA makes
    no CUDA tensor, so a kernel changed at a CUDA key alters none of its eager values (and
    looking there would double each look's cost)."""
    cuda = torch.cuda.is_available()
    return tuple(sorted(key for key in VALUE_KEYS if cuda or not key.endswith("CUDA")))


def _where(kernel: str) -> str:
    """A kernel as the lookup's repr or the dispatch table says it, in the table's words."""
    return _DEBUG.sub(r"\1", kernel)


@functools.cache
def _dispatch_key(name: str) -> object:
    return getattr(torch._C.DispatchKey, name)


@functools.cache
def _overloads(ops: tuple[str, ...]) -> tuple[str, ...]:
    names = []
    for op in ops:
        packet = getattr(torch.ops.aten, op, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            names.append(f"aten::{op}" + ("" if overload == "default" else f".{overload}"))
    return tuple(names)


def _functions() -> dict[str, int]:
    return {
        f"{prefix}.{name}": id(getattr(space, name, None)) for prefix, space, name in _gemm_names()
    }


@functools.cache
def _gemm_names() -> tuple[tuple[str, object, str], ...]:
    """The GEMM functions of NAMESPACES (inherited methods too), found once."""
    return tuple(
        (prefix, space, name)
        for prefix, space in NAMESPACES
        for name in dir(space)
        if GEMM_NAME.search(name) and callable(getattr(space, name, None))
    )


def _modes() -> tuple[str, ...]:
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    stacks = (*_get_current_function_mode_stack(), *_get_current_dispatch_mode_stack())
    return tuple(type(mode).__name__ for mode in stacks)


@functools.cache
def _foreign_python(kernel: str) -> bool:
    """A kernel registered from a Python file outside torch's own package."""
    match = _PYTHON_SOURCE.search(kernel)
    if match is None:
        return False
    source = os.path.realpath(match.group(1))
    return not source.startswith(os.path.realpath(_TORCH_DIR) + os.sep)


def _describe(name: str) -> str:
    prefix, _, attribute = name.rpartition(".")
    space = dict(NAMESPACES)[prefix]
    value = getattr(space, attribute, None)
    module = getattr(value, "__module__", None) or type(value).__module__
    return f"{getattr(value, '__qualname__', type(value).__name__)} from {module}"
