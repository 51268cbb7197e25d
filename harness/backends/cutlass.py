"""CUTLASS as a system under test: `--backend cutlass` (sm90 / Hopper GPUs).

Per `compile()`, `torch.compile(fn, backend=CutlassCompiler(...))`: dynamo hands each graph to
`aot_autograd`, and the forward (and backward) compiler rewrites the functional aten graph. Every
GEMM node becomes a call of its own:

- `CutlassGemm` for what the kernels implement: `aten.mm`, `addmm`, `bmm`, `baddbmm` on fp16/bf16
  and `aten._scaled_mm` on fp8 (e4m3fn/e5m2, tensorwise or rowwise fp32 scales, optional bias,
  out bf16/fp16/fp32, `use_fast_accum` honoured). `linear` and `matmul` arrive as these ops.
- `UnsupportedGemm` for every other GEMM (fp32/tf32/fp64, `_int_mm`, blockwise or fp8-output
  `_scaled_mm`, `scale_result`, `mv`/`dot`/... and non-default overloads): it raises
  NotImplementedError naming the gap, so the item fails loudly; suites/expectations/cutlass.yaml
  lists those scenarios. (It first runs the eager op on the same inputs: when eager rejects them,
  eager's own error is raised instead, which is what an error scenario checks.)

Everything else in the graph (views, pointwise epilogues, casts) stays as eager aten ops.

At run time a `CutlassGemm` plans the launch for the actual tensors (`plan_gemm`): the kernel
(`cutlass_codegen.KernelSpec`: dtypes, majorness, epilogue), and operand staging. CUTLASS's TMA
kernels need 16-byte aligned bases and leading strides, a unit stride in the contiguous mode,
positive batch strides, and contiguous extents (K, or M/N for M-/N-major operands and the
row-major output) that are multiples of 16 bytes. An operand that breaks a rule is copied into a
fresh zero-padded buffer of the same majorness (K padding adds zero products, M/N padding adds
rows and columns that are cut off the result); every copy is listed in the plan artifact. addmm's
C becomes the epilogue's source: a TMA-loaded matrix, or a row / column vector broadcast in the
epilogue (bias shapes (N,), (1, N), (M, 1)); beta = 0 never reads C. Sizes with M, N or batch 0
return an empty result and K = 0 applies the epilogue to a zero accumulator in torch; neither
launches a kernel, and the plan artifact says so.

Kernels are rendered and compiled by `cutlass_codegen` (nvcc, cached on disk by source hash) and
loaded with ctypes: one shared library per kernel with an `extern "C"` launch function that takes
raw device pointers, strides and the current CUDA stream.

Artifacts: `python` (the rewritten graphs and every launch: kernel, problem, staging notes),
`cuda` (the `.cu` source of each kernel used), `ptx` and `sass` (from the kernel's build; SASS
where a cuobjdump is found). `compiles()` counts dynamo's invocations of the backend.

No GPU: `availability()` says so and every item is skipped; the codegen and nvcc compile-only
path runs in tests/test_cutlass_backend.py. `CutlassCompiler(launcher=emulate_launch)` runs the
whole graph rewrite and launch planning on CPU tensors and computes each planned launch with
torch from the exact pointers-and-strides view the kernel would get (tests only).

Building a kernel takes nvcc about a minute (the backend's `compile_timeout_s` gives items the
time for it under `--item-timeout auto`). Before a suite run on a GPU, build what it needs in
parallel, which is much faster (planning runs on the CPU; kernels land in the cache):

    python -m gemmconf.backends.cutlass 'fp8/*' 'first/*' --build --jobs 16

(`--check` instead computes every planned launch with `emulate_launch` and compares with eager.)
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.fx as fx

from gemmconf.backends import cutlass_codegen as codegen
from gemmconf.backends.dynamo import DynamoCompiled

if TYPE_CHECKING:
    from gemmconf.backends.base import RunOptions

aten = torch.ops.aten

TMA_BYTES = 16  # TMA: base, leading and batch strides, contiguous extents in 16-byte units

NO_GPU = (
    "the cutlass backend launches kernels on a CUDA GPU; none found (codegen and nvcc "
    "compile-only checks run in tests/test_cutlass_backend.py)"
)

DTYPE_NAMES: dict[torch.dtype, str] = {
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float32: "fp32",
    torch.float8_e4m3fn: "e4m3fn",
    torch.float8_e5m2: "e5m2",
}
GEMM_DTYPES = (torch.float16, torch.bfloat16)
FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)
SCALED_OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)

GEMM_OPS: dict[Any, str] = {
    aten.mm.default: "mm",
    aten.addmm.default: "addmm",
    aten.bmm.default: "bmm",
    aten.baddbmm.default: "baddbmm",
    aten._scaled_mm.default: "scaled_mm",
}
# Matrix products the kernels do not cover: any overload of these packets not in GEMM_OPS.
_GEMM_PACKETS = (
    "mm",
    "addmm",
    "bmm",
    "baddbmm",
    "_scaled_mm",
    "_int_mm",
    "mv",
    "addmv",
    "dot",
    "vdot",
    "addbmm",
    "matmul",
    "linear",
    "_scaled_grouped_mm",
    "_grouped_mm",
    "_scaled_mm_v2",
    "_weight_int8pack_mm",
    "_weight_int4pack_mm",
)
OPERAND_NAMES = {
    "mm": ("self", "mat2"),
    "addmm": ("mat1", "mat2"),
    "bmm": ("self", "mat2"),
    "baddbmm": ("batch1", "batch2"),
    "scaled_mm": ("self", "mat2"),
}


def _short(dtype: torch.dtype) -> str:
    return DTYPE_NAMES.get(dtype, str(dtype).removeprefix("torch."))


# ---------------------------------------------------------------------------------------------
# Launch planning: tensors -> kernel spec, staged operands, ABI arguments


@dataclass(frozen=True)
class Problem:
    """The GEMM the kernel computes (padded sizes) and the result's true sizes."""

    batch: int
    m: int
    n: int
    k: int
    true_mnk: tuple[int, int, int]


