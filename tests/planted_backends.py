"""Backends with one planted bug each: the suite must catch every one of them.

Each runs the function eagerly under a `TorchFunctionMode` that corrupts one thing the way real
GEMM backends get it wrong. They are importable as ``--backend planted_backends:<name>`` with the
tests directory on sys.path.

`K_TAIL_COMPILER` is the source of a module of a test's own (an installed package, a file beside
a run): a torch.compile compiler function `compile_graph` whose mm sums K only up to its last
multiple of 16 where K is past 16.
"""

from __future__ import annotations

import functools
import math
import random
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from gemmconf import oracle
from gemmconf.backends.dynamo import DynamoCompiled

K_TAIL_COMPILER = """
import torch


def _mm_without_k_tail(a, b):
    k = a.shape[-1]
    kept = k - k % 16 if k > 16 else k
    return torch.mm(a[:, :kept], b[:kept])


def compile_graph(gm, example_inputs):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.mm:
            node.target = _mm_without_k_tail
    gm.recompile()
    return gm.forward
"""

GEMMS = {
    torch.mm,
    torch.addmm,
    torch.bmm,
    torch.baddbmm,
    torch.matmul,
    torch.nn.functional.linear,
    torch._scaled_mm,
    torch._int_mm,
    torch._grouped_mm,
    torch._scaled_mm_v2,
}


class _Intercept(TorchFunctionMode):
    def __init__(self, rewrite: Callable[..., Any]):
        super().__init__()
        self.rewrite = rewrite

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in GEMMS:  # the mode is inactive inside its own handler: no recursion
            result = self.rewrite(func, args, kwargs)
            if result is not NotImplemented:
                return result
        return func(*args, **kwargs)


class PlantedCompiled:
    def __init__(self, fn, rewrite, count_shapes: bool):
        self.fn, self.rewrite, self.count_shapes = fn, rewrite, count_shapes
        self.shapes: set[tuple] = set()

    def __call__(self, *args):
        self.shapes.add(tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor)))
        with _Intercept(self.rewrite):
            return self.fn(*args)

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return len(self.shapes) if self.count_shapes else min(1, len(self.shapes))


class PlantedBackend:
    def __init__(self, name: str, rewrite, *, count_shapes: bool = False):
        self.name = name
        self.rewrite = rewrite
        self.count_shapes = count_shapes

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None):
        return PlantedCompiled(fn, self.rewrite, self.count_shapes)


def _untouched(func, args, kwargs):
    return NotImplemented


def _drop_bias_broadcast(func, args, kwargs):
    """A bias that is not already (M, N) is silently ignored (beta * C dropped)."""
    if func in (torch.addmm, torch.baddbmm):
        c, a, b = args
        out_shape = (*a.shape[:-1], b.shape[-1])
        if tuple(c.shape) != out_shape:
            alpha = kwargs.get("alpha", 1)
            mm = torch.mm if func is torch.addmm else torch.bmm
            return alpha * mm(a, b)
    return NotImplemented


def _low_precision_accumulation(func, args, kwargs):
    """fp16/bf16 GEMMs summed in the input dtype over 32-wide K chunks (no fp32 accumulator)."""
    if func not in (torch.mm, torch.bmm):
        return NotImplemented
    a, b = args
    if a.dtype not in (torch.float16, torch.bfloat16):
        return NotImplemented
    k = a.shape[-1]
    acc = None
    for start in range(0, k, 32):
        part = torch.matmul(
            a[..., start : start + 32].float(), b[..., start : start + 32, :].float()
        )
        part = part.to(a.dtype)
        acc = part if acc is None else (acc + part)  # rounded to the input dtype every chunk
    if acc is None:
        return NotImplemented
    return acc


def _wrong_output_dtype(func, args, kwargs):
    """Half-precision GEMMs return their fp32 accumulator instead of casting back."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if not tensors or tensors[-1].dtype not in (torch.float16, torch.bfloat16):
        return NotImplemented
    upcast = [a.float() if isinstance(a, torch.Tensor) else a for a in args]
    return func(*upcast, **kwargs)


def _tf32_inputs(func, args, kwargs):
    """fp32 GEMMs whose operands are rounded to TF32 (10-bit mantissa) without permission."""
    if not all(a.dtype == torch.float32 for a in args if isinstance(a, torch.Tensor)):
        return NotImplemented

    def tf32(t):
        if not isinstance(t, torch.Tensor):
            return t
        bits = t.contiguous().view(torch.int32)
        return ((bits + 0x1000) & ~0x1FFF).view(torch.float32).view(t.shape)

    return func(*(tf32(a) for a in args), **kwargs)


def _bf16_under_tf32(func, args, kwargs):
    """Where TF32 is allowed (matmul precision "high"), fp32 GEMM operands are rounded to bf16,
    as precision "medium" would have them: TF32's license taken for bf16's precision."""
    if torch.get_float32_matmul_precision() == "highest":
        return NotImplemented
    if not all(a.dtype == torch.float32 for a in args if isinstance(a, torch.Tensor)):
        return NotImplemented
    rounded = (a.bfloat16().float() if isinstance(a, torch.Tensor) else a for a in args)
    return func(*rounded, **kwargs)


def _ignore_strides(func, args, kwargs):
    """Operands read as if row-major contiguous: column-major/transposed inputs come out wrong."""
    if func not in (torch.mm, torch.bmm):
        return NotImplemented

    def as_row_major(t):
        if t.is_contiguous() or t.untyped_storage().nbytes() < t.numel() * t.element_size():
            return t
        return torch.as_strided(t, t.shape, torch.empty(t.shape).stride(), t.storage_offset())

    return func(*(as_row_major(a) for a in args), **kwargs)


def _crash_on_zero_size(func, args, kwargs):
    """A zero-size problem raises instead of returning an empty result."""
    if any(isinstance(a, torch.Tensor) and a.numel() == 0 for a in args):
        raise ZeroDivisionError("integer division or modulo by zero (grid for a 0-size problem)")
    return NotImplemented


def _refuse_unusual(func, args, kwargs):
    """Only plain row-major, non-empty operands are implemented; anything else raises
    NotImplementedError (before checking the inputs, so invalid ones raise it too)."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if any(t.numel() == 0 or not t.is_contiguous() or t.storage_offset() for t in tensors):
        raise NotImplementedError(f"{func.__name__}: only contiguous, non-empty operands")
    return NotImplemented


