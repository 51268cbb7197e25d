"""The GEMM kernels the three integration examples plug in: K in blocks, summed in fp32.

Plain PyTorch stands in for a kernel library here, so that the examples run anywhere. The
`aten_` kernels are for overrides of aten's ops: inside an override of aten::mm they reach aten's
own kernel through the `out=` overload, which an override of the default overload does not
replace; the others call torch.matmul, and serve where no aten op is overridden.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

K_BLOCK = 64  # a kernel's K step; the last block takes what is left


def _blocked(a: torch.Tensor, b: torch.Tensor, product: Callable) -> torch.Tensor:
    """a @ b over the last two dims, in fp32, K_BLOCK columns of a at a time."""
    k = a.shape[-1]
    total = product(a[..., :0].float(), b[..., :0, :].float())  # zeros of the result's shape
    for start in range(0, k, K_BLOCK):
        stop = min(start + K_BLOCK, k)
        total = total + product(a[..., start:stop].float(), b[..., start:stop, :].float())
    return total


def _aten_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = a.new_empty((*a.shape[:-1], b.shape[-1]))
    if a.dim() == 3:
        return torch.ops.aten.bmm.out(a, b, out=out)
    return torch.ops.aten.mm.out(a, b, out=out)


def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _blocked(a, b, torch.matmul).to(a.dtype)


def bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _blocked(a, b, torch.matmul).to(a.dtype)


def addmm(
    c: torch.Tensor, a: torch.Tensor, b: torch.Tensor, *, beta: float = 1, alpha: float = 1
) -> torch.Tensor:
    return _with_addend(_blocked(a, b, torch.matmul), c, beta, alpha).to(a.dtype)


def aten_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _blocked(a, b, _aten_product).to(a.dtype)


def aten_bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _blocked(a, b, _aten_product).to(a.dtype)


def aten_addmm(
    c: torch.Tensor, a: torch.Tensor, b: torch.Tensor, *, beta: float = 1, alpha: float = 1
) -> torch.Tensor:
    return _with_addend(_blocked(a, b, _aten_product), c, beta, alpha).to(a.dtype)


def _with_addend(product: torch.Tensor, c: torch.Tensor, beta: float, alpha: float):
    out = product * alpha
    if beta != 0:  # beta = 0 ignores C, NaN and Inf included (aten's contract)
        out = out + c.float() * beta
    return out
