"""bitsandbytes' CPU GEMM paths as gemmconf backends (an aten override, docs/outside-backends.md).

    gemmconf run dense/first.yaml --backend bnb_backend:Int8 -p no:xdist

Four backends, one per bitsandbytes path a CPU user reaches:

- ``bnb_backend:Int8`` (``bnb-int8``): LLM.int8 inference, what ``bnb.nn.Linear8bitLt`` runs in
  ``eval()``: ``bnb.matmul`` with ``state.is_training = False`` and threshold 0 ->
  ``MatMul8bitLt``: row-wise int8 quantization of A (cast to fp16 first) and of the weight,
  ``bitsandbytes::int8_linear_matmul`` (on an AVX512 CPU: ``torch._int_mm``), then
  ``int8_mm_dequant`` (+ bias).
- ``bnb_backend:Int8Fp`` (``bnb-int8-fp``): ``bnb.matmul`` with its default state
  (``is_training = True``: ``Linear8bitLt`` in ``train()``), which on a CPU is ``MatMul8bitFp``:
  the weight quantized to int8 and dequantized to A's dtype, then ``F.linear``.
- ``bnb_backend:Int8NoAvx512`` (``bnb-int8-noavx512``): the same LLM.int8 steps with the int8
  GEMM bitsandbytes runs on a CPU without AVX512 (its default kernel: float32 ``torch.matmul`` of
  the int8 values), to see how gemmconf attributes the same algorithm on another CPU.
- ``bnb_backend:NF4`` (``bnb-nf4``): ``bnb.nn.Linear4bit`` in ``eval()`` on an AVX512-BF16 CPU:
  ``quantize_4bit`` (NF4, blocksize 64), the weight repacked for the CPU kernel
  (``_convert_weight_packed_for_cpu``, as ``Linear4bit.forward`` does) where N % 32 == 0,
  K % 2 == 0 and K % 64 == 0, then ``bnb.matmul_4bit``: the packed weight runs bnb's own C kernel
  (``gemv_4bit_inference_cpu_nf4_bf16``), others ``gemm_4bit``'s default (dequantize + F.linear).

Kernels are registered over aten::mm and aten::addmm (CPU key) for the Compiled's call only.
F.linear and torch.matmul on 2-D (and 3-D @ 2-D) reach them through aten's decompositions;
bmm (3-D @ 3-D matmul) is not replaced. Inside a kernel, bitsandbytes' own F.linear calls reach
aten's kernel through ``aten.mm.out`` / ``aten.addmm.out`` (a re-entry guard), as the README says.
"""

from __future__ import annotations

import threading
import warnings

import torch

import bitsandbytes as bnb
import bitsandbytes.functional as BF

FLOATS = (torch.float16, torch.bfloat16, torch.float32)
SERVED_OPS = ("mm", "addmm", "linear", "matmul")
SERVED_DTYPES = ("fp16", "bf16", "fp32", "tf32")

_tls = threading.local()


def _aten_mm(a, b):
    return torch.ops.aten.mm.out(a, b, out=a.new_empty((a.shape[0], b.shape[1])))


def _aten_addmm(c, a, b, *, beta=1, alpha=1):
    out = a.new_empty((a.shape[0], b.shape[1]))
    return torch.ops.aten.addmm.out(c, a, b, beta=beta, alpha=alpha, out=out)


# --- the three products: a [M, K] times w [N, K] (a weight, linear's orientation) -> [M, N] ---


def int8_product(a, w, bias=None):
    state = bnb.MatmulLtState()
    state.is_training = False  # Linear8bitLt.eval(): MatMul8bitLt, the int8 GEMM
    return bnb.matmul(a, w, state=state, bias=bias)


def int8fp_product(a, w, bias=None):
    return bnb.matmul(a, w, bias=bias)  # default state: MatMul8bitFp on a CPU


