"""Launch planning: the tensors of one GEMM call -> a kernel spec, staged operands, ABI strides.

`plan_gemm` picks the kernel (`codegen.KernelSpec`: dtypes, majorness, epilogue) and stages the
operands. CUTLASS's TMA kernels need 16-byte aligned bases and leading strides, a unit stride in
the contiguous mode, positive batch strides, and contiguous extents (K, or M/N for M-/N-major
operands and the row-major output) that are multiples of 16 bytes. An operand that breaks a rule
is copied into a fresh zero-padded buffer of the same majorness (K padding adds zero products, M/N
padding adds rows and columns that are cut off the result); every copy is listed in the plan.
addmm's C becomes the epilogue's source: a TMA-loaded matrix, or a row / column vector broadcast
in the epilogue (bias shapes (N,), (1, N), (M, 1)); beta = 0 never reads C. Sizes with M, N or
batch 0 return an empty result and K = 0 applies the epilogue to a zero accumulator in torch;
neither launches a kernel (`SkippedLaunch`), and the plan says so.

Planning is pure torch on any device: the same plan is launched on a GPU (`launch.gpu_launch`),
computed in torch for tests (`launch.emulate_launch`), or only recorded (the survey).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from gemmconf.gemm import dtypes
from gemmconf.gemm.dtypes import FP8_TORCH
from gemmconf.gemm.scaling import classify
from gemmconf_cutlass import codegen

TMA_BYTES = 16  # TMA: base, leading and batch strides, contiguous extents in 16-byte units

FP8_DTYPES = FP8_TORCH  # the fp8 input dtypes, as the domain package lists them
GEMM_DTYPES = (torch.float16, torch.bfloat16)  # what the 16-bit kernels take
SCALED_OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)  # the fp8 kernels' outputs


def short_name(dtype: torch.dtype) -> str:
    """A dtype by the suite's name for it (`gemmconf.gemm.dtypes`), else torch's."""
    return dtypes.name_of(dtype) or str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class CutlassProblem:
    """The GEMM the kernel computes (padded sizes) and the result's true sizes."""

    batch: int
    m: int
    n: int
    k: int
    true_mnk: tuple[int, int, int]


@dataclass(frozen=True)
class CutlassOperand:
    """Memory a kernel reads or writes: the tensor whose data_ptr it gets and its ABI strides.

    a: (M, K, L) element strides; b: (N, K, L); a C matrix and D: (M, N, L) with a unit N
    stride; a C row or column vector: (1, L), a unit element stride and its batch stride.
    """

    tensor: torch.Tensor
    strides: tuple[int, ...]


@dataclass
class CutlassLaunchPlan:
    op: str
    spec: codegen.KernelSpec
    problem: CutlassProblem
    a: CutlassOperand
    b: CutlassOperand
    d: CutlassOperand
    c: CutlassOperand | None = None
    scale_a: torch.Tensor | None = None
    scale_b: torch.Tensor | None = None
    alpha: float = 1.0
    beta: float = 0.0
    notes: list[str] = field(default_factory=list)
    result_shape: tuple[int, ...] = ()

    def result(self) -> torch.Tensor:
        """The output as eager returns it: (M, N) or (L, M, N), contiguous."""
        m, n, _ = self.problem.true_mnk
        out = self.d.tensor
        if (self.problem.m, self.problem.n) != (m, n):
            out = out[:, :m, :n].contiguous()
        return out.reshape(self.result_shape)

    def describe(self) -> str:
        p = self.problem
        m, n, k = p.true_mnk
        padded = (
            "" if (p.m, p.n, p.k) == (m, n, k) else f" (kernel problem M={p.m} N={p.n} K={p.k})"
        )
        lines = [
            f"launch {codegen.kernel_name(self.spec)}: L={p.batch} M={m} N={n} K={k}{padded}",
            f"  {self.spec.describe()}",
        ]
        if self.spec.scaling == "alpha" or self.spec.source != "none":
            lines.append(f"  alpha={self.alpha!r} beta={self.beta!r}")
        lines += [f"  {note}" for note in self.notes]
        return "\n".join(lines)