def _raise_own_runtime_error(func, args, kwargs):
    """Inputs are validated by the backend's own checks, which raise RuntimeError with their
    own words whatever eager raises (IndexError, ValueError, another message)."""
    try:
        return func(*args, **kwargs)
    except Exception:
        raise RuntimeError(f"gemm backend: invalid arguments to {func.__name__}") from None


def _raise_on_gemm(func, args, kwargs):
    """Every GEMM raises before any kernel runs (a library whose launch fails on every shape):
    a crash in which nothing computed the product."""
    raise RuntimeError(f"planted: no kernel for {func.__name__}")


class _ResultCache:
    """Results served from a cache keyed by the input shapes (a memo that forgot the values)."""

    def __init__(self) -> None:
        self.cache: dict[Any, Any] = {}

    def __call__(self, func, args, kwargs):
        key = (func, tuple((tuple(a.shape), a.dtype) for a in args if isinstance(a, torch.Tensor)))
        if key not in self.cache:
            self.cache[key] = func(*args, **kwargs).clone()
        return self.cache[key].clone()


class _SharedOutput:
    """Every result written into one buffer per shape and dtype, which is what the call returns
    (a kernel library's preallocated output, CUDA graphs' static outputs): the next call of the
    same shapes overwrites what the previous call returned."""

    def __init__(self) -> None:
        self.buffers: dict[Any, torch.Tensor] = {}

    def __call__(self, func, args, kwargs):
        result = func(*args, **kwargs)
        key = (tuple(result.shape), result.dtype, result.device)
        buffer = self.buffers.setdefault(key, torch.empty_like(result))
        return buffer.copy_(result)


def _bias_in_place(func, args, kwargs):
    """addmm/baddbmm computed into C itself (`c.mul_(beta).add_(...)`): the caller's C is
    overwritten."""
    if func not in (torch.addmm, torch.baddbmm):
        return NotImplemented
    c, a, b = args
    out_shape = (*a.shape[:-1], b.shape[-1])
    if tuple(c.shape) != out_shape or c.dtype != a.dtype:
        return NotImplemented
    mm = torch.mm if func is torch.addmm else torch.bmm
    c.mul_(kwargs.get("beta", 1)).add_(mm(a, b), alpha=kwargs.get("alpha", 1))
    return c.clone()


TILE = 32


def _unwritten_edge_tiles(func, args, kwargs, *, scratch: bool = True):
    """Only whole 32x32 output tiles are computed; the edge tiles are never written. The buffer
    comes from the allocator right after a scratch result of the same size was freed, so without
    poisoning it often holds the right answer there already (`scratch`)."""
    if func not in (torch.mm, torch.matmul) or len(args) != 2:
        return NotImplemented
    a, b = args
    if a.dim() != 2 or b.dim() != 2:
        return NotImplemented
    m, n = a.shape[0], b.shape[1]
    mt, nt = m - m % TILE, n - n % TILE
    if (mt, nt) == (m, n) or not a.is_floating_point():
        return NotImplemented
    if scratch:
        first_pass = torch.mm(a, b)  # a plan's first pass; freed before the output is allocated
        del first_pass
    out = torch.empty(m, n, dtype=a.dtype, device=a.device)
    if mt and nt:
        out[:mt, :nt] = torch.mm(a[:mt], b[:, :nt])
    return out


def _unwritten_edge_tiles_no_scratch(func, args, kwargs):
    return _unwritten_edge_tiles(func, args, kwargs, scratch=False)


def _default_stream(func, args, kwargs):
    """Kernels launched on the default stream whatever the caller's current stream is: a caller
    that reads the result after its own stream finished reads it too early."""
    if not any(isinstance(a, torch.Tensor) and a.is_cuda for a in args):
        return NotImplemented
    current = torch.cuda.current_stream()
    default = torch.cuda.default_stream()
    if current == default:
        return NotImplemented
    with torch.cuda.stream(default):
        default.wait_stream(current)  # the inputs are ready; the result is not waited for
        return func(*args, **kwargs)


def _slow_default_stream(func, args, kwargs):
    """`_default_stream` with 50 ms of host work before the launch: longer than the 10 ms sleep
    that used to keep the default stream busy (the kernel ran before the side stream's copy)."""
    if not any(isinstance(a, torch.Tensor) and a.is_cuda for a in args):
        return NotImplemented
    if torch.cuda.current_stream() != torch.cuda.default_stream():
        time.sleep(0.05)
    return _default_stream(func, args, kwargs)


def _synchronizing(func, args, kwargs):
    """Not a bug: the result computed on the caller's stream, then the whole device waited for
    on the host (`torch.cuda.synchronize()`, as a backend that reads a size might)."""
    if not any(isinstance(a, torch.Tensor) and a.is_cuda for a in args):
        return NotImplemented
    out = func(*args, **kwargs)
    torch.cuda.synchronize()
    return out


def _returns_its_bias(func, args, kwargs):
    """With alpha=0 and beta=1, addmm/baddbmm's answer is C: return C itself (as TVM's relax
    backend did, 2026-12-01), right values in memory the caller owns as an input."""
    if func not in (torch.addmm, torch.baddbmm) or kwargs.get("alpha", 1) != 0:
        return NotImplemented
    c, a, b = args
    out_shape = (*a.shape[:-1], b.shape[-1])
    if kwargs.get("beta", 1) != 1 or tuple(c.shape) != out_shape:
        return NotImplemented
    return c


def _column_major_output(func, args, kwargs):
    """Right values, returned column-major where eager returns row-major."""
    if func not in (torch.mm, torch.addmm, torch.bmm, torch.baddbmm):
        return NotImplemented
    out = func(*args, **kwargs)
    return out.transpose(-2, -1).contiguous().transpose(-2, -1)


def _split_k_random_order(func, args, kwargs):
    """fp32 GEMMs split over K, the partial sums added in whatever order they finish (fp32
    atomics): results differ in the last bits from call to call."""
    if func not in (torch.mm, torch.bmm):
        return NotImplemented
    a, b = args
    k = a.shape[-1]
    if k < 64 or a.dtype != torch.float32:
        return NotImplemented
    chunks = [
        torch.matmul(a[..., s : s + 16].float(), b[..., s : s + 16, :].float())
        for s in range(0, k, 16)
    ]
    order = torch.randperm(len(chunks)).tolist()  # the global RNG: differs call to call
    acc = torch.zeros_like(chunks[0])
    for i in order:
        acc = acc + chunks[i]
    return acc.to(a.dtype)


