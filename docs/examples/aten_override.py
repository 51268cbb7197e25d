"""A kernel library that replaces aten's GEMM kernels, as a gemmconf backend:
`gemmconf run --backend aten_override:AtenOverride -m cpu` from the folder that holds this file.

Eager and the fp64 reference run in the same process through aten's own kernels, so the
library's kernels are registered for the Compiled's call only and removed before it returns
(README, "A backend that overrides aten ops"). The dispatch key is the device they serve: "CPU"
here, "CUDA" for a GPU library. Inside them, mm on that device would dispatch to them again:
`blocked_kernels`' aten_ kernels reach aten's own kernel through `aten.mm.out` and
`aten.bmm.out`, overloads not replaced.
"""

from __future__ import annotations

import warnings

import blocked_kernels
import torch

KERNELS = {
    "mm": blocked_kernels.aten_mm,
    "addmm": blocked_kernels.aten_addmm,
    "bmm": blocked_kernels.aten_bmm,
}


class Compiled:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *inputs):
        library = torch.library.Library("aten", "IMPL")  # our kernels, for this call only
        with warnings.catch_warnings():  # torch's "Overriding a previously registered kernel"
            warnings.simplefilter("ignore", UserWarning)
            for op, kernel in KERNELS.items():
                library.impl(op, kernel, "CPU")
        try:
            return self.fn(*inputs)
        finally:
            library._destroy()  # aten's own kernels again (torch.library has no public undo)

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return 1  # nothing is compiled: one "compile" serves every shape


class AtenOverride:
    name = "aten-override"

    def availability(self) -> str | None:
        return None

    def supports(self, instance) -> str | None:
        # the ops whose kernels are overridden; declared, so that what aten would compute for
        # the others is not counted as this library's
        return None if instance.op in ("mm", "addmm", "bmm") else f"no {instance.op} kernel"

    def compile(self, fn, example_inputs, *, dynamic):
        return Compiled(fn)