@dataclass(frozen=True)
class SkippedLaunch:
    """A call whose sizes need no kernel (M, N, L or K zero); computed here, said in the plan."""

    op: str
    reason: str
    output: torch.Tensor

    def describe(self) -> str:
        return f"no launch: {self.reason}"


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _alignment(dtype: torch.dtype) -> int:
    """Elements per 16 bytes."""
    return TMA_BYTES // dtype.itemsize


def _tma_ready(t: torch.Tensor, unit_dim: int) -> str | None:
    """None when TMA can read the 3-D view `t` with `unit_dim` (1 or 2) contiguous, else why not."""
    size = t.itemsize
    lead_dim = 3 - unit_dim
    if t.shape[unit_dim] > 1 and t.stride(unit_dim) != 1:
        return f"stride {t.stride(unit_dim)} in its contiguous dim"
    if t.shape[lead_dim] > 1 and (t.stride(lead_dim) <= 0 or t.stride(lead_dim) * size % TMA_BYTES):
        return f"leading stride {t.stride(lead_dim)} is not a positive multiple of 16 bytes"
    if t.shape[0] > 1 and (t.stride(0) <= 0 or t.stride(0) * size % TMA_BYTES):
        return f"batch stride {t.stride(0)} is not a positive multiple of 16 bytes"
    if t.data_ptr() % TMA_BYTES:
        return "base address not 16-byte aligned"
    return None


def _stage(
    t: torch.Tensor, unit_dim: int, padded: tuple[int, int], what: str, notes: list[str]
) -> torch.Tensor:
    """A 3-D (L, R, C) tensor TMA can read with `unit_dim` contiguous, at least `padded` (R, C).

    Returned as is when legal and unpadded; else copied into a zeroed buffer of that majorness.
    """
    batch, rows, cols = t.shape
    pad_rows, pad_cols = padded
    reason = _tma_ready(t, unit_dim)
    if reason is None and (rows, cols) == (pad_rows, pad_cols):
        return t
    if reason is None:
        reason = f"padded from {rows}x{cols} to {pad_rows}x{pad_cols} (extents of 16 bytes)"
    if unit_dim == 2:
        buffer = torch.zeros((batch, pad_rows, pad_cols), dtype=t.dtype, device=t.device)
    else:
        buffer = torch.zeros((batch, pad_cols, pad_rows), dtype=t.dtype, device=t.device)
        buffer = buffer.transpose(1, 2)
    buffer[:, :rows, :cols] = t
    notes.append(f"{what}: copied ({reason})")
    return buffer


def _strides(t: torch.Tensor, unit_dim: int) -> tuple[int, int, int]:
    """(rows, cols, batch) element strides of a staged tensor, unit stride exact, batch positive."""
    strides = [t.stride(1), t.stride(2)]
    strides[unit_dim - 1] = 1
    lead = 3 - unit_dim
    if t.shape[lead] <= 1:  # a size-1 leading dim: any aligned stride covering the row
        strides[lead - 1] = _round_up(max(t.shape[unit_dim], 1), _alignment(t.dtype))
    batch = t.stride(0)
    if t.shape[0] <= 1:  # TMA wants a positive batch stride even for one batch
        batch = max(strides[0] * t.shape[1], strides[1] * t.shape[2], _alignment(t.dtype))
    return strides[0], strides[1], batch


def _major(t: torch.Tensor, inner: str, outer: str) -> str:
    """The majorness to read the 3-D (L, R, C) view `t` with: `inner` when C is contiguous."""
    if t.shape[2] == 1 or t.stride(2) == 1:
        return inner
    if t.shape[1] == 1 or t.stride(1) == 1:
        return outer
    return inner  # neither dim contiguous: it is copied, K-major


def _vector(t: torch.Tensor, length: int, what: str, notes: list[str]) -> torch.Tensor:
    """A (L', n) view with unit stride and at least `length` columns; copied when it has not."""
    count = t.shape[1]
    if (count <= 1 or t.stride(1) == 1) and count == length:
        return t
    buffer = torch.zeros((t.shape[0], length), dtype=t.dtype, device=t.device)
    buffer[:, :count] = t
    notes.append(f"{what}: copied (unit stride, padded to {length})")
    return buffer