def _k_tail_dropped(func, args, kwargs):
    """K looped over whole 16-wide tiles only: the last partial tile is never added."""
    if func not in (torch.mm, torch.bmm, torch.matmul) or len(args) != 2:
        return NotImplemented
    a, b = args
    k = a.shape[-1]
    whole = k - k % 16
    if whole == k or whole == 0 or not a.is_floating_point():
        return NotImplemented
    return func(a[..., :whole], b[..., :whole, :])


DECODE_ROWS = 16  # at most this many rows (tokens): the decode path
SPLIT_K_SLICE = 256


def _split_k_decode_tail_dropped(func, args, kwargs):
    """Decode GEMMs (M <= 16, K >= 512) split over K in 256-wide slices summed in fp32, and the
    last slice, partial where K % 256 != 0, never launched."""
    if func is torch.nn.functional.linear:
        a, weight = args[:2]
        bias = args[2] if len(args) > 2 else kwargs.get("bias")
        c, b, beta, alpha = bias, weight.t(), 1, 1
    elif func in (torch.mm, torch.matmul) and len(args) == 2:
        (a, b), c, beta, alpha = args, None, 1, 1
    elif func is torch.addmm:
        c, a, b = args
        beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    else:
        return NotImplemented
    if a.dim() != 2 or b.dim() != 2 or not a.is_floating_point():
        return NotImplemented
    k = a.shape[1]
    whole = k - k % SPLIT_K_SLICE
    if a.shape[0] > DECODE_ROWS or k < 512 or whole == k:
        return NotImplemented
    acc = torch.zeros(a.shape[0], b.shape[1], device=a.device)
    for start in range(0, whole, SPLIT_K_SLICE):
        acc += (
            a[:, start : start + SPLIT_K_SLICE].float() @ b[start : start + SPLIT_K_SLICE].float()
        )
    if c is not None:
        acc = alpha * acc + beta * c.float()
    return acc.to(a.dtype)


def _grouped_in_floats(func, args, kwargs, *, out_dtype_read: bool = True):
    """A grouped GEMM that computes every rank combination per group in fp32, also the fp32
    results eager rejects: right, unless `out_dtype` is never read (`out_dtype_read=False`):
    the result then has the operands' dtype whatever `out_dtype` asks for."""
    if func is not torch._grouped_mm:
        return NotImplemented
    a, b = args[:2]
    offs = kwargs.get("offs")
    if (
        kwargs.get("bias") is not None
        or a.dtype != b.dtype
        or (offs is None) != (a.dim() == 3 == b.dim())
    ):
        return NotImplemented  # eager's own checks
    out_dtype = kwargs.get("out_dtype") if out_dtype_read else None
    return _per_group(a, b, offs).to(out_dtype or a.dtype)


def _grouped_out_dtype_ignored(func, args, kwargs):
    return _grouped_in_floats(func, args, kwargs, out_dtype_read=False)


def _per_group(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor | None) -> torch.Tensor:
    """torch._grouped_mm's result in fp32, one GEMM per group (the jagged dim from the ranks)."""
    if offs is None:
        return torch.bmm(a.float(), b.float())
    ends = offs.tolist()
    starts = [0, *ends[:-1]]
    if a.dim() == 2 and b.dim() == 3:  # M jagged
        out = torch.zeros(a.shape[0], b.shape[-1], device=a.device)
        for g, (s, e) in enumerate(zip(starts, ends, strict=True)):
            out[s:e] = a[s:e].float() @ b[g].float()
        return out
    if a.dim() == 3:  # N jagged
        out = torch.zeros(a.shape[1], b.shape[-1], device=a.device)
        for g, (s, e) in enumerate(zip(starts, ends, strict=True)):
            out[:, s:e] = a[g].float() @ b[:, s:e].float()
        return out
    out = torch.zeros(len(ends), a.shape[0], b.shape[-1], device=a.device)  # K jagged
    for g, (s, e) in enumerate(zip(starts, ends, strict=True)):
        out[g] = a[:, s:e].float() @ b[s:e].float()
    return out


MX_RECIPE = int(torch.nn.functional.ScalingType.BlockWise1x32)
SWIZZLED = int(torch.nn.functional.SwizzleType.SWIZZLE_32_4_4)


def _mx_in_floats(func, args, kwargs, *, first_format: bool = False):
    """MX `F.scaled_mm` (aten `_scaled_mm_v2`) dequantized to fp32 and multiplied there: right,
    unless `first_format`, where b's bytes are decoded in a's element format (e4m3 x e5m2 read
    as e4m3 x e4m3), as a kernel specialised on one operand's dtype would."""
    if func is not torch._scaled_mm_v2:
        return NotImplemented
    a, b, scale_a, recipe_a, swizzle_a, scale_b, recipe_b, swizzle_b, bias, out_dtype = args[:10]
    if recipe_a != [MX_RECIPE] or recipe_b != [MX_RECIPE] or a.dim() != 2:
        return NotImplemented
    if swizzle_a != [SWIZZLED] or swizzle_b != [SWIZZLED]:
        return NotImplemented  # eager's own checks
    from gemmconf.gemm.microscaling import MX_BLOCK, unswizzle

    (m, k), n = a.shape, b.shape[1]
    blocks = -(-k // MX_BLOCK)

    def dequantized(values: torch.Tensor, scale: torch.Tensor, rows: int) -> torch.Tensor:
        spread = unswizzle(scale[0], rows, blocks).float().repeat_interleave(MX_BLOCK, 1)
        return values.float() * spread[:, :k]

    b_values = b.t().view(a.dtype) if first_format and b.dtype != a.dtype else b.t()
    product = dequantized(a, scale_a, m) @ dequantized(b_values, scale_b, n).t()
    if bias is not None:
        product = product + bias.float()
    return product.to(out_dtype or torch.bfloat16)


def _mx_first_format(func, args, kwargs):
    return _mx_in_floats(func, args, kwargs, first_format=True)


class DispatchPlanted:
    """A backend whose bug lives where a TorchFunctionMode cannot see: the aten calls autograd
    makes for the backward. It runs the program eagerly under a TorchDispatchMode."""

    def __init__(self, name: str, mode: Callable[[], Any]):
        self.name = name
        self.mode = mode

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None):
        return _DispatchCompiled(fn, self.mode)


