"""An outside user's GEMM backend for gemmconf: a torch.compile backend that lowers the program
to ATen with aot_autograd and replaces aten.mm / aten.addmm / aten.bmm with "my kernels"
(fp32 accumulation via torch.matmul on upcast inputs, cast back). Other ops are left alone.

Variants:
  MyGemm       -- correct
  BuggyBias    -- drops the bias of addmm when the bias is 1-D
  BuggyAccum   -- bf16/fp16 computed with a low-precision accumulator (chunked sums rounded each step)
  BuggyLayout  -- returns a result with transposed (column-major) strides
"""

from __future__ import annotations

import os
import time

import torch
from torch._dynamo.backends.common import aot_autograd

aten = torch.ops.aten

_LOG = os.environ.get("MYBACKEND_LOG")


def _log(msg: str) -> None:
    if _LOG:
        with open(_LOG, "a") as f:
            f.write(f"{os.getpid()} {time.time():.3f} {msg}\n")


def _acc_dtype(dt: torch.dtype) -> torch.dtype:
    return torch.float32 if dt in (torch.float16, torch.bfloat16) else dt


def my_mm(a, b):
    _log(f"mm {a.dtype} {tuple(a.shape)}x{tuple(b.shape)}")
    acc = _acc_dtype(a.dtype)
    return torch.matmul(a.to(acc), b.to(acc)).to(a.dtype)


def my_bmm(a, b):
    _log(f"bmm {a.dtype} {tuple(a.shape)}x{tuple(b.shape)}")
    acc = _acc_dtype(a.dtype)
    return torch.matmul(a.to(acc), b.to(acc)).to(a.dtype)


def my_addmm(bias, a, b, *, beta=1, alpha=1):
    _log(f"addmm {a.dtype} bias{tuple(bias.shape)} {tuple(a.shape)}x{tuple(b.shape)} beta={beta} alpha={alpha}")
    acc = _acc_dtype(a.dtype)
    out = torch.matmul(a.to(acc), b.to(acc))
    if alpha != 1:
        out = out * alpha
    if beta != 0:  # beta == 0: bias ignored (NaN/Inf in it not propagated), as torch.addmm
        out = out + beta * bias.to(acc)
    return out.to(a.dtype)


# --- buggy kernels -------------------------------------------------------------------------

def buggy_addmm_drop_1d_bias(bias, a, b, *, beta=1, alpha=1):
    _log(f"BUGGY addmm bias{tuple(bias.shape)}")
    if bias.dim() == 1:
        acc = _acc_dtype(a.dtype)
        return (alpha * torch.matmul(a.to(acc), b.to(acc))).to(a.dtype)
    return my_addmm(bias, a, b, beta=beta, alpha=alpha)


def _lowp_matmul(a, b):
    # accumulate in the input dtype, 16-wide K chunks, rounding the running sum each chunk
    if a.dtype not in (torch.float16, torch.bfloat16):
        return torch.matmul(a, b)
    k = a.shape[-1]
    out = None
    for k0 in range(0, k, 16):
        part = torch.matmul(a[..., k0:k0 + 16].float(), b[..., k0:k0 + 16, :].float()).to(a.dtype)
        out = part if out is None else (out + part)  # bf16 + bf16 -> bf16 rounding each step
    if out is None:
        out = torch.zeros(*a.shape[:-1], b.shape[-1], dtype=a.dtype)
    return out


def buggy_mm_lowp(a, b):
    _log("BUGGY mm lowp")
    return _lowp_matmul(a, b)


def buggy_bmm_lowp(a, b):
    _log("BUGGY bmm lowp")
    return _lowp_matmul(a, b)


def buggy_mm_transposed(a, b):
    _log("BUGGY mm transposed")
    out = my_mm(a, b)
    return out.t().contiguous().t()  # same values, column-major strides


# --- the torch.compile backend ---------------------------------------------------------------

CORRECT = {aten.mm.default: my_mm, aten.addmm.default: my_addmm, aten.bmm.default: my_bmm}


