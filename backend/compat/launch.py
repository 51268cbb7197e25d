"""Launching compiled kernels with less host work than Triton's JIT: the C launch behind a
compiled kernel (in the Triton versions whose form is known), and the scratch memory in-kernel
tensor descriptors ask for on every launch.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch


def set_tma_allocator() -> None:
    """In-kernel tensor descriptors need global scratch memory from a host allocator."""
    import triton

    set_allocator = getattr(triton, "set_allocator", None)
    if set_allocator is None:
        raise RuntimeError(f"triton {triton.__version__} has no set_allocator: no in-kernel TMA")
    set_allocator(_tma_scratch)


# in-kernel descriptors' scratch, by (device, stream): see launch_scratch
_SCRATCH: dict[tuple[int, int], torch.Tensor] = {}


def _tma_scratch(size: int, alignment: int, stream: Any) -> torch.Tensor:
    """Triton's allocator (`set_tma_allocator`): `launch_scratch` on the current device."""
    return launch_scratch(size, torch.cuda.current_device(), stream)


def launch_scratch(size: int, device: int, stream: int) -> torch.Tensor:
    """Scratch for one launch's in-kernel tensor descriptors, which Triton's kernels want on
    every launch. One buffer per device and stream, grown when a launch needs more, is reused:
    launches on a stream run in order, so none finds its scratch in use by another (a fresh
    allocation took 12% of a decode GEMM's launch path on an H100 host). While a CUDA graph is
    captured the buffer is allocated anew and not kept: it belongs to the graph's memory pool.
    Nothing is captured on the legacy default stream (stream 0), which is not asked."""
    if stream != 0 and torch.cuda.is_current_stream_capturing():
        return torch.empty(size, dtype=torch.int8, device="cuda")
    key = (device, stream)
    buffer = _SCRATCH.get(key)
    if buffer is None or buffer.numel() < size:
        buffer = _SCRATCH[key] = torch.empty(size, dtype=torch.int8, device="cuda")
    return buffer


# The call Triton's CudaLauncher.__call__ makes to its C launch, in the versions whose form is
# known (the source with whitespace removed): what `c_launch` calls the same way.
_C_LAUNCH_CALLS = {
    "self.launch(gridX,gridY,gridZ,stream,function,self.launch_cooperative_grid,"
    "self.launch_pdl,global_scratch,profile_scratch,*args)": "3.6",
    "self.launch(gridX,gridY,gridZ,stream,function,self.launch_cooperative_grid,"
    "self.launch_pdl,kernel_metadata,launch_metadata,launch_enter_hook,launch_exit_hook,"
    "global_scratch,profile_scratch,self.arg_annotations,self.kernel_signature,args)": "3.7",
}


# a C launch called directly: (grid x, y, z, stream, function, packed metadata, scratch, args)
CLaunch = Any


@functools.cache
def _c_launch_form(launcher_type: type) -> str | None:
    try:
        source = inspect.getsource(launcher_type.__call__)
    except (OSError, TypeError, AttributeError):
        return None
    text = "".join(source.split())
    forms = [form for call, form in _C_LAUNCH_CALLS.items() if call in text]
    return forms[0] if len(forms) == 1 else None


def c_launch(run: Any) -> tuple[CLaunch, int] | None:
    """Triton's C launch behind a compiled kernel's `run` (its CudaLauncher), to be called with
    the scratch `launch_scratch` keeps, and the scratch bytes one program needs. Through `run`,
    every launch builds a closure and asks Triton's allocator for scratch in Python: 2.6 of a
    9.1 µs launch on an H100 host (triton 3.6, `tools/host_overhead.py`). The call passes what
    `run` would pass, no launch hooks or metadata (the caller goes through `run` when a
    profiler listens). None where `run` is not a form known here (another Triton or driver,
    a profiler's own scratch): the caller then launches through `run`."""
    form = _c_launch_form(type(run))
    if form is None or getattr(run, "profile_scratch_size", None) != 0:
        return None
    raw, coop, pdl = run.launch, run.launch_cooperative_grid, run.launch_pdl
    per_program = run.global_scratch_size * run.num_ctas

    if form == "3.6":

        def launch(g0, g1, g2, stream, function, packed, scratch, args):  # type: ignore[no-untyped-def]
            raw(g0, g1, g2, stream, function, coop, pdl, scratch, None, packed, None, None, None,
                *args)  # fmt: skip

    else:
        annotations, signature = run.arg_annotations, run.kernel_signature

        def launch(g0, g1, g2, stream, function, packed, scratch, args):  # type: ignore[no-untyped-def]
            raw(g0, g1, g2, stream, function, coop, pdl, packed, None, None, None, scratch, None,
                annotations, signature, args)  # fmt: skip

    return launch, per_program


def has_tensor_descriptors() -> bool:
    import triton.language as tl

    return hasattr(tl, "make_tensor_descriptor")