def _source(
    c: torch.Tensor, batch: int, m: int, n: int, padded: tuple[int, int], notes: list[str]
) -> tuple[str, CutlassOperand]:
    """addmm's C (or a bias) as the epilogue's source: matrix, row vector or column vector."""
    view = _expanded(c, batch, m, n)
    pad_m, pad_n = padded
    broadcast_m = m == 1 or view.stride(1) == 0
    broadcast_n = n == 1 or view.stride(2) == 0
    if broadcast_m:  # a row (or a scalar, made a row)
        row = view[:, 0, :]
        if batch > 1 and row.stride(0) == 0:
            row = row[:1]
        row = _vector(row, pad_n, "C (row vector)", notes)
        return "row", CutlassOperand(row, (1, row.stride(0) if row.shape[0] > 1 else 0))
    if broadcast_n:
        col = view[:, :, 0]
        if batch > 1 and col.stride(0) == 0:
            col = col[:1]
        col = _vector(col, pad_m, "C (column vector)", notes)
        return "col", CutlassOperand(col, (1, col.stride(0) if col.shape[0] > 1 else 0))
    staged = _stage(view, 2, padded, "C", notes)
    rows, _, batch = _strides(staged, 2)
    return "matrix", CutlassOperand(staged, (rows, 1, batch))


def plan_gemm(
    op: str,
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    c: torch.Tensor | None = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    scale_a: torch.Tensor | None = None,
    scale_b: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
    use_fast_accum: bool = False,
) -> CutlassLaunchPlan | SkippedLaunch:
    """The launch for one GEMM call on these tensors (any device: the copies run where they are).

    op: mm | addmm | bmm | baddbmm (c, alpha, beta) | scaled_mm (scale_a, scale_b, bias,
    out_dtype, use_fast_accum). Raises NotImplementedError for what the kernels do not cover.
    """
    batched = op in ("bmm", "baddbmm")
    a3, b3 = (a, b) if batched else (a.unsqueeze(0), b.unsqueeze(0))
    batch, m, k = a3.shape
    n = b3.shape[2]
    result_shape = (batch, m, n) if batched else (m, n)
    fp8 = op == "scaled_mm"
    out = (out_dtype or a.dtype) if fp8 else a.dtype
    if fp8 and out not in SCALED_OUT_DTYPES:
        raise NotImplementedError(
            f"cutlass backend: _scaled_mm to {short_name(out)} is not "
            "implemented (outputs bf16, fp16, fp32)"
        )
    scaling = _scaling(scale_a, scale_b, m, n, k) if fp8 else "alpha"
    if fp8:
        c, alpha, beta = bias, 1.0, 1.0 if bias is not None else 0.0
    if 0 in (batch, m, n):
        return SkippedLaunch(
            op,
            f"empty result ({'x'.join(map(str, result_shape))})",
            torch.empty(result_shape, dtype=out, device=a.device),
        )
    if k == 0:
        return SkippedLaunch(
            op,
            "K = 0: the epilogue of a zero accumulator, computed by torch",
            _k0_result(c, beta, batch, m, n, out, result_shape, a.device),
        )

    notes: list[str] = []
    a_major = "k" if fp8 else _major(a3, "k", "m")
    b_major = "k" if fp8 else _major(b3, "n", "k")
    align_ab = _alignment(a.dtype)
    pad_k = _round_up(k, align_ab) if "k" in (a_major, b_major) else k
    pad_m = _round_up(m, align_ab) if a_major == "m" else m
    n_align = _alignment(out)
    if b_major == "n":
        n_align = max(n_align, align_ab)
    has_source = c is not None and beta != 0
    if has_source and _source_is_matrix(c, batch, m, n):
        n_align = max(n_align, _alignment(c.dtype))
    pad_n = _round_up(n, n_align)

    a_staged = _stage(a3, 2 if a_major == "k" else 1, (pad_m, pad_k), "a", notes)
    sm, sk, sl = _strides(a_staged, 2 if a_major == "k" else 1)
    a_op = CutlassOperand(a_staged, (sm, sk, sl))
    bt = b3.transpose(1, 2)  # CUTLASS's B is (N, K)
    b_staged = _stage(bt, 2 if b_major == "k" else 1, (pad_n, pad_k), "b", notes)
    sn, sk, sl = _strides(b_staged, 2 if b_major == "k" else 1)
    b_op = CutlassOperand(b_staged, (sn, sk, sl))
    d = torch.empty((batch, pad_m, pad_n), dtype=out, device=a.device)
    d_op = CutlassOperand(d, (pad_n, 1, pad_m * pad_n))

    source, c_op = "none", None
    if has_source:
        source, c_op = _source(c, batch, m, n, (pad_m, pad_n), notes)
    if (pad_m, pad_n) != (m, n):
        notes.append(f"D: computed {pad_m}x{pad_n}, the result is its {m}x{n} corner (copied)")

    vec_a = vec_b = None
    if scaling == "tensorwise":
        vec_a, vec_b = scale_a.reshape(1).contiguous(), scale_b.reshape(1).contiguous()
    elif scaling == "rowwise":
        vec_a = _vector(scale_a.reshape(1, m), pad_m, "scale_a", notes)[0]
        vec_b = _vector(scale_b.reshape(1, n), pad_n, "scale_b", notes)[0]
    spec = codegen.KernelSpec(
        a_dtype=short_name(a.dtype),
        b_dtype=short_name(b.dtype),
        out_dtype=short_name(out),
        a_major=a_major,
        b_major=b_major,
        scaling=scaling,
        source=source,
        source_dtype=None if source == "none" else short_name(c.dtype),
        fast_accum=fp8 and use_fast_accum,
    )
    return CutlassLaunchPlan(
        op,
        spec,
        CutlassProblem(batch, pad_m, pad_n, pad_k, (m, n, k)),
        a_op,
        b_op,
        d_op,
        c=c_op,
        scale_a=vec_a,
        scale_b=vec_b,
        alpha=float(alpha),
        beta=float(beta),
        notes=notes,
        result_shape=result_shape,
    )