def make_fx_compiler(table, stats):
    def fx_compiler(gm: torch.fx.GraphModule, example_inputs):
        replaced = 0
        for node in gm.graph.nodes:
            if node.op == "call_function" and node.target in table:
                node.target = table[node.target]
                replaced += 1
        gm.graph.lint()
        gm.recompile()
        stats["replaced"] += replaced
        _log(f"graph compiled: replaced {replaced} GEMM node(s)")
        return gm

    return fx_compiler


class Compiled:
    def __init__(self, fn, table, dynamic):
        self.stats = {"invocations": 0, "replaced": 0}
        fx = make_fx_compiler(table, self.stats)
        inner = aot_autograd(fw_compiler=fx, bw_compiler=fx)
        stats = self.stats

        def dynamo_backend(gm, example_inputs):
            stats["invocations"] += 1
            return inner(gm, example_inputs)

        self._compiled = torch.compile(fn, backend=dynamo_backend, dynamic=dynamic)

    def __call__(self, *inputs):
        return self._compiled(*inputs)

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return self.stats["invocations"]


class MyGemm:
    name = "my-gemm"
    table = CORRECT

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        _log(f"{self.name}.compile({getattr(fn, '__name__', fn)}, dynamic={dynamic})")
        return Compiled(fn, self.table, dynamic)


class BuggyBias(MyGemm):
    name = "my-gemm-buggy-bias"
    table = {**CORRECT, aten.addmm.default: buggy_addmm_drop_1d_bias}


class BuggyAccum(MyGemm):
    name = "my-gemm-buggy-accum"
    table = {**CORRECT, aten.mm.default: buggy_mm_lowp, aten.bmm.default: buggy_bmm_lowp}


class BuggyLayout(MyGemm):
    name = "my-gemm-buggy-layout"
    table = {**CORRECT, aten.mm.default: buggy_mm_transposed}


# --- a backward-only bug: gradients' GEMMs scaled by 1.001 ------------------------------------

def buggy_mm_grad(a, b):
    _log("BUGGY mm grad")
    return (my_mm(a, b) * 1.001).to(a.dtype)


class _BwCompiled(Compiled):
    def __init__(self, fn, table, dynamic):
        self.stats = {"invocations": 0, "replaced": 0}
        fw = make_fx_compiler(table, self.stats)
        bw = make_fx_compiler({**table, aten.mm.default: buggy_mm_grad}, self.stats)
        inner = aot_autograd(fw_compiler=fw, bw_compiler=bw)
        stats = self.stats

        def dynamo_backend(gm, example_inputs):
            stats["invocations"] += 1
            return inner(gm, example_inputs)

        self._compiled = torch.compile(fn, backend=dynamo_backend, dynamic=dynamic)


class BuggyBackward(MyGemm):
    name = "my-gemm-buggy-backward"

    def compile(self, fn, example_inputs, *, dynamic):
        return _BwCompiled(fn, self.table, dynamic)


class Declared(MyGemm):
    name = "my-gemm-declared"

    def supports(self, instance):
        if instance.op == "scaled_grouped_mm":
            return "no grouped fp8 kernel yet"
        return None


class BadSupports(MyGemm):
    name = "my-gemm-badsupports"

    def supports(self, instance):
        return instance.op == "scaled_grouped_mm"  # wrong: a bool


class _Counting:
    def __init__(self, table):
        self.invocations = 0
        self.stats = {"replaced": 0}
        self.table = table

    def __call__(self, gm, example_inputs):
        self.invocations += 1
        fx = make_fx_compiler(self.table, {"replaced": 0})
        return aot_autograd(fw_compiler=fx, bw_compiler=fx)(gm, example_inputs)


class ViaToolkit(MyGemm):
    """Same kernels, through gemmconf.backends.dynamo.DynamoCompiled (the cutlass plugin's way)."""
    name = "my-gemm-toolkit"

    def compile(self, fn, example_inputs, *, dynamic):
        from gemmconf.backends.dynamo import DynamoCompiled

        class C(DynamoCompiled):
            def artifacts(self):
                return {}

        return C(fn, _Counting(self.table), dynamic=dynamic)
