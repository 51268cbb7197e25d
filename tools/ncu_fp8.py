"""One launch of the reference backend's fp8 rowwise kernel and one of cuBLAS's, at 8192^3, for
Nsight Compute (an sm90 GPU), to say where the fp8 gap of BENCHMARKS.md lies:

    ncu --profile-from-start off --set full -o fp8 python tools/ncu_fp8.py
    ncu --import fp8.ncu-rep --page details

Compiling, autotuning and warm-up calls happen before `cudaProfilerStart`, so the report holds
exactly the two GEMM launches (and cuBLAS's scale kernels, if any). The inputs are those of
tools/tune_sm90.py's fp8 anchor (same generator draws). Nothing here is asserted.
"""

from __future__ import annotations

import torch

from gemmconf.backends import resolve
from tools.tune_sm90 import problem


def main() -> None:
    fn, args, _ = problem("fp8")
    compiled = resolve("reference").compile(fn, list(args), dynamic=False)
    for _ in range(3):  # compile, then warm both
        compiled(*args)
        fn(*args)
    torch.cuda.synchronize()
    cudart = torch.cuda.cudart()
    cudart.cudaProfilerStart()
    compiled(*args)
    fn(*args)
    torch.cuda.synchronize()
    cudart.cudaProfilerStop()
    print("profiled: the reference's kernel, then cuBLAS's (torch._scaled_mm)")


if __name__ == "__main__":
    main()
