"""Backends for measuring what a lost CUDA context costs a run against a crash (issue 43).

    pytest suites/dense suites/epilogue -m mm --backend tools.fault_cost:illegal_address
    pytest suites/dense suites/epilogue -m mm --backend tools.fault_cost:segfault

Both compute eagerly and misbehave on every item with a bf16 operand: `illegal_address`
launches a Triton kernel that stores far past its buffer (a real device fault: the CUDA context
is lost), `segfault` reads address 0. The same items fail, so the runs' wall times compare what
each kind of loss costs. A measuring aid for GPU machines; nothing here is asserted.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

import torch
import triton
import triton.language as tl

from gemmconf.backends.eager import EagerBackend, EagerCompiled


@triton.jit
def _store_far(out_ptr, far):
    offsets = tl.arange(0, 64)
    tl.store(out_ptr + far + offsets, tl.full((64,), 1.0, tl.float32))


def _illegal_address() -> None:
    out = torch.empty(64, device="cuda", dtype=torch.float32)
    _store_far[(1,)](out, 1 << 38)  # 1 TiB past a 256-byte buffer
    torch.cuda.synchronize()  # the fault surfaces here


def _segfault() -> None:
    ctypes.string_at(0)


class _Faulting(EagerCompiled):
    """Eager's call, after the fault on a bf16 item."""

    def __init__(self, fn: Callable[..., Any], fault: Callable[[], None]) -> None:
        super().__init__(fn)
        self.fault = fault

    def __call__(self, *args: Any) -> Any:
        if any(isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16 for a in args):
            self.fault()
        return super().__call__(*args)


class _FaultingBackend(EagerBackend):
    def __init__(self, name: str, fault: Callable[[], None], *, gpu: bool) -> None:
        self.name, self.fault, self.gpu = name, fault, gpu

    def availability(self) -> str | None:
        return None if torch.cuda.is_available() or not self.gpu else "needs a CUDA GPU"

    def compile(self, fn: Any, example_inputs: Sequence[Any], *, dynamic: bool | None) -> Any:
        return _Faulting(fn, self.fault)


illegal_address = _FaultingBackend("illegal-address", _illegal_address, gpu=True)
segfault = _FaultingBackend("segfault", _segfault, gpu=False)  # a CPU run too