class _DispatchCompiled(PlantedCompiled):
    def __init__(self, fn, mode):
        super().__init__(fn, _untouched, count_shapes=False)
        self.mode = mode

    def __call__(self, *args):
        self.shapes.add(tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor)))
        with self.mode():
            return self.fn(*args)


_ATEN_GEMMS = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default)


class _WeightGradFromRowMajorA(TorchDispatchMode):
    """The weight gradient (dB = A^T @ dOut) reads the saved activation A as if it were stored
    row-major and contiguous, as it usually is: right for a row-major A, wrong for a transposed,
    column-major or padded one. The forward and dA are right."""

    def __init__(self) -> None:
        super().__init__()
        self.saved: torch.Tensor | None = None  # the forward GEMM's A

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func not in _ATEN_GEMMS:
            return func(*args, **kwargs)
        if torch._C._current_autograd_node() is None:  # the forward
            if self.saved is None:
                self.saved = args[-2]
            return func(*args, **kwargs)
        return func(*(self._as_row_major(t) for t in args), **kwargs)

    def _as_row_major(self, t):
        a = self.saved
        if a is None or not isinstance(t, torch.Tensor) or a.dim() != 2:
            return t
        if t.untyped_storage().data_ptr() != a.untyped_storage().data_ptr():
            return t
        (m, k), offset = a.shape, a.storage_offset()
        row_major = torch.as_strided(t, (m, k), (k, 1), offset)
        if (t.shape, t.stride()) == (a.shape, a.stride()):
            return row_major
        if (t.shape, t.stride()) == (a.t().shape, a.t().stride()):
            return row_major.t()
        return t


def _out_target_unwritten(func, args, kwargs):
    """An `out=` call that returns its target without writing it (the result computed into a
    buffer of the library's own and never copied back)."""
    out = kwargs.get("out")
    if out is None or out.numel() == 0:
        return NotImplemented  # an empty target: eager resizes it (its own failure, not this)
    return out


NEAR_BAR_SPREAD = 1.2  # a call's err_ratio lies within this factor of the bar, either way
NEAR_BAR_GEMMS = (torch.mm, torch.bmm, torch.matmul)


def _near_bar(func, args, kwargs, *, spread: float = NEAR_BAR_SPREAD, at: float = 1.0):
    """Not a planted bug, nor right: an fp32 GEMM whose error is eager's own (or the oracle's
    floor, where larger) times a factor each call draws between bar / 1.2 and bar * 1.2
    (log-uniform, seeded by the call's first input, so a run repeats): its err_ratio sits at
    0.8-1.2 times the bar, each draw's on either side of it (`at` times that: `above_bar`). Its
    verdicts must not depend on the seed (gemmconf.drawing). 16-bit outputs are left alone:
    rounded to them, such an error moves in whole ulps, and err_ratio with it."""
    if func not in NEAR_BAR_GEMMS or kwargs or len(args) != 2:
        return NotImplemented
    a, b = args
    if a.dtype != torch.float32 or b.dtype != torch.float32 or not a.numel() or not b.numel():
        return NotImplemented
    expected = func(a, b)
    exact = func(a.double(), b.double())
    error = expected.double() - exact
    policy = oracle.policy_for(torch.float32)
    floor = policy.floor_eps * math.sqrt(a.shape[-1]) * float(exact.pow(2).mean().sqrt())
    largest = float(error.abs().max())
    if largest == 0.0:
        return NotImplemented
    first = a.detach().contiguous().view(torch.uint8).cpu().numpy().tobytes()
    step = math.log(spread)
    factor = math.exp(random.Random(zlib.crc32(first)).uniform(-step, step))
    scale = at * factor * policy.max_ratio * max(largest, floor) / largest
    return (exact + scale * error).to(expected.dtype)


def _scaled(rewrite):
    """A rewrite of `torch._scaled_mm` calls only."""

    def rewriter(func, args, kwargs):
        if func is not torch._scaled_mm:
            return NotImplemented
        return rewrite(*args, **kwargs)

    return rewriter


def _scale_axis_ignored(a, b, scale_a, scale_b, **kwargs):
    """Per-row / per-column scales read as one tensor-wide scale (their first element)."""
    if scale_a.numel() <= 1 and scale_b.numel() <= 1:
        return torch._scaled_mm(a, b, scale_a, scale_b, **kwargs)
    first_a, first_b = scale_a.reshape(-1)[0], scale_b.reshape(-1)[0]
    return torch._scaled_mm(a, b, first_a, first_b, **kwargs)


def _e5m2_read_as_e4m3(a, b, scale_a, scale_b, **kwargs):
    """e5m2 operands decoded with the e4m3fn format (same bytes, wrong exponent width)."""

    def decoded(t):
        return t.view(torch.float8_e4m3fn) if t.dtype == torch.float8_e5m2 else t

    if torch.float8_e5m2 not in (a.dtype, b.dtype):
        return torch._scaled_mm(a, b, scale_a, scale_b, **kwargs)
    return torch._scaled_mm(decoded(a), decoded(b), scale_a, scale_b, **kwargs)


