"""Two torch.compile backends with one planted bug each in their compiled-autograd path, for
tests/test_compiled_autograd.py: both compute right gradients when the backward runs through
aot_autograd, as a scenario without `compiled_autograd:` runs it.

- `wrong_captured_backward`: the backward graph compiled autograd hands it (a compile whose
  dynamo compile id names a captured graph) runs its GEMMs on bf16-rounded inputs; every other
  graph is aot_eager's.
- `ignores_compiled_autograd`: makes its torch.compile with dynamo's `compiled_autograd` config
  off, so the backward never runs under compiled autograd (aot_autograd's gradients, right).

Importable as ``--backend compiled_autograd_backends:<name>`` with the tests folder on sys.path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch._dynamo.config
from torch.utils._python_dispatch import TorchDispatchMode

from gemmconf.backends.dynamo import DynamoBackend, TorchCompiled, dynamo_backend

_ATEN_GEMMS = (
    torch.ops.aten.mm.default,
    torch.ops.aten.addmm.default,
    torch.ops.aten.bmm.default,
    torch.ops.aten.baddbmm.default,
)


class _GemmsOnBf16Inputs(TorchDispatchMode):
    """Every GEMM's float operands rounded to bf16 first (the result keeps its dtype)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _ATEN_GEMMS:
            args = tuple(
                a.to(torch.bfloat16).to(a.dtype)
                if isinstance(a, torch.Tensor) and a.dtype == torch.float32
                else a
                for a in args
            )
        return func(*args, **kwargs)


def _captured_by_compiled_autograd() -> bool:
    """Whether the graph being compiled is one compiled autograd captured (torch 2.13: the
    compile id carries the capture's number)."""
    compile_id = torch._guards.CompileContext.current_compile_id()
    return getattr(compile_id, "compiled_autograd_id", None) is not None


def _wrong_in_captured_backward(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
    from torch._dynamo.backends.debugging import aot_eager

    compiled = aot_eager(gm, example_inputs)
    if not _captured_by_compiled_autograd():
        return compiled

    def run(*args: Any) -> Any:
        with _GemmsOnBf16Inputs():
            return compiled(*args)

    return run


wrong_captured_backward = dynamo_backend(
    _wrong_in_captured_backward, name="wrong-captured-backward"
)


class _IgnoresCompiledAutograd(DynamoBackend):
    def compile(
        self, fn: Callable[..., Any], example_inputs: Sequence[Any], *, dynamic: bool | None
    ) -> TorchCompiled:
        with torch._dynamo.config.patch(compiled_autograd=False):
            return super().compile(fn, example_inputs, dynamic=dynamic)


ignores_compiled_autograd = _IgnoresCompiledAutograd("aot_eager", name="ignores-compiled-autograd")
