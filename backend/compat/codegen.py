"""Compiling kernels for a GPU arch, also without that GPU (the cross-compiler's needs)."""

from __future__ import annotations

from typing import Any

import torch

# torch dtype -> the pointer element type Triton's launcher derives for it
TRITON_POINTER_TYPES: dict[torch.dtype, str] = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float8_e4m3fn: "fp8e4nv",
    torch.float8_e5m2: "fp8e5",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.int32: "i32",
    torch.int64: "i64",
}


def triton_version() -> str:
    import triton

    return triton.__version__


def gpu_target(capability: int) -> Any:
    """The `GPUTarget` Triton compiles for, e.g. capability 90 -> cuda sm_90."""
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", capability, 32)


def ast_source(
    fn: Any,
    signature: dict[str, str],
    constexprs: dict[tuple[int, ...], Any],
    attrs: dict[tuple[int, ...], list[list[Any]]],
) -> Any:
    """`triton.compiler.ASTSource` with constexprs and attrs keyed by argument-index paths
    (Gluon's own source class for a `@gluon.jit` function)."""
    if getattr(fn, "is_gluon", lambda: False)():
        from triton.experimental.gluon._runtime import GluonASTSource

        return GluonASTSource(fn, signature, constexprs, attrs)
    from triton.compiler import ASTSource

    return ASTSource(fn, signature, constexprs, attrs)