def _fast_accum_always(a, b, scale_a, scale_b, **kwargs):
    """Accumulation in the tensor core's reduced precision (the accumulator rounded to 10
    mantissa bits every 32 products), as `use_fast_accum=True` allows, even where the call says
    False."""
    bias, out_dtype = kwargs.get("bias"), kwargs.get("out_dtype") or torch.bfloat16
    deq_a, deq_b = a.float() * _per_element(scale_a, a), b.float() * _per_element(scale_b, b)
    # each run of 32 products summed in one batched product (K zero-padded to a multiple of 32:
    # zeros add nothing), then the running sum rounded after each run, in order
    (m, k), n = deq_a.shape, deq_b.shape[1]
    runs = -(-k // 32)
    deq_a = torch.nn.functional.pad(deq_a, (0, runs * 32 - k)).view(m, runs, 32).transpose(0, 1)
    deq_b = torch.nn.functional.pad(deq_b, (0, 0, 0, runs * 32 - k)).view(runs, 32, n)
    # the running sum in numpy, in place on its bits: K = 65536 is 2,048 sequential steps,
    # each of which costs torch's dispatch several times over
    partials = torch.bmm(deq_a, deq_b).cpu().numpy()
    total = numpy.zeros((m, n), numpy.float32)
    bits, drop = total.view(numpy.int32), 23 - 10
    for partial in partials:
        total += partial
        bits += 1 << (drop - 1)
        bits &= ~((1 << drop) - 1)
    acc = torch.from_numpy(total).to(a.device)
    if bias is not None:
        acc = acc + bias.float()
    return acc.to(out_dtype)


def _per_element(scale: torch.Tensor, operand: torch.Tensor) -> torch.Tensor:
    """A tensorwise, rowwise or blockwise scale spread over its operand's (rows, cols)."""
    if scale.dim() == 0:
        return scale
    rows, cols = operand.shape
    spread = scale.repeat_interleave(-(-rows // scale.shape[0]), 0)[:rows]
    return spread.repeat_interleave(-(-cols // scale.shape[1]), 1)[:, :cols]


def _scale_applied_twice(a, b, scale_a, scale_b, **kwargs):
    """An fp8 output's epilogue applies A's scales a second time: with scales of about 2^-9
    most products flush to +-0.0 in e4m3fn, whose -0.0 is the byte 0x80, the byte freed memory
    holds during a CPU call (gemmconf.integrity); the backend did write them."""
    if kwargs.get("out_dtype") not in (torch.float8_e4m3fn, torch.float8_e5m2):
        return torch._scaled_mm(a, b, scale_a, scale_b, **kwargs)
    return torch._scaled_mm(a, b, scale_a * scale_a, scale_b, **kwargs)


def _bias_dropped(a, b, scale_a, scale_b, **kwargs):
    """The bias argument of `_scaled_mm` is never applied."""
    return torch._scaled_mm(a, b, scale_a, scale_b, **{**kwargs, "bias": None})


def _int_mm_in_floats(func, args, kwargs):
    """`_int_mm` computed as an fp32 GEMM and cast back: exact only while sums stay below 2^24."""
    if func is not torch._int_mm:
        return NotImplemented
    a, b = args
    valid = a.dim() == b.dim() == 2 and a.shape[1] == b.shape[0]
    if not valid or a.dtype != torch.int8 or b.dtype != torch.int8:
        return NotImplemented  # eager's own checks
    return torch.mm(a.float(), b.float()).round().to(torch.int32)


def _unfused_bias_add(func, args, kwargs):
    """Not a bug: addmm and a linear with bias as two ops, the GEMM returned in the operands'
    dtype (rounded) and then scaled and added to the bias, as a library without a bias epilogue
    computes them. Where the bias cancels most of the product, the first rounding costs several
    ulps of the output: correct, and must not fail."""
    if func is torch.addmm:
        c, a, b = args
        beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
        product = torch.mm(a, b)
        return (beta * c.float() + alpha * product.float()).to(product.dtype)
    if func is torch.nn.functional.linear:
        a, weight = args[:2]
        bias = args[2] if len(args) > 2 else kwargs.get("bias")
        if bias is None:
            return NotImplemented
        product = torch.nn.functional.linear(a, weight)
        return (product.float() + bias.float()).to(product.dtype)
    return NotImplemented


def _grouped_beyond_eager(func, args, kwargs, *, wrong: bool = False):
    """Not a bug (unless `wrong`): a grouped GEMM library that computes what CPU eager rejects
    (an fp32 result, an operand with misaligned rows), per group in fp32, and adds a bias (one
    for all groups, or one per group), whose meaning eager leaves open. `wrong` applies group
    0's weight to every group."""
    if func is not torch._grouped_mm:
        return NotImplemented
    a, b = args[:2]
    offs, bias, out_dtype = kwargs.get("offs"), kwargs.get("bias"), kwargs.get("out_dtype")
    if offs is None or a.dim() != 2 or b.dim() != 3:
        return NotImplemented  # eager's own checks
    out = torch.empty(a.shape[0], b.shape[-1], dtype=out_dtype or a.dtype, device=a.device)
    start = 0
    for group, end in enumerate(offs.tolist()):
        product = a[start:end].float() @ b[0 if wrong else group].float()
        if bias is not None:
            product += (bias[group] if bias.dim() == 2 else bias).float()
        out[start:end] = product.to(out.dtype)
        start = end
    return out


def _refuse_everything(fn, example_inputs, dynamic):
    raise NotImplementedError("this backend implements nothing yet")


class RefusingBackend(PlantedBackend):
    """compile() raises NotImplementedError for every function: a backend at its first commit."""

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None):
        _refuse_everything(fn, example_inputs, dynamic)


class FxPlanted:
    """A backend that traces the program with torch.fx and rewrites the graph (epilogue bugs)."""

    def __init__(self, name: str, rewrite: Callable[[torch.fx.GraphModule], None]):
        self.name = name
        self.rewrite = rewrite

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None):
        gm = torch.fx.symbolic_trace(fn)
        self.rewrite(gm)
        gm.graph.lint()
        gm.recompile()
        return PlantedCompiled(gm, _untouched, count_shapes=False)


ACTIVATIONS = {
    torch.relu,
    torch.tanh,
    torch.sigmoid,
    torch.nn.functional.gelu,
    torch.nn.functional.silu,
}


def _activation_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target in ACTIVATIONS]


def _drop_activation(gm: torch.fx.GraphModule) -> None:
    """The epilogue's activation is never applied (a fused kernel that forgot it)."""
    for node in _activation_nodes(gm):
        node.replace_all_uses_with(node.args[0])
        gm.graph.erase_node(node)


def _activation_before_bias(gm: torch.fx.GraphModule) -> None:
    """addmm/linear + activation fused as act(A @ B) + bias instead of act(A @ B + bias)."""
    graph = gm.graph
    for node in _activation_nodes(gm):
        gemm = node.args[0]
        if not isinstance(gemm, torch.fx.Node) or gemm.op != "call_function":
            continue
        if gemm.target is torch.addmm:
            c, a, b = gemm.args
            alpha, beta = gemm.kwargs.get("alpha", 1), gemm.kwargs.get("beta", 1)
            with graph.inserting_before(node):
                product = graph.call_function(torch.mm, (a, b))
                scaled = graph.call_function(torch.mul, (product, alpha))
        elif gemm.target is torch.nn.functional.linear and gemm.args[2] is not None:
            a, b, c = gemm.args
            beta = 1
            with graph.inserting_before(node):
                scaled = graph.call_function(torch.nn.functional.linear, (a, b, None))
        else:
            continue
        with graph.inserting_after(node):
            bias = graph.call_function(torch.mul, (c, beta))
        with graph.inserting_after(bias):
            total = graph.call_function(torch.add, (node, bias))
        node.replace_all_uses_with(total)
        total.args = (node, bias)
        node.args = (scaled, *node.args[1:])
        if not gemm.users:
            graph.erase_node(gemm)


class MissingInstruction:
    """Eager's results, and a TTGIR artifact whose MMA and loads are the generic ones (`tt.dot`,
    `tt.load`) where the scenario promises wgmma and TMA: the code the backend says it generated
    lacks what the scenario's code checks require. Named `reference:...` so that the reference
    backend's code checks apply to it."""

    name = "reference:missing-instruction"

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None):
        return _MissingInstructionCompiled(fn, _untouched, count_shapes=False)


TTGIR_WITHOUT_WGMMA = """\
module attributes {"ttg.target" = "cuda:90", "ttg.num-warps" = 4 : i32} {
  tt.func public @gemm_kernel(%a: !tt.ptr<bf16>, %b: !tt.ptr<bf16>, %c: !tt.ptr<bf16>) {
    %0 = tt.load %a : tensor<64x32x!tt.ptr<bf16>>
    %1 = tt.load %b : tensor<32x64x!tt.ptr<bf16>>
    %2 = tt.dot %0, %1, %cst : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
    tt.store %c, %2 : tensor<64x64x!tt.ptr<bf16>>
    tt.return
  }
}
"""


class _MissingInstructionCompiled(PlantedCompiled):
    def artifacts(self) -> dict[str, str]:
        return {"ttgir": TTGIR_WITHOUT_WGMMA}


bias_broadcast_dropped = PlantedBackend("bias-broadcast-dropped", _drop_bias_broadcast)
low_precision_accumulation = PlantedBackend("low-precision-acc", _low_precision_accumulation)
wrong_output_dtype = PlantedBackend("wrong-output-dtype", _wrong_output_dtype)
recompiles_every_shape = PlantedBackend("recompiles-every-shape", _untouched, count_shapes=True)
tf32_without_permission = PlantedBackend("tf32-inputs", _tf32_inputs)
bf16_under_tf32 = PlantedBackend("bf16-under-tf32", _bf16_under_tf32)
ignores_strides = PlantedBackend("ignores-strides", _ignore_strides)
crashes_on_zero_size = PlantedBackend("crashes-on-zero-size", _crash_on_zero_size)
not_implemented_everywhere = RefusingBackend("not-implemented-everywhere", _untouched)
refuses_unusual_inputs = PlantedBackend("refuses-unusual-inputs", _refuse_unusual)
raises_its_own_runtime_error = PlantedBackend("own-runtime-error", _raise_own_runtime_error)
raises_on_gemm = PlantedBackend("raises-on-gemm", _raise_on_gemm)
caches_results = PlantedBackend("caches-results", _ResultCache())
shares_output_buffer = PlantedBackend("shares-output-buffer", _SharedOutput())
returns_its_bias = PlantedBackend("returns-its-bias", _returns_its_bias)
writes_into_bias = PlantedBackend("writes-into-bias", _bias_in_place)
unwritten_edge_tiles = PlantedBackend("unwritten-edge-tiles", _unwritten_edge_tiles)
column_major_output = PlantedBackend("column-major-output", _column_major_output)
split_k_random_order = PlantedBackend("split-k-random-order", _split_k_random_order)
fp8_scale_axis_ignored = PlantedBackend("fp8-scale-axis-ignored", _scaled(_scale_axis_ignored))
fp8_e5m2_read_as_e4m3 = PlantedBackend("fp8-e5m2-as-e4m3", _scaled(_e5m2_read_as_e4m3))
fp8_fast_accum_always = PlantedBackend("fp8-fast-accum-always", _scaled(_fast_accum_always))
fp8_bias_dropped = PlantedBackend("fp8-bias-dropped", _scaled(_bias_dropped))
fp8_scale_applied_twice = PlantedBackend("fp8-scale-twice", _scaled(_scale_applied_twice))
out_target_unwritten = PlantedBackend("out-target-unwritten", _out_target_unwritten)
int_mm_in_floats = PlantedBackend("int-mm-in-floats", _int_mm_in_floats)
activation_dropped = FxPlanted("activation-dropped", _drop_activation)
activation_before_bias = FxPlanted("activation-before-bias", _activation_before_bias)
missing_instruction = MissingInstruction()
k_tail_dropped = PlantedBackend("k-tail-dropped", _k_tail_dropped)
split_k_decode_tail_dropped = PlantedBackend(
    "split-k-decode-tail-dropped", _split_k_decode_tail_dropped
)
weight_grad_from_row_major_a = DispatchPlanted(
    "weight-grad-from-row-major-a", _WeightGradFromRowMajorA
)
grouped_out_dtype_ignored = PlantedBackend("grouped-out-dtype-ignored", _grouped_out_dtype_ignored)
mx_first_format = PlantedBackend("mx-first-format", _mx_first_format)


class _Unavailable(PlantedBackend):
    def availability(self) -> str | None:
        return "needs the frobnicator accelerator (none found)"


# not a planted bug: a correct backend that rounds twice (must pass)
unfused_bias_add = PlantedBackend("unfused-bias-add", _unfused_bias_add)

# not a planted bug, nor right: its error sits at the bar (its verdicts must not depend on the seed)
near_bar = PlantedBackend("near-bar", _near_bar)
# not a planted bug either: an error just above the bar (each call's within 15% of it; the
# items' rounds' medians 1.03-1.08 times it), where gemmconf.drawing decides either way on random
# rounds (the sequential test and its sign tests; TVM's relax_dynamo on fp16 baddbmm erred at
# 1.13-1.5 times the bar, 2026-11-30, the band of the twelve-round test before 2026-12-02's
# sign tests and longer rounds): its verdicts must not depend on the seed (the confirmation draws)
above_bar = PlantedBackend("above-bar", functools.partial(_near_bar, spread=1.15))

# not a planted bug: a correct grouped GEMM beyond eager's limits (must pass where the scenario
# allows a result, raises.or_correct); its wrong twin must fail there
grouped_beyond_eager = PlantedBackend("grouped-beyond-eager", _grouped_beyond_eager)
grouped_beyond_eager_wrong = PlantedBackend(
    "grouped-beyond-eager-wrong", functools.partial(_grouped_beyond_eager, wrong=True)
)

# not a planted bug: grouped GEMMs of every rank computed right in fp32 (must pass)
grouped_in_floats = PlantedBackend("grouped-in-floats", _grouped_in_floats)

# not a planted bug: MX computed right in fp32 (the twin of mx_first_format, must pass)
mx_in_floats = PlantedBackend("mx-in-floats", _mx_in_floats)

# not a planted bug: a backend that reports itself unavailable (--backend must refuse it)
unavailable = _Unavailable("unavailable", _untouched)

# GPU only (tests/test_integrity.py runs them where a CUDA GPU is)
default_stream_launch = PlantedBackend("default-stream-launch", _default_stream)
slow_default_stream_launch = PlantedBackend("slow-default-stream-launch", _slow_default_stream)
synchronizing = PlantedBackend("synchronizing", _synchronizing)  # not a bug: must pass
unwritten_tiles_gpu = PlantedBackend("unwritten-tiles-gpu", _unwritten_edge_tiles_no_scratch)

ALL = {
    "bias_broadcast_dropped": bias_broadcast_dropped,
    "low_precision_accumulation": low_precision_accumulation,
    "wrong_output_dtype": wrong_output_dtype,
    "recompiles_every_shape": recompiles_every_shape,
    "tf32_without_permission": tf32_without_permission,
    "bf16_under_tf32": bf16_under_tf32,
    "ignores_strides": ignores_strides,
    "crashes_on_zero_size": crashes_on_zero_size,
    "not_implemented_everywhere": not_implemented_everywhere,
    "refuses_unusual_inputs": refuses_unusual_inputs,
    "raises_its_own_runtime_error": raises_its_own_runtime_error,
    "caches_results": caches_results,
    "shares_output_buffer": shares_output_buffer,
    "returns_its_bias": returns_its_bias,
    "writes_into_bias": writes_into_bias,
    "unwritten_edge_tiles": unwritten_edge_tiles,
    "column_major_output": column_major_output,
    "split_k_random_order": split_k_random_order,
    "fp8_scale_axis_ignored": fp8_scale_axis_ignored,
    "fp8_e5m2_read_as_e4m3": fp8_e5m2_read_as_e4m3,
    "fp8_fast_accum_always": fp8_fast_accum_always,
    "fp8_bias_dropped": fp8_bias_dropped,
    "fp8_scale_applied_twice": fp8_scale_applied_twice,
    "out_target_unwritten": out_target_unwritten,
    "int_mm_in_floats": int_mm_in_floats,
    "activation_dropped": activation_dropped,
    "activation_before_bias": activation_before_bias,
    "missing_instruction": missing_instruction,
    "k_tail_dropped": k_tail_dropped,
    "split_k_decode_tail_dropped": split_k_decode_tail_dropped,
    "weight_grad_from_row_major_a": weight_grad_from_row_major_a,
    "grouped_out_dtype_ignored": grouped_out_dtype_ignored,
    "mx_first_format": mx_first_format,
}


class RefusesAddmm(PlantedBackend):
    """Not a planted bug: a correct backend that declares it does not support addmm."""

    def supports(self, instance) -> str | None:
        return "no addmm on this backend" if instance.op == "addmm" else None


refuses_addmm = RefusesAddmm("refuses-addmm", _untouched)


def _addmm_beta_dropped(self, mat1, mat2, *, beta=1, alpha=1):
    """aten::addmm without its beta (the planted bug of an outside author's kernel library)."""
    return torch.mm(mat1, mat2) * alpha + self


class AtenOverride:
    """A kernel library: aten::addmm replaced by `_addmm_beta_dropped` on the CPU and CUDA.
    `for_the_process`: registered by compile() and left registered (the bug the harness must
    refuse to judge: eager and the fp64 reference would run it too; `release()` undoes it, for
    the tests); else registered for each call only and undone before it returns (the way
    README asks for: a wrong answer then fails as wrong values)."""

    def __init__(self, name: str, *, for_the_process: bool):
        self.name = name
        self.for_the_process = for_the_process
        self.library: torch.library.Library | None = None

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None):
        if self.for_the_process and self.library is None:
            self.library = _register_addmm()
        return _PerCallOverride(fn, per_call=not self.for_the_process)

    def release(self) -> None:
        if self.library is not None:
            self.library._destroy()
            self.library = None