@dataclass
class Operand:
    """Memory a kernel reads or writes: the tensor whose data_ptr it gets and its ABI strides.

    a: (M, K, L) element strides; b: (N, K, L); a C matrix and D: (M, N, L) with a unit N
    stride; a C row or column vector: (1, L), a unit element stride and its batch stride.
    """

    tensor: torch.Tensor
    strides: tuple[int, ...]


@dataclass
class LaunchPlan:
    op: str
    spec: codegen.KernelSpec
    problem: Problem
    a: Operand
    b: Operand
    d: Operand
    c: Operand | None = None
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


@dataclass
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
) -> tuple[str, Operand]:
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
        return "row", Operand(row, (1, row.stride(0) if row.shape[0] > 1 else 0))
    if broadcast_n:
        col = view[:, :, 0]
        if batch > 1 and col.stride(0) == 0:
            col = col[:1]
        col = _vector(col, pad_m, "C (column vector)", notes)
        return "col", Operand(col, (1, col.stride(0) if col.shape[0] > 1 else 0))
    staged = _stage(view, 2, padded, "C", notes)
    rows, _, batch = _strides(staged, 2)
    return "matrix", Operand(staged, (rows, 1, batch))


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
) -> LaunchPlan | SkippedLaunch:
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
            f"cutlass backend: _scaled_mm to {_short(out)} is not "
            "implemented (outputs bf16, fp16, fp32)"
        )
    scaling = _scaling(scale_a, scale_b, m, n) if fp8 else "alpha"
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
    a_op = Operand(a_staged, (sm, sk, sl))
    bt = b3.transpose(1, 2)  # CUTLASS's B is (N, K)
    b_staged = _stage(bt, 2 if b_major == "k" else 1, (pad_n, pad_k), "b", notes)
    sn, sk, sl = _strides(b_staged, 2 if b_major == "k" else 1)
    b_op = Operand(b_staged, (sn, sk, sl))
    d = torch.empty((batch, pad_m, pad_n), dtype=out, device=a.device)
    d_op = Operand(d, (pad_n, 1, pad_m * pad_n))

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
        a_dtype=_short(a.dtype),
        b_dtype=_short(b.dtype),
        out_dtype=_short(out),
        a_major=a_major,
        b_major=b_major,
        scaling=scaling,
        source=source,
        source_dtype=None if source == "none" else _short(c.dtype),
        fast_accum=fp8 and use_fast_accum,
    )
    return LaunchPlan(
        op,
        spec,
        Problem(batch, pad_m, pad_n, pad_k, (m, n, k)),
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


def _scaling(scale_a: torch.Tensor, scale_b: torch.Tensor, m: int, n: int) -> str:
    if scale_a.dtype != torch.float32 or scale_b.dtype != torch.float32:
        raise NotImplementedError(
            "cutlass backend: _scaled_mm scales other than fp32 (block "
            "scaling formats) are not implemented"
        )
    if scale_a.numel() == 1 and scale_b.numel() == 1:
        return "tensorwise"
    if tuple(scale_a.shape) == (m, 1) and tuple(scale_b.shape) == (1, n):
        return "rowwise"
    raise NotImplementedError(
        f"cutlass backend: _scaled_mm scales {tuple(scale_a.shape)} x {tuple(scale_b.shape)} "
        "(blockwise) are not implemented; tensorwise and rowwise are"
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


# ---------------------------------------------------------------------------------------------
# Launching: one shared library per kernel, called through ctypes


class _Args(ctypes.Structure):
    """Mirror of `gemmconf_cutlass_args` in the generated shim (cutlass_codegen._ARGS_STRUCT)."""

    _fields_ = [
        ("abi", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("m", ctypes.c_int32),
        ("n", ctypes.c_int32),
        ("k", ctypes.c_int32),
        ("l", ctypes.c_int32),
        ("a", ctypes.c_void_p),
        ("a_stride_m", ctypes.c_int64),
        ("a_stride_k", ctypes.c_int64),
        ("a_stride_l", ctypes.c_int64),
        ("b", ctypes.c_void_p),
        ("b_stride_n", ctypes.c_int64),
        ("b_stride_k", ctypes.c_int64),
        ("b_stride_l", ctypes.c_int64),
        ("c", ctypes.c_void_p),
        ("c_stride_m", ctypes.c_int64),
        ("c_stride_l", ctypes.c_int64),
        ("d", ctypes.c_void_p),
        ("d_stride_m", ctypes.c_int64),
        ("d_stride_l", ctypes.c_int64),
        ("scale_a", ctypes.c_void_p),
        ("scale_b", ctypes.c_void_p),
        ("alpha", ctypes.c_float),
        ("beta", ctypes.c_float),
        ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_uint64),
        ("stream", ctypes.c_void_p),
    ]


def launch_args(plan: LaunchPlan, *, device: int = 0, stream: int = 0) -> _Args:
    """The ABI struct for a plan (workspace left empty)."""
    p = plan.problem
    args = _Args(abi=codegen.ABI_VERSION, device=device, m=p.m, n=p.n, k=p.k, l=p.batch)
    args.a = plan.a.tensor.data_ptr()
    args.a_stride_m, args.a_stride_k, args.a_stride_l = plan.a.strides
    args.b = plan.b.tensor.data_ptr()
    args.b_stride_n, args.b_stride_k, args.b_stride_l = plan.b.strides
    if plan.c is not None:
        args.c = plan.c.tensor.data_ptr()
        if plan.spec.source == "matrix":
            args.c_stride_m, _, args.c_stride_l = plan.c.strides
        else:
            args.c_stride_l = plan.c.strides[1]
    args.d = plan.d.tensor.data_ptr()
    args.d_stride_m, _, args.d_stride_l = plan.d.strides
    if plan.scale_a is not None:
        args.scale_a, args.scale_b = plan.scale_a.data_ptr(), plan.scale_b.data_ptr()
    args.alpha, args.beta = plan.alpha, plan.beta
    args.stream = stream
    return args


class KernelLibrary:
    """One compiled kernel, loaded: `run(plan)` launches it on the current CUDA stream."""

    def __init__(self, spec: codegen.KernelSpec) -> None:
        self.spec = spec
        self.name = codegen.kernel_name(spec)
        self.built = codegen.build(codegen.render(spec), self.name, ("so", "sass"))
        self._lib = _load_library(str(self.built.path("so")))
        for symbol, restype, argtypes in (
            ("gemmconf_abi_version", ctypes.c_int, []),
            ("gemmconf_last_error", ctypes.c_char_p, []),
            (
                "gemmconf_workspace_size",
                ctypes.c_int,
                [ctypes.POINTER(_Args), ctypes.POINTER(ctypes.c_uint64)],
            ),
            ("gemmconf_run", ctypes.c_int, [ctypes.POINTER(_Args)]),
        ):
            function = getattr(self._lib, symbol)
            function.restype, function.argtypes = restype, argtypes
        abi = self._lib.gemmconf_abi_version()
        if abi != codegen.ABI_VERSION:
            raise RuntimeError(
                f"{self.built.path('so')}: ABI {abi}, expected "
                f"{codegen.ABI_VERSION} (a stale cache entry?)"
            )

    def run(self, plan: LaunchPlan) -> None:
        device = plan.d.tensor.device
        stream = torch.cuda.current_stream(device)
        args = launch_args(plan, device=device.index or 0, stream=stream.cuda_stream)
        size = ctypes.c_uint64(0)
        self._check(self._lib.gemmconf_workspace_size(ctypes.byref(args), ctypes.byref(size)))
        workspace = None
        if size.value:  # stream-ordered: freed after the launch, reused only after it
            workspace = torch.empty(size.value, dtype=torch.uint8, device=device)
            args.workspace, args.workspace_bytes = workspace.data_ptr(), size.value
        self._check(self._lib.gemmconf_run(ctypes.byref(args)))

    def _check(self, status: int) -> None:
        if status != 0:
            message = (self._lib.gemmconf_last_error() or b"").decode(errors="replace")
            raise RuntimeError(f"CUTLASS kernel {self.name} failed ({status}): {message}")


def _load_library(path: str) -> ctypes.CDLL:
    """dlopen a kernel library. It needs libcudart.so.13, which a CUDA torch has loaded already;
    otherwise (a library built elsewhere, no rpath match) load the runtime torch ships first."""
    try:
        return ctypes.CDLL(path)
    except OSError as exc:
        if "libcudart" not in str(exc):
            raise
        import glob
        import os

        site = os.path.dirname(os.path.dirname(torch.__file__))
        for runtime in sorted(
            glob.glob(os.path.join(site, "nvidia", "*", "lib", "libcudart.so.*"))
        ):
            ctypes.CDLL(runtime, mode=ctypes.RTLD_GLOBAL)
            return ctypes.CDLL(path)
        raise


_LIBRARIES: dict[codegen.KernelSpec, KernelLibrary] = {}
_LIBRARIES_LOCK = threading.Lock()


def kernel_library(spec: codegen.KernelSpec) -> KernelLibrary:
    """The loaded library of `spec`, built (or found in the cache) on first use in the process."""
    with _LIBRARIES_LOCK:
        library = _LIBRARIES.get(spec)
        if library is None:
            library = _LIBRARIES[spec] = KernelLibrary(spec)
        return library


def gpu_launch(plan: LaunchPlan) -> codegen.Built:
    """Launch a plan on its tensors' GPU; returns the kernel's cache entry (for artifacts)."""
    library = kernel_library(plan.spec)
    library.run(plan)
    return library.built


def emulate_launch(plan: LaunchPlan) -> None:
    """What the kernel computes for `plan`, in torch, from the same pointers-and-strides view.

    For tests on machines without a GPU: checks that a plan's strides, padding, scales and source
    describe the GEMM, independently of CUTLASS. Writes D like the kernel does.
    """
    p = plan.problem

    def view(operand: Operand, shape: tuple[int, ...], strides: tuple[int, ...]) -> torch.Tensor:
        t = operand.tensor
        return torch.as_strided(t, shape, strides, t.storage_offset())

    sm, sk, sl = plan.a.strides
    a = view(plan.a, (p.batch, p.m, p.k), (sl, sm, sk)).float()
    sn, sk, sl = plan.b.strides
    b = view(plan.b, (p.batch, p.n, p.k), (sl, sn, sk)).float()
    acc = a @ b.transpose(1, 2)
    spec = plan.spec
    if spec.scaling == "alpha":
        scaled = plan.alpha * acc
    elif spec.scaling == "tensorwise":
        scaled = acc * (plan.scale_a[0] * plan.scale_b[0])
    else:
        scaled = plan.scale_a[: p.m].view(1, p.m, 1) * (plan.scale_b[: p.n].view(1, 1, p.n) * acc)
    if spec.source != "none":
        c = plan.c
        if spec.source == "matrix":
            cm, _, cl = c.strides
            source = view(c, (p.batch, p.m, p.n), (cl, cm, 1))
        elif spec.source == "row":
            source = view(c, (p.batch, 1, p.n), (c.strides[1], 0, 1))
        else:
            source = view(c, (p.batch, p.m, 1), (c.strides[1], 1, 0))
        scaled = plan.beta * source.float() + scaled
    dm, _, dl = plan.d.strides
    view(plan.d, (p.batch, p.m, p.n), (dl, dm, 1)).copy_(scaled.to(plan.d.tensor.dtype))


# ---------------------------------------------------------------------------------------------
# The callables a rewritten graph holds


@dataclass
class LaunchRecord:
    plan_text: str
    spec: codegen.KernelSpec | None  # None: no kernel was needed
    built: codegen.Built | None  # None: not built here (an emulated launch)


Launcher = Callable[[LaunchPlan], "codegen.Built | None"]


def _bind(node: fx.Node) -> dict[str, Any]:
    """A node's arguments by schema name, defaults filled in."""
    schema = node.target._schema  # type: ignore[union-attr]
    bound: dict[str, Any] = {}
    for i, arg in enumerate(schema.arguments):
        if i < len(node.args):
            bound[arg.name] = node.args[i]
        elif arg.name in node.kwargs:
            bound[arg.name] = node.kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
        else:
            bound[arg.name] = None
    return bound


def _meta(value: Any) -> Any:
    return value.meta.get("val") if isinstance(value, fx.Node) else None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _GraphCall:
    """Common parts of the callables placed in a rewritten graph."""

    def __init__(self, name: str, target: Any) -> None:
        self.target = target  # the aten op it replaces
        # FX names the call after these when it prints the graph's code
        self.__name__ = self.__qualname__ = name
        self.__module__ = "cutlass"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__name__})"

    def raise_like_eager(self, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """Run the eager op: if it rejects the inputs, its own error propagates."""
        self.target(*args, **kwargs)


class UnsupportedGemm(_GraphCall):
    """Stands for a GEMM the kernels do not implement: raises NotImplementedError when called."""

    def __init__(self, name: str, target: Any, reason: str) -> None:
        super().__init__(name, target)
        self.reason = reason

    def describe(self) -> str:
        return f"{self.__name__} <- {self.target}: NOT IMPLEMENTED, raises: {self.reason}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.raise_like_eager(args, kwargs)
        raise NotImplementedError(f"cutlass backend: {self.reason} ({self.target})")


class CutlassGemm(_GraphCall):
    """Stands for one aten GEMM node: plans and launches a CUTLASS kernel per call."""

    def __init__(
        self,
        name: str,
        target: Any,
        op: str,
        params: dict[str, Any],
        launcher: Launcher,
        allow_cpu: bool,
    ) -> None:
        super().__init__(name, target)
        self.op = op
        self.params = params  # alpha/beta, or out_dtype/use_fast_accum: static in the graph
        self.launcher = launcher
        self.allow_cpu = allow_cpu
        self.launches: dict[str, LaunchRecord] = {}

    def describe(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        lines = [f"{self.__name__} <- {self.target}({params})"]
        for text in self.launches:
            lines += ["  " + line for line in text.splitlines()]
        return "\n".join(lines)

    def __call__(self, *tensors: torch.Tensor | None) -> torch.Tensor:
        eager_args, eager_kwargs, plan_kwargs = self._arguments(tensors)
        if tensors[0].device.type != "cuda" and not self.allow_cpu:
            self.raise_like_eager(eager_args, eager_kwargs)
            raise NotImplementedError(
                f"cutlass backend: {tensors[0].device.type} tensors; the "
                "kernels run on CUDA tensors only"
            )
        if self._eager_rejects(tensors):
            self.raise_like_eager(eager_args, eager_kwargs)
        try:
            plan = plan_gemm(self.op, **plan_kwargs)
        except NotImplementedError:
            self.raise_like_eager(eager_args, eager_kwargs)  # invalid inputs: eager's error
            raise
        text = plan.describe()
        if isinstance(plan, SkippedLaunch):
            self.launches.setdefault(text, LaunchRecord(text, None, None))
            return plan.output
        built = self.launcher(plan)
        self.launches.setdefault(text, LaunchRecord(text, plan.spec, built))
        return plan.result()

    def _arguments(
        self, tensors: Sequence[Any]
    ) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
        """The eager op's args and kwargs, and plan_gemm's keyword arguments, for this call."""
        if self.op in ("mm", "bmm"):
            a, b = tensors
            return [a, b], {}, {"a": a, "b": b}
        if self.op in ("addmm", "baddbmm"):
            c, a, b = tensors
            alpha, beta = self.params["alpha"], self.params["beta"]
            return (
                [c, a, b],
                {"beta": beta, "alpha": alpha},
                {"a": a, "b": b, "c": c, "alpha": alpha, "beta": beta},
            )
        a, b, scale_a, scale_b, bias = tensors
        out_dtype, fast = self.params["out_dtype"], self.params["use_fast_accum"]
        eager = [a, b, scale_a, scale_b, bias, None, out_dtype, fast]
        return (
            eager,
            {},
            {
                "a": a,
                "b": b,
                "scale_a": scale_a,
                "scale_b": scale_b,
                "bias": bias,
                "out_dtype": out_dtype,
                "use_fast_accum": fast,
            },
        )

    def _eager_rejects(self, tensors: Sequence[Any]) -> bool:
        """Inputs eager rejects only inside its CUDA kernels (the meta functions let them pass)."""
        if self.op in ("addmm", "baddbmm"):
            c, a, _ = tensors
            return c.dtype != a.dtype  # "self and mat2 must have the same dtype"
        if self.op != "scaled_mm":
            return False
        a, b, _, _, bias = tensors
        out = self.params["out_dtype"] or a.dtype
        if a.shape[1] != b.shape[0]:
            return True  # the meta function never compares K
        if a.dtype == b.dtype == torch.float8_e5m2:
            return True  # "Multiplication of two Float8_e5m2 matrices is not supported"
        return bias is not None and (out == torch.float32 or bias.dtype != out)


# ---------------------------------------------------------------------------------------------
# The graph rewrite and the dynamo backend


def unsupported_reason(op: str, args: dict[str, Any]) -> str | None:
    """Why a GEMM node (by its aten op and bound meta args) is not lowered; None when it is."""
    if op in ("mm", "addmm", "bmm", "baddbmm"):
        first, second = (_meta(args[name]) for name in OPERAND_NAMES[op])
        if first is None or second is None:
            return f"{op} without shape information"
        if first.dtype not in GEMM_DTYPES or second.dtype != first.dtype:
            return (
                f"{op} of {_short(first.dtype)} x {_short(second.dtype)} is not implemented "
                "(fp16 and bf16 are; fp32/tf32 would need tf32 or SIMT kernels)"
            )
        if op in ("addmm", "baddbmm") and not (_number(args["alpha"]) and _number(args["beta"])):
            return f"{op} with symbolic alpha/beta is not implemented"
        return None
    a, b = _meta(args["self"]), _meta(args["mat2"])
    if a is None or b is None:
        return "_scaled_mm without shape information"
    if a.dtype not in FP8_DTYPES or b.dtype not in FP8_DTYPES:
        return f"_scaled_mm of {_short(a.dtype)} x {_short(b.dtype)} is not implemented (fp8 is)"
    if args["scale_result"] is not None:
        return "_scaled_mm with scale_result is not implemented"
    out = args["out_dtype"] or a.dtype
    if out not in SCALED_OUT_DTYPES:
        return f"_scaled_mm to {_short(out)} is not implemented (outputs bf16, fp16, fp32)"
    return None


def _other_gemm(node: fx.Node) -> bool:
    target = node.target
    packet = getattr(target, "overloadpacket", None)
    return (
        node.op == "call_function"
        and target not in GEMM_OPS
        and packet is not None
        and getattr(packet, "__name__", "") in _GEMM_PACKETS
    )


@dataclass
class LoweredGraph:
    index: int
    gm: fx.GraphModule
    calls: list[_GraphCall]

    def plan_text(self) -> str:
        lowered = sum(isinstance(c, CutlassGemm) for c in self.calls)
        lines = [
            f"# cutlass backend: graph {self.index}, {lowered} GEMM(s) lowered to CUTLASS, "
            f"{len(self.calls) - lowered} not implemented"
        ]
        for call in self.calls:
            lines += ["#   " + line for line in call.describe().splitlines()]
        return "\n".join(lines) + "\n" + self.gm.code


def lower_graph(
    gm: fx.GraphModule, *, index: int, launcher: Launcher, allow_cpu: bool = False
) -> LoweredGraph:
    """Replace every GEMM node of an aten graph with a CutlassGemm or an UnsupportedGemm call."""
    graph = gm.graph
    calls: list[_GraphCall] = []
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        name = f"gemm_{index}_{len(calls)}"
        if node.target in GEMM_OPS:
            op = GEMM_OPS[node.target]
            args = _bind(node)
            reason = unsupported_reason(op, args)
            if reason is not None:
                call: _GraphCall = UnsupportedGemm(name, node.target, reason)
                inputs, kwargs = node.args, node.kwargs
            else:
                call, inputs = _supported_call(name, node, op, args, launcher, allow_cpu)
                kwargs = {}
        elif _other_gemm(node):
            reason = f"{node.target} is not implemented by the cutlass backend"
            call = UnsupportedGemm(name, node.target, reason)
            inputs, kwargs = node.args, node.kwargs
        else:
            continue
        with graph.inserting_before(node):
            replacement = graph.call_function(call, tuple(inputs), dict(kwargs))
        replacement.meta.update(node.meta)
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
        calls.append(call)
    graph.lint()
    gm.recompile()
    return LoweredGraph(index, gm, calls)


def _supported_call(
    name: str, node: fx.Node, op: str, args: dict[str, Any], launcher: Launcher, allow_cpu: bool
) -> tuple[CutlassGemm, list[Any]]:
    if op in ("mm", "bmm"):
        params: dict[str, Any] = {}
        inputs = [args["self"], args["mat2"]]
    elif op in ("addmm", "baddbmm"):
        params = {"alpha": args["alpha"], "beta": args["beta"]}
        inputs = [args["self"], *(args[n] for n in OPERAND_NAMES[op])]
    else:
        params = {"out_dtype": args["out_dtype"], "use_fast_accum": bool(args["use_fast_accum"])}
        inputs = [args["self"], args["mat2"], args["scale_a"], args["scale_b"], args["bias"]]
    return CutlassGemm(name, node.target, op, params, launcher, allow_cpu), inputs


class CutlassCompiler:
    """A torch.compile backend bound to its own record of compiles, graphs and launches."""

    def __init__(self, launcher: Launcher = gpu_launch, *, allow_cpu: bool = False) -> None:
        self.launcher = launcher
        self.allow_cpu = allow_cpu
        self.invocations = 0
        self.graphs: list[LoweredGraph] = []

    def __call__(self, gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        from torch._dynamo.backends.common import aot_autograd

        self.invocations += 1

        def compiler(graph: fx.GraphModule, inputs: Sequence[Any]) -> fx.GraphModule:
            lowered = lower_graph(
                graph, index=len(self.graphs), launcher=self.launcher, allow_cpu=self.allow_cpu
            )
            self.graphs.append(lowered)
            return lowered.gm

        return aot_autograd(fw_compiler=compiler)(gm, example_inputs)

    def calls(self) -> list[_GraphCall]:
        return [call for graph in self.graphs for call in graph.calls]

    def artifacts(self) -> dict[str, str]:
        if not self.graphs:
            return {}
        found = {"python": "\n\n".join(graph.plan_text() for graph in self.graphs)}
        sources: dict[codegen.KernelSpec, str] = {}
        built: dict[codegen.KernelSpec, codegen.Built] = {}
        for call in self.calls():
            for record in getattr(call, "launches", {}).values():
                if record.spec is None or record.spec in sources:
                    continue
                if record.built is not None:
                    built[record.spec] = record.built
                    sources[record.spec] = record.built.source
                else:
                    sources[record.spec] = codegen.render(record.spec)
        if sources:
            found["cuda"] = "\n\n".join(sources.values())
        for kind in ("ptx", "sass"):
            texts = [
                f"// {entry.name}\n{entry.text(kind)}"
                for entry in built.values()
                if entry.has(kind)
            ]
            if texts:
                found[kind] = "\n".join(texts)
        return found


# ---------------------------------------------------------------------------------------------
# The Backend protocol


_serial = itertools.count(1)


class CutlassCompiled(DynamoCompiled):
    """One `torch.compile(fn, backend=CutlassCompiler)` with its compile count and artifacts."""

    def artifacts(self) -> dict[str, str]:
        return self.compiler.artifacts()


class CutlassBackend:
    """CUTLASS 3.x sm90 kernels (cutlass_library + nvcc) behind torch.compile."""

    name = "cutlass"
    # Seconds a compile may take (harness/backends/base.py): each kernel missing from the cache
    # is one nvcc run, about a minute, several on a loaded machine.
    compile_timeout_s = 300.0

    def __init__(self) -> None:
        self.target_arch: str | None = None

    def configure(self, options: RunOptions) -> None:
        self.target_arch = options.target_arch

    def availability(self) -> str | None:
        if not torch.cuda.is_available() or torch.version.hip is not None:
            return NO_GPU
        if self.target_arch not in (None, "sm90"):
            return (
                f"the cutlass backend builds sm_90a kernels only (--target-arch {self.target_arch})"
            )
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) != (9, 0):
            return (
                f"the cutlass backend's kernels are sm_90a (Hopper: H100/H200); this GPU, "
                f"{torch.cuda.get_device_name()}, is sm_{major}{minor}"
            )
        try:
            codegen.include_dirs()
        except (codegen.CodegenError, codegen.BuildError) as exc:
            return str(exc)
        if codegen.find_nvcc() is None and not any(codegen.cache_root().glob("*/libkernel.so")):
            return (
                "the cutlass backend needs nvcc to build its kernels (none found: CUDACXX, "
                f"CUDA_HOME, PATH) or prebuilt ones in {codegen.cache_root()}"
            )
        return None

    def compile(
        self, fn: Callable[..., Any], example_inputs: Sequence[Any], *, dynamic: bool | None
    ) -> CutlassCompiled:
        return CutlassCompiled(fn, CutlassCompiler(), dynamic=dynamic)


def make() -> CutlassBackend:
    return CutlassBackend()


# ---------------------------------------------------------------------------------------------
# Survey and prebuild: the kernels a suite run needs, found by planning on the CPU


@dataclass
class Survey:
    """What planning the suite's instances on CPU tensors found."""

    specs: dict[codegen.KernelSpec, list[str]] = field(default_factory=dict)  # -> instance ids
    not_implemented: dict[str, str] = field(default_factory=dict)  # id -> the backend's message
    too_large: list[str] = field(default_factory=list)  # ids not planned (host memory)
    errors: dict[str, str] = field(default_factory=dict)  # id -> an unexpected exception
    mismatches: dict[str, str] = field(default_factory=dict)  # id -> emulated result vs eager


def survey(instances: Sequence[Any], *, check: bool = False, max_elements: int = 1 << 26) -> Survey:
    """Compile each instance with planning-only launches (or emulated ones with `check`).

    Runs on the CPU: every launch is planned exactly as on a GPU (same strides, padding, copies),
    so the kernels found are the ones a GPU run of these instances builds. With `check`, each
    planned launch is computed by `emulate_launch` and the result compared with eager's.
    Instances with more than `max_elements` operand elements in a shape set are left out (their
    kernels are those of smaller instances with the same dtypes, layouts and alignment).
    """
    from gemmconf import inputs, program
    from gemmconf.runner import mark_dynamic_dims

    found = Survey()
    for instance in instances:
        if instance.requires.device == "cpu" or instance.checks.raises:
            continue
        if instance.scaling == "blockwise":  # not implemented, and CPU eager has no blockwise
            found.not_implemented[instance.id] = "blockwise-scaled _scaled_mm"
            continue
        if max(_elements(instance, i) for i in range(len(instance.shape_sets))) > max_elements:
            found.too_large.append(instance.id)
            continue
        torch._dynamo.reset()  # each instance compiles a fresh function: drop the old ones
        fn = program.make_function(instance)
        compiler = CutlassCompiler(emulate_launch if check else _plan_only, allow_cpu=True)
        item_inputs = [inputs.build(instance, i, 0, "cpu") for i in range(len(instance.shape_sets))]
        if instance.compile.mode == "mark_dynamic":
            mark_dynamic_dims(instance, item_inputs[0])
        try:
            with program.numerics(instance):
                compiled = CutlassCompiled(fn, compiler, dynamic=instance.compile.dynamic)
                for item in item_inputs:
                    got = compiled(*item.tensors)
                    if check:
                        _compare(got, fn(*item.tensors))
        except NotImplementedError as exc:
            found.not_implemented[instance.id] = str(exc)
        except AssertionError as exc:
            found.mismatches[instance.id] = str(exc).splitlines()[0]
        except Exception as exc:
            found.errors[instance.id] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        for call in compiler.calls():
            for record in getattr(call, "launches", {}).values():
                if record.spec is not None:
                    found.specs.setdefault(record.spec, []).append(instance.id)
    return found


def _elements(instance: Any, shape_index: int) -> int:
    from math import prod

    from gemmconf.scenario import eval_dim

    dims = dict(instance.shape_sets[shape_index])
    return sum(prod(eval_dim(e, dims) for e in o.shape) for o in instance.operands)


def _plan_only(plan: LaunchPlan) -> None:
    return None  # D keeps whatever torch.empty gave it: only the plan is wanted


def _compare(got: Any, want: Any) -> None:
    pairs = zip(got, want, strict=True) if isinstance(want, tuple) else [(got, want)]
    for g, w in pairs:
        tol = 2e-2 if w.dtype in (torch.bfloat16, torch.float16) else 1e-3
        torch.testing.assert_close(g.float(), w.float(), rtol=tol, atol=tol, equal_nan=True)


def prebuild(
    specs: Sequence[codegen.KernelSpec], *, jobs: int, outputs: Sequence[str] = ("so", "sass")
) -> dict[codegen.KernelSpec, str]:
    """Build kernels in parallel into the cache; returns the failures (spec -> message)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(spec: codegen.KernelSpec) -> str | None:
        try:
            codegen.build(codegen.render(spec), codegen.kernel_name(spec), outputs)
        except (codegen.BuildError, codegen.CodegenError) as exc:
            return str(exc)
        return None

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = dict(zip(specs, pool.map(one, specs), strict=True))
    return {spec: message for spec, message in results.items() if message}


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import os
    import time
    from pathlib import Path

    from gemmconf.expectations import compile_pattern
    from gemmconf.scenario import discover, load_suite

    parser = argparse.ArgumentParser(
        prog="python -m gemmconf.backends.cutlass",
        description="Plan suite instances on the CPU to find the CUTLASS kernels a GPU run "
        "needs; optionally check the plans (emulated) and build the kernels.",
    )
    parser.add_argument("patterns", nargs="*", default=["*"], help="instance id patterns")
    parser.add_argument("--suites", default="suites")
    parser.add_argument(
        "--check",
        action="store_true",
        help="compute every planned launch in torch and compare with eager",
    )
    parser.add_argument("--build", action="store_true", help="build the kernels into the cache")
    parser.add_argument("--outputs", default="so,sass", help="with --build (default so,sass)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--max-elements",
        type=int,
        default=1 << 26,
        help="skip instances with more operand elements (host memory and time)",
    )
    args = parser.parse_args(argv)
    root = Path.cwd()
    regexes = [compile_pattern(p) for p in args.patterns]
    instances = [
        i
        for path in discover([args.suites], root)
        for i in load_suite(path, root=root)
        if any(r.fullmatch(i.id) for r in regexes)
    ]
    start = time.perf_counter()
    found = survey(instances, check=args.check, max_elements=args.max_elements)
    print(
        f"{len(instances)} instances planned in {time.perf_counter() - start:.0f} s: "
        f"{len(found.specs)} kernels, {len(found.not_implemented)} not implemented, "
        f"{len(found.errors)} errors, {len(found.mismatches)} mismatches, "
        f"{len(found.too_large)} too large to plan here"
    )
    for spec, ids in found.specs.items():
        print(f"  {codegen.kernel_name(spec)}  ({len(ids)} instances, e.g. {ids[0]})")
    for title, table in (("error", found.errors), ("mismatch", found.mismatches)):
        for instance_id, message in table.items():
            print(f"  {title}: {instance_id}: {message}")
    if args.build:
        start = time.perf_counter()
        failed = prebuild(list(found.specs), jobs=args.jobs, outputs=args.outputs.split(","))
        print(
            f"built {len(found.specs) - len(failed)} of {len(found.specs)} kernels in "
            f"{time.perf_counter() - start:.0f} s into {codegen.cache_root()}"
        )
        for spec, message in failed.items():
            print(f"  FAILED {codegen.kernel_name(spec)}:\n{message}")
        if failed:
            return 1
    return 1 if found.errors or found.mismatches else 0


__all__ = [
    "CutlassBackend",
    "CutlassCompiled",
    "CutlassCompiler",
    "LaunchPlan",
    "emulate_launch",
    "gpu_launch",
    "lower_graph",
    "plan_gemm",
]


if __name__ == "__main__":
    raise SystemExit(main())
