"""Every marker an item can carry, with its help line (registered, so --strict-markers passes)."""

from __future__ import annotations

from gemmconf.gemm.dtypes import FP8
from gemmconf.gemm.ops import OPS

HARDWARE_MARKERS = {
    "cpu": "runs on a CPU (no GPU needed)",
    "sm80": "needs an NVIDIA GPU of compute capability 8.0+ (Ampere)",
    "sm89": "needs compute capability 8.9+ (Ada: fp8)",
    "sm90": "needs compute capability 9.0+ (Hopper: wgmma, TMA) or checks sm90 code",
    "sm100": "needs datacenter Blackwell (cc 10.x/11.x: tcgen05, TMEM) or checks sm100 code",
    "sm120": "needs consumer Blackwell (cc 12.x: no tcgen05/TMEM) or checks sm120 code",
}
FEATURE_MARKERS = {
    "fp8": f"fp8 ({'/'.join(FP8)}) GEMMs",
    "tma": "TMA / tensor-descriptor alignment scenarios",
    "dynamic": "dynamic-shape scenarios (several shape sets through one compiled artifact)",
    "zero_size": "a dimension of size 0",
    "error_case": "inputs eager rejects: the backend must raise the same exception class",
    "codecheck": "FileCheck checks on the backend's generated code",
    "epilogue": "fused epilogue scenarios",
    "layout": "non-row-major operand layouts",
    "stress": "numerical stress: inf/NaN, near-max magnitudes, long K",
    "seed": "ported from a PyTorch test (the scenario names it)",
    "slow": "takes long on a CPU",
    "bench": "a benchmark shape (suites/bench): run with --benchmark to time it against cuBLAS",
    "mx": "MX block scaling (F.scaled_mm, e8m0 scales per 1x32, fp8 elements)",
    "nvfp4": "NVFP4 block scaling (F.scaled_mm, fp4 elements, e4m3 scales per 1x16)",
    "backward": "gradients through the backend (torch.autograd.grad of the op's output)",
    "out": "out= variants: the op writes into a given tensor",
    "decode": "decode and vocabulary-projection shapes (M of 1-16, large N and K)",
}
OP_MARKERS: dict[str, str] = {}
for _op in OPS.values():  # variants (mm_out, scaled_mm_v2) share their base op's marker
    OP_MARKERS.setdefault(_op.marker, f"the {_op.name} op: {_op.doc}")
MARKERS: dict[str, str] = {**HARDWARE_MARKERS, **FEATURE_MARKERS, **OP_MARKERS}