def _register_addmm() -> torch.library.Library:
    library = torch.library.Library("aten", "IMPL")
    for key in ("CPU", "CUDA"):
        library.impl("addmm", _addmm_beta_dropped, key)
    return library


class _PerCallOverride(PlantedCompiled):
    def __init__(self, fn, *, per_call: bool):
        super().__init__(fn, _untouched, count_shapes=False)
        self.per_call = per_call

    def __call__(self, *args):
        if not self.per_call:
            return super().__call__(*args)
        library = _register_addmm()
        try:
            return super().__call__(*args)
        finally:
            library._destroy()


# Who computed a pass (gemmconf.checks.computed_by): backends whose passes are PyTorch's, and
# their twins that compute the product themselves.


def _own_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b without any aten GEMM kernel: broadcast products summed over K, in fp32."""
    product = (a.float().unsqueeze(-1) * b.float().unsqueeze(-3)).sum(-2)
    return product.to(torch.promote_types(a.dtype, b.dtype))


def _own_gemm(func, args, kwargs):
    """The GEMMs of a graph computed by `_own_product` (float operands, no out=); the rest
    left to PyTorch."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if "out" in kwargs or not tensors or not all(t.is_floating_point() for t in tensors):
        return NotImplemented
    if func in (torch.mm, torch.bmm, torch.matmul, torch.Tensor.__matmul__):
        a, b = args
        return _own_product(a, b) if a.dim() >= 2 and b.dim() >= 2 else NotImplemented
    if func in (torch.addmm, torch.baddbmm):
        bias, a, b = args
        beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
        return (alpha * _own_product(a, b) + beta * bias).to(a.dtype)
    if func is torch.nn.functional.linear:
        x, weight, *rest = args
        bias = rest[0] if rest else kwargs.get("bias")
        result = _own_product(x, weight.t())
        return result if bias is None else (result + bias).to(x.dtype)
    return NotImplemented


