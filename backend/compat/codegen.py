"""Compiling kernels for a GPU arch, also without that GPU (the cross-compiler's needs)."""

from __future__ import annotations

from collections.abc import Iterable
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


def settle_cache_keys(functions: Iterable[Any]) -> None:
    """Compute each @triton.jit function's Triton cache key now, in the order given, so that
    every process keys the kernels alike.

    Triton 3.6-3.7.1 (`DependenciesFinder._update_hash`) merges a called function's globals
    into its caller's before it computes the called function's key: a key then depends on which
    functions the process hashed earlier (the kernels share helpers). On `nvidia-h200-x2`
    (2026-11-30, e8050d1) two of 32 processes whose first compile was `splitk_gemm_kernel` keyed
    `gemm_kernel` as d012d2d6 and bd640a07 where the other 30 had 11b67632, and compiled again
    what the others had compiled (965 distinct Triton kernels for 882 signatures). Fixed upstream
    by triton-lang/triton#10494 (2026-06-05), after 3.7.1. Costs 16 ms for the 31 pieces on the
    dev CPU."""
    for function in functions:
        _ = function.cache_key


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