def _expanded(c: torch.Tensor, batch: int, m: int, n: int) -> torch.Tensor:
    """addmm's/baddbmm's C broadcast to the (L, M, N) result, as a view."""
    if c.dim() == 3:
        return c.expand(batch, m, n)
    return c.expand(m, n).unsqueeze(0).expand(batch, m, n)


def _source_is_matrix(c: torch.Tensor, batch: int, m: int, n: int) -> bool:
    view = _expanded(c, batch, m, n)
    return not (m == 1 or view.stride(-2) == 0 or n == 1 or view.stride(-1) == 0)


def _scaling(scale_a: torch.Tensor, scale_b: torch.Tensor, m: int, n: int, k: int) -> str:
    """The fp8 scaling recipe of these scales (the domain package's classifier), when the kernels
    implement it: tensorwise and rowwise."""
    recipe = classify(scale_a, scale_b, m, n, k)
    fp32 = scale_a.dtype == torch.float32 and scale_b.dtype == torch.float32
    if recipe is not None and recipe.name in ("tensorwise", "rowwise") and fp32:
        return recipe.name
    shown = "unrecognised" if recipe is None else recipe.name
    raise NotImplementedError(
        f"cutlass backend: _scaled_mm scales {tuple(scale_a.shape)} {scale_a.dtype} x "
        f"{tuple(scale_b.shape)} {scale_b.dtype} ({shown}) are not implemented; fp32 tensorwise "
        "and rowwise are"
    )


def _k0_result(
    c: torch.Tensor | None,
    beta: float,
    batch: int,
    m: int,
    n: int,
    out: torch.dtype,
    shape: tuple[int, ...],
    device: torch.device,
) -> torch.Tensor:
    result = torch.zeros((batch, m, n), dtype=torch.float32, device=device)
    if c is not None and beta != 0:
        result = result + beta * _expanded(c, batch, m, n).float()
    return result.to(out).reshape(shape)