class _HandsBackCompiler:
    """A torch.compile backend that returns a graph of one call (a bare mm, addmm, linear,
    ...) to PyTorch as it is (`gm.forward`: aten computes it), and computes the GEMMs of
    any larger graph itself: what an outside backend was found doing (issue 42)."""

    def __init__(self) -> None:
        self.invocations = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]):
        self.invocations += 1
        calls = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
        if len(calls) == 1:
            return gm.forward

        def own(*args):
            with _Intercept(_own_gemm):
                return gm.forward(*args)

        return own


class _HandsBackCompiled(DynamoCompiled):
    def artifacts(self) -> dict[str, str]:
        return {}


class HandsBackSingleNodes:
    """Its passes of single-GEMM programs are PyTorch's; of programs with an epilogue, its own."""

    name = "hands-back-single-nodes"

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None):
        return _HandsBackCompiled(fn, _HandsBackCompiler(), dynamic=dynamic)


hands_back_single_nodes = HandsBackSingleNodes()


def _own_mm(a, b):
    return _own_product(a, b)


def _own_addmm(bias, a, b, *, beta=1, alpha=1):
    return (alpha * _own_product(a, b) + beta * bias).to(a.dtype)


class _PerCallKernels(PlantedCompiled):
    """aten ops replaced by a library's kernels (`kernels`: op name -> kernel) for each call."""

    def __init__(self, fn, kernels: dict[str, Any]):
        super().__init__(fn, _untouched, count_shapes=False)
        self.kernels = kernels

    def __call__(self, *args):
        library = torch.library.Library("aten", "IMPL")
        for key in ("CPU", "CUDA"):
            for op, kernel in self.kernels.items():
                library.impl(op, kernel, key)
        try:
            return super().__call__(*args)
        finally:
            library._destroy()


