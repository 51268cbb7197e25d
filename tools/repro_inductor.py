"""Repros: where inductor disagrees with eager (found by the suite on an H200 and an H100).

    python tools/repro_inductor.py [CASE ...]      # default: every case; needs a CUDA GPU
                                                   # (from the repository root)

Each case compiles one small GEMM, runs eager on the same inputs, and prints two lines: what
eager did, what the compiled function did (shape, dtype, strides, NaN count, or the exception).
The max-autotune cases compile with `mode="max-autotune-no-cudagraphs"` and
`max_autotune_gemm_backends` set to one template family; the `default_*` cases with a plain
`torch.compile(fn)`, as a user would, outside the harness. Cases that fault the GPU run in a
subprocess each (a fault ends the process's CUDA context) when several cases are asked for.

Cases of default inductor (torch 2.11 on an H100, 2026-11-26; suites/expectations/inductor.yaml):
  default_padded      mm, bmm and linear whose N is not a multiple of 8 (or 4 for fp32): where
                      inductor's pad_mm pass pads the operands, the result comes back as a
                      slice of the padded buffer, its row stride rounded up, where eager returns
                      it contiguous (pytorch/pytorch#152520). Whether pad_mm pads is decided by
                      timing both versions at compile time, so a plain compile may not pad;
                      the second line forces it (`force_shape_pad`).
  default_k_mismatch  _scaled_mm with K 32 against 48: eager raises RuntimeError, the compiled
                      call an AssertionError from inductor's size checks.
  default_int_mm_n0   _int_mm with N = 0: CUDA eager raises (N must be a positive multiple of 8),
                      the compiled call returns an empty result.
  default_rows        mm/addmm/linear/bmm: row 0 of an M = 1 call against row 0 of the M = 64
                      call, eager and compiled (both call cuBLAS, which picks kernels by M).
  default_blockwise   blockwise-scaled _scaled_mm at 64x256x256, eager and compiled, each
                      against fp64: the compiled call runs eager's kernel and is as wrong
                      (tools/repro_eager_blockwise.py).
  default_scaled_v2   F.scaled_mm (aten _scaled_mm_v2): dynamo captures no graph (it skips the
                      op), so inductor never sees it.

Cases of max-autotune (the suite items they stand for are in the published README):
  nan_beta0      addmm(C, A, B, beta=0) with NaN in C, TRITON: eager ignores C (its docs: "nan and
                 inf in it will not be propagated"), the template multiplies it by 0.
  e5m2_pair      _scaled_mm of two e5m2 operands, TRITON: eager raises, compiled computes.
  bias_fp32_out  rowwise _scaled_mm with bias and out_dtype fp32, TRITON: eager raises, compiled
                 computes.
  int_mm_m1      _int_mm with M = 1, TRITON: CUDA eager raises (M must exceed 16), compiled
                 computes.
  rowwise_dynamic  rowwise _scaled_mm (use_fast_accum) compiled with dynamic=True, TRITON: the
                 suite item faulted the GPU (illegal memory access) at 256x128x384, where the
                 static compile is right. Written from the item; not yet run on a GPU.
  cutlass_addmm  addmm fp16 4096x2048x25728 with a bias row, CUTLASS: an illegal memory access.
  cutlass_offset linear on fp16 operands at storage offset 1, CUTLASS: a misaligned address.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # harness, run from anywhere


DEFAULT = "default"  # `backends` for a plain torch.compile(fn)


def compiled(fn, backends: str, dynamic: bool | None = None):
    """`torch.compile` under exactly the inductor config the suite's adapter uses: the options of
    mode max-autotune-no-cudagraphs and max_autotune_gemm_backends (for CUTLASS also the profiling
    cap and, where torch ships no CUTLASS checkout, the nvidia-cutlass wheel laid out as one).
    With `backends` DEFAULT: `torch.compile(fn)` and nothing else."""
    from gemmconf.backends.inductor import make_inductor_max_autotune

    torch._dynamo.reset()
    if backends == DEFAULT:
        return torch.compile(fn, dynamic=dynamic)
    options = make_inductor_max_autotune(backends).inductor_patches()
    print(f"  inductor options: {options}")
    return torch.compile(fn, options=options, dynamic=dynamic)


def outcome(fn, *args) -> str:
    try:
        value = fn(*args)
        torch.cuda.synchronize()
    except Exception as exc:  # the point is to report it
        return f"raises {type(exc).__name__}: {str(exc).splitlines()[0][:110]}"
    if isinstance(value, torch.Tensor):
        nan = int(value.isnan().sum()) if value.is_floating_point() else 0
        return f"returns {tuple(value.shape)} {value.dtype} strides {value.stride()}, {nan} NaN"
    return f"returns {type(value).__name__}"


def report(name: str, fn, backends: str, *args, dynamic: bool | None = None) -> None:
    print(f"{name}: eager {outcome(fn, *args)}")
    print(f"{name}: {backends:7} {outcome(compiled(fn, backends, dynamic), *args)}", flush=True)


def nan_beta0() -> None:
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        a = torch.randn(33, 48, device="cuda", dtype=dtype)
        b = torch.randn(48, 40, device="cuda", dtype=dtype)
        c = torch.full((33, 40), float("nan"), device="cuda", dtype=dtype)

        def addmm(c, a, b):
            return torch.addmm(c, a, b, beta=0.0)

        report(f"nan_beta0[{str(dtype)[6:]}]", addmm, "TRITON", c, a, b)


def _fp8(m: int, k: int, dtype: torch.dtype, col: bool = False) -> torch.Tensor:
    x = torch.randn(k, m, device="cuda").t() if col else torch.randn(m, k, device="cuda")
    return x.to(dtype)


def e5m2_pair() -> None:
    a, b = _fp8(32, 32, torch.float8_e5m2), _fp8(48, 32, torch.float8_e5m2).t()
    sa = torch.ones(32, 1, device="cuda")
    sb = torch.ones(1, 48, device="cuda")

    def scaled(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)

    report("e5m2_pair", scaled, "TRITON", a, b, sa, sb)


def bias_fp32_out() -> None:
    a, b = _fp8(32, 32, torch.float8_e4m3fn), _fp8(48, 32, torch.float8_e4m3fn).t()
    sa = torch.ones(32, 1, device="cuda")
    sb = torch.ones(1, 48, device="cuda")
    bias = torch.randn(48, device="cuda")

    def scaled(a, b, sa, sb, bias):
        return torch._scaled_mm(a, b, sa, sb, bias=bias, out_dtype=torch.float32)

    report("bias_fp32_out", scaled, "TRITON", a, b, sa, sb, bias)


def int_mm_m1() -> None:
    a = torch.randint(-8, 8, (1, 8), device="cuda", dtype=torch.int8)
    b = torch.randint(-8, 8, (8, 8), device="cuda", dtype=torch.int8).t()
    report("int_mm_m1", torch._int_mm, "TRITON", a, b)


def rowwise_dynamic() -> None:
    a, b = _fp8(256, 384, torch.float8_e4m3fn), _fp8(128, 384, torch.float8_e4m3fn).t()
    sa = torch.rand(256, 1, device="cuda") + 0.5
    sb = torch.rand(1, 128, device="cuda") + 0.5

    def scaled(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=True)

    report("rowwise_dynamic", scaled, "TRITON", a, b, sa, sb, dynamic=True)


def cutlass_addmm() -> None:
    a = torch.randn(4096, 25728, device="cuda", dtype=torch.float16)
    b = torch.randn(25728, 2048, device="cuda", dtype=torch.float16)
    bias = torch.randn(2048, device="cuda", dtype=torch.float16)
    report("cutlass_addmm", torch.addmm, "CUTLASS", bias, a, b)


def cutlass_offset() -> None:
    storage = torch.randn(2 * 128 * 128 + 1, device="cuda", dtype=torch.float16)
    a = storage[1 : 1 + 128 * 128].view(128, 128)  # 2-byte aligned data pointers
    w = storage[1 + 128 * 128 :].view(128, 128)
    report("cutlass_offset", torch.nn.functional.linear, "CUTLASS", a, w)


def default_padded() -> None:
    cases = {
        "mm-fp32-127x65x33": (torch.mm, (127, 33), (33, 65), torch.float32, False),
        "mm-fp16-127x65x33-col": (torch.mm, (127, 33), (65, 33), torch.float16, True),
        "bmm-fp16-2b17x9x65": (torch.bmm, (2, 17, 65), (2, 65, 9), torch.float16, False),
        "linear-fp16-3b127x65x33": (F.linear, (3, 127, 33), (65, 33), torch.float16, False),
    }
    for name, (op, a_shape, b_shape, dtype, col) in cases.items():
        a = torch.randn(a_shape, device="cuda", dtype=dtype)
        b = torch.randn(b_shape, device="cuda", dtype=dtype)
        b = b.t() if col else b
        report(f"default_padded[{name}]", op, DEFAULT, a, b)
        with torch._inductor.config.patch(force_shape_pad=True):
            result = outcome(compiled(op, DEFAULT), a, b)
        print(f"default_padded[{name}]: force_shape_pad {result}", flush=True)


def default_k_mismatch() -> None:
    a, b = _fp8(32, 32, torch.float8_e4m3fn), _fp8(48, 48, torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda")

    def scaled(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)

    report("default_k_mismatch", scaled, DEFAULT, a, b, one, one)


def default_int_mm_n0() -> None:
    a = torch.randint(-8, 8, (32, 16), device="cuda", dtype=torch.int8)
    b = torch.randint(-8, 8, (0, 16), device="cuda", dtype=torch.int8).t()
    report("default_int_mm_n0", torch._int_mm, DEFAULT, a, b)


def default_rows() -> None:
    a = torch.randn(64, 256, device="cuda")
    b = torch.randn(256, 48, device="cuda")
    bias = torch.randn(48, device="cuda")
    ops = {
        "mm": lambda a, b: torch.mm(a, b),
        "addmm": lambda a, b: torch.addmm(bias, a, b),
        "linear": lambda a, b: F.linear(a, b.t(), bias),
        "bmm": lambda a, b: torch.bmm(a.expand(2, -1, -1), b.expand(2, -1, -1))[0],
    }
    for name, op in ops.items():
        for label, fn in (("eager", op), ("default", compiled(op, DEFAULT))):
            full, one = fn(a, b), fn(a[:1], b)
            differ = int((full[:1] != one).sum())
            print(f"default_rows[{name}-fp32]: {label:7} row 0 differs at {differ} of 48")


def default_blockwise() -> None:
    from tools.repro_eager_blockwise import blockwise_operands

    operands, ref = blockwise_operands(64, 256, 256)

    def scaled(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)

    for label, fn in (("eager", scaled), ("default", compiled(scaled, DEFAULT))):
        out = fn(*operands).double()
        finite = torch.isfinite(out)
        err = float((out - ref).abs()[finite].max()) if finite.any() else float("nan")
        print(
            f"default_blockwise: {label:7} {int((~finite).sum())} non-finite of {out.numel()}, "
            f"largest finite error {err:.3g} (|fp64| <= {float(ref.abs().max()):.3g})"
        )


def default_scaled_v2() -> None:
    from torch._dynamo.utils import counters

    a, b = _fp8(48, 96, torch.float8_e4m3fn), _fp8(64, 96, torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda")
    tensorwise = F.ScalingType.TensorWise

    def scaled(a, b, sa, sb):
        return F.scaled_mm(a, b, sa, tensorwise, sb, tensorwise, output_dtype=torch.bfloat16)

    counters.clear()
    report("default_scaled_v2", scaled, DEFAULT, a, b, one, one)
    print(f"default_scaled_v2: graphs captured {counters['stats'].get('unique_graphs', 0)}")


CASES = {
    "default_padded": default_padded,
    "default_k_mismatch": default_k_mismatch,
    "default_int_mm_n0": default_int_mm_n0,
    "default_rows": default_rows,
    "default_blockwise": default_blockwise,
    "default_scaled_v2": default_scaled_v2,
    "nan_beta0": nan_beta0,
    "e5m2_pair": e5m2_pair,
    "bias_fp32_out": bias_fp32_out,
    "int_mm_m1": int_mm_m1,
    "rowwise_dynamic": rowwise_dynamic,
    "cutlass_addmm": cutlass_addmm,
    "cutlass_offset": cutlass_offset,
}
# A CUDA fault ends the process's CUDA context: these run in a subprocess each.
ISOLATED = {"rowwise_dynamic", "cutlass_addmm", "cutlass_offset"}


def main(names: list[str]) -> None:
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; known: {sorted(CASES)}")
    print(
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}",
        flush=True,
    )
    chosen = names or list(CASES)
    for name in chosen:
        if name in ISOLATED and len(chosen) > 1:
            subprocess.run([sys.executable, __file__, name], check=False)
        else:
            CASES[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
