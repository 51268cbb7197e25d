"""fp64 references of ops torch has no fp64 kernel for (the program's `reference` templates).

`per_group_mm` computes a grouped GEMM group by group with `torch.matmul`, on any device
and dtype, from the same offsets eager reads (module `ops`, "Grouped GEMMs").
"""

from __future__ import annotations

import torch


def per_group_mm(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor | None) -> torch.Tensor:
    """`F.grouped_mm(a, b, offs=offs)` computed per group in a's dtype (fp64 for the oracle)."""
    if offs is None:  # 3-D x 3-D: a batched matmul
        return torch.matmul(a, b)
    ends = [int(e) for e in offs.tolist()]
    starts = [0, *ends[:-1]]
    if a.dim() == 2 and b.dim() == 2:  # groups along K: (G, M, N)
        parts = [a[:, s:e] @ b[s:e, :] for s, e in zip(starts, ends, strict=True)]
        return torch.stack(parts) if parts else a.new_zeros(0, a.shape[0], b.shape[1])
    if a.dim() == 2:  # groups along M: (M, N)
        out = a.new_zeros(a.shape[0], b.shape[-1])
        for g, (s, e) in enumerate(zip(starts, ends, strict=True)):
            out[s:e] = a[s:e] @ b[g]
        return out
    out = a.new_zeros(a.shape[1], b.shape[1])  # groups along N: (M, N)
    for g, (s, e) in enumerate(zip(starts, ends, strict=True)):
        out[:, s:e] = a[g] @ b[:, s:e]
    return out


def autocast_linear(a: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """`F.linear` under autocast on a's device (bf16 on a CPU, fp16 on CUDA), as
    test_aot_inductor.py::test_amp_fallback_random runs it."""
    with torch.autocast(device_type=a.device.type):
        return torch.nn.functional.linear(a, w, bias)


def cexpr_prologue(x: torch.Tensor) -> torch.Tensor:
    """The views before the GEMM of test_cutlass_backend.py::
    test_force_cutlass_backend_aoti_cexpr_codegen: every other column pair folded away by a
    reshape and a slice, made contiguous, then re-viewed with as_strided (sizes x0 // 2)."""
    x0, x1 = x.shape
    x = x.reshape(x0 // 2, x1, 2)[:, :, 0].contiguous()
    return x.as_strided(x.size(), x.stride())


def tiled(x: torch.Tensor) -> torch.Tensor:
    """x repeated 8 x 8, as the persistent-TMA seeds of test_max_autotune.py make 16-byte
    aligned fp16 operands inside the compiled function. A column-major view (an operand the
    seed passes transposed) is repeated as it is stored and transposed after, as the seed's
    `a.repeat(8, 8).T` of its stored `a`: the product then reads a column-major operand."""
    if x.stride(-2) == 1 and x.stride(-1) != 1:
        return x.mT.repeat(8, 8).mT
    return x.repeat(8, 8)


def nonzero_rows(x: torch.Tensor) -> torch.Tensor:
    """x's rows but its last two, picked through torch.nonzero of a mask: the count is
    data-dependent, an unbacked size where dynamo captures nonzero() (dynamo_config
    capture_dynamic_output_shape_ops), as the count of test_zero_grid_with_unbacked_symbols's
    nonzero(x) is under AOTInductor's export. Two rows stay behind so that the input itself is
    never of size 0 or 1, which dynamo would specialise on: the GEMM's M reaches 0 only through
    the data."""
    keep = torch.arange(x.shape[0], device=x.device) < x.shape[0] - 2
    return x.index_select(0, torch.nonzero(keep).squeeze(1))


def diagonal_writes_mm(
    x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, other: torch.Tensor
) -> torch.Tensor:
    """test_mutation_rename's program: (x * y) with `other` written into its diagonal in place,
    times z, then 1 added to the product's diagonal in place; returns that diagonal (a view of
    the product), as the seed does."""
    mul = x * y
    torch.diagonal(mul).copy_(other)
    product = torch.mm(mul, z)
    return torch.diagonal(product).add_(1)


# the helpers op templates may call, by name (the program's namespace)
HELPERS = {
    "per_group_mm": per_group_mm,
    "autocast_linear": autocast_linear,
    "cexpr_prologue": cexpr_prologue,
    "tiled": tiled,
    "nonzero_rows": nonzero_rows,
    "diagonal_writes_mm": diagonal_writes_mm,
}