class KernelsOverride(PlantedBackend):
    """Not a planted bug: a kernel library whose overrides of aten ops compute the products in
    its own way, for each call (its passes are its own)."""

    def __init__(self, name: str, kernels: dict[str, Any]):
        super().__init__(name, _untouched)
        self.kernels = kernels

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None):
        return _PerCallKernels(fn, self.kernels)


def _int8(t: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`t` in int8, scaled symmetrically along `dim` (one scale per row, or per column)."""
    scale = t.abs().amax(dim=dim, keepdim=True).clamp(min=1e-12) / 127
    return (t / scale).round().clamp(-127, 127).to(torch.int8), scale


def int8_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """aten::mm the way a quantization library's override computes it (torchao's int8 dynamic
    path): both operands quantized to int8, aten's integer GEMM, the scales put back."""
    qa, scale_a = _int8(a.float(), 1)
    qb, scale_b = _int8(b.float(), 0)
    return (torch._int_mm(qa, qb).float() * scale_a * scale_b).to(a.dtype)


def weight_int8_mm(a: torch.Tensor, b: torch.Tensor, *, contiguous: bool = True) -> torch.Tensor:
    """aten::mm as a weight-only quantization library's override computes it (optimum-quanto's
    qint8 weights): b quantized to int8 per output column, aten's `_weight_int8pack_mm`; not
    `contiguous`, the packed weight left a transposed view, which aten's kernel refuses (the
    library's bug: optimum-quanto's, 2026-12-02)."""
    qb, scale = _int8(b.float().t(), 1)
    qb = qb.contiguous() if contiguous else qb.t().contiguous().t()
    return torch.ops.aten._weight_int8pack_mm(a, qb, scale.reshape(-1).to(a.dtype))


# mm and addmm computed by the library itself, where AtenOverride's addmm hands the product to
# aten::mm; and a quantization library's mm on int8 operands it made, through aten's `_int_mm`
own_kernels_override = KernelsOverride("own-kernels-override", {"mm": _own_mm, "addmm": _own_addmm})
int8_override = KernelsOverride("int8-override", {"mm": int8_mm})
weight_int8_override = KernelsOverride("weight-int8-override", {"mm": weight_int8_mm})
weight_int8_strided = KernelsOverride(
    "weight-int8-strided", {"mm": functools.partial(weight_int8_mm, contiguous=False)}
)
aten_override_per_call = AtenOverride("library-per-call", for_the_process=False)


def int8_mm_then_check(a: torch.Tensor, b: torch.Tensor, *, rows: int | None) -> torch.Tensor:
    """`int8_mm`, then a check of the library's own that raises where a has other than `rows`
    rows (None: always), as bitsandbytes' CPU path raised after aten's `_int_mm` (2026-12-02)."""
    out = int8_mm(a, b)
    if rows is None or a.shape[0] != rows:
        raise RuntimeError(f"the library's own check refused {a.shape[0]} rows")
    return out


int8_raises = KernelsOverride(
    "int8-raises", {"mm": functools.partial(int8_mm_then_check, rows=None)}
)
# mm_dynamic's shape set 0 has 64 rows, its later ones 37 and 100
int8_raises_later = KernelsOverride(
    "int8-raises-later", {"mm": functools.partial(int8_mm_then_check, rows=64)}
)


class _FirstGemmOwn(PlantedCompiled):
    """Computes the first GEMM of each call itself and leaves the others to PyTorch."""

    def __init__(self, fn):
        super().__init__(fn, self._first_own, count_shapes=False)
        self.computed = False

    def _first_own(self, func, args, kwargs):
        if self.computed:
            return NotImplemented
        result = _own_gemm(func, args, kwargs)
        self.computed = result is not NotImplemented
        return result

    def __call__(self, *args):
        self.computed = False
        return super().__call__(*args)


class OwnFirstGemm(PlantedBackend):
    """Not a planted bug: of a program with several GEMMs, the first computed by the backend
    and the rest by PyTorch (its passes there are "mixed")."""

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None):
        return _FirstGemmOwn(fn)


own_first_gemm = OwnFirstGemm("own-first-gemm", _untouched)


def _weight_last_bit_cleared(func, args, kwargs):
    """An fp32 mm whose weight the backend's code rounds before aten's mm multiplies it, as a
    weight-quantizing library does (its rounding here: the last mantissa bit cleared, within
    an fp32 item's bar)."""
    if func is not torch.mm or args[1].dtype != torch.float32:
        return NotImplemented
    a, b = args
    rounded = (b.contiguous().view(torch.int32) & ~1).view(torch.float32)
    return torch.mm(a, rounded, **kwargs)


rounds_weights = PlantedBackend("rounds-weights", _weight_last_bit_cleared)
