"""Repros: where inductor max-autotune disagrees with eager (found by the suite on an H200).

    python tools/repro_inductor.py [CASE ...]      # default: every case; needs a CUDA GPU
                                                   # (from the repository root)

Each case compiles one small GEMM with `torch.compile(mode="max-autotune-no-cudagraphs")` and
`max_autotune_gemm_backends` set to one template family, runs eager on the same inputs, and
prints two lines: what eager did, what the compiled function did. Cases that fault the GPU run in
a subprocess each (a fault ends the process's CUDA context) when several cases are asked for.

Cases (the suite items they stand for are in the published README):
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # harness, run from anywhere


def compiled(fn, backends: str, dynamic: bool | None = None):
    """`torch.compile` under exactly the inductor config the suite's adapter uses: the options of
    mode max-autotune-no-cudagraphs and max_autotune_gemm_backends (for CUTLASS also the profiling
    cap and, where torch ships no CUTLASS checkout, the nvidia-cutlass wheel laid out as one)."""
    from gemmconf.backends.inductor import make_inductor_max_autotune

    torch._dynamo.reset()
    options = make_inductor_max_autotune(backends).inductor_patches()
    print(f"  inductor options: {options}")
    return torch.compile(fn, options=options, dynamic=dynamic)


def outcome(fn, *args) -> str:
    try:
        value = fn(*args)
        torch.cuda.synchronize()
    except Exception as exc:  # the point is to report it
        return f"raises {type(exc).__name__}: {str(exc).splitlines()[0][:110]}"
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        nan = int(value.isnan().sum())
        return f"returns {tuple(value.shape)} {value.dtype}, {nan} NaN"
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


CASES = {
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