def int8_noavx512_product(a, w, bias=None):
    """MatMul8bitLt's steps with the int8 GEMM bitsandbytes runs on a CPU without AVX512
    (backends/default/ops.py `_int8_linear_matmul_impl`: the int8 operands multiplied by
    torch.matmul in float32, exact while K * 127 * 127 < 2**24)."""
    from bitsandbytes.backends.default.ops import _int8_linear_matmul_impl

    ca, sca, _ = BF.int8_vectorwise_quant(a.to(torch.float16))
    cb, scb, _ = BF.int8_vectorwise_quant(w.to(torch.float16))
    acc = _int8_linear_matmul_impl(ca, cb)
    return torch.ops.bitsandbytes.int8_mm_dequant.default(acc, sca, scb, dtype=a.dtype, bias=bias)


NF4_BLOCK = 64


def nf4_product(a, w, bias=None):
    qw, qs = BF.quantize_4bit(w.contiguous(), blocksize=NF4_BLOCK, quant_type="nf4")
    n, k = w.shape
    if BF.has_avx512bf16() and n % 32 == 0 and k % 2 == 0 and k % NF4_BLOCK == 0:
        qw, qs = BF._convert_weight_packed_for_cpu(qw, qs)  # Linear4bit.forward in eval()
    out = bnb.matmul_4bit(a, qw, quant_state=qs, bias=bias)
    return out.to(a.dtype)


class _Override:
    """aten::mm and aten::addmm on the CPU served by one of the products above."""

    def __init__(self, product):
        self.product = product

    def mm(self, a, b):
        if getattr(_tls, "inside", False) or a.dtype not in FLOATS or b.dtype != a.dtype:
            return _aten_mm(a, b)  # bnb's own F.linear, or a dtype bnb does not take
        _tls.inside = True
        try:
            return self.product(a, b.t())
        finally:
            _tls.inside = False

    def addmm(self, c, a, b, *, beta=1, alpha=1):
        if getattr(_tls, "inside", False) or a.dtype not in FLOATS or b.dtype != a.dtype:
            return _aten_addmm(c, a, b, beta=beta, alpha=alpha)
        _tls.inside = True
        try:
            n = b.shape[1]
            if beta == 1 and alpha == 1 and c.dim() == 1 and c.shape[0] == n and c.dtype == a.dtype:
                return self.product(a, b.t(), bias=c)  # Linear's fused bias
            p = self.product(a, b.t())
            if alpha != 1:
                p = p * alpha
            if beta == 0:
                return p.to(a.dtype)
            return (p + beta * c).to(a.dtype)
        finally:
            _tls.inside = False


class Compiled:
    def __init__(self, fn, override):
        self.fn = fn
        self.override = override

    def __call__(self, *inputs):
        library = torch.library.Library("aten", "IMPL")  # for this call only
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            library.impl("mm", self.override.mm, "CPU")
            library.impl("addmm", self.override.addmm, "CPU")
        try:
            return self.fn(*inputs)
        finally:
            library._destroy()

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return 1


class _Bnb:
    name = "bnb"
    product = None

    def availability(self) -> str | None:
        return None

    def supports(self, instance) -> str | None:
        if instance.op not in SERVED_OPS:
            return f"bitsandbytes has no {instance.op} kernel"
        if instance.dtype not in SERVED_DTYPES:
            return f"bitsandbytes quantizes fp16/bf16/fp32 activations, not {instance.dtype}"
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        return Compiled(fn, _Override(type(self).product))


class Int8(_Bnb):
    name = "bnb-int8"
    product = staticmethod(int8_product)


class Int8Fp(_Bnb):
    name = "bnb-int8-fp"
    product = staticmethod(int8fp_product)


class Int8NoAvx512(_Bnb):
    name = "bnb-int8-noavx512"
    product = staticmethod(int8_noavx512_product)


class NF4(_Bnb):
    name = "bnb-nf4"
    product = staticmethod(nf4_product)
