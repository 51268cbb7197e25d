"""One launch of the reference backend's kernel and one of cuBLAS's, at 8192^3, for Nsight
Compute (an sm90 GPU), to say where a gap to cuBLAS (or the rest of the peak) lies; fp8 rowwise
by default, or the recipe named (bf16, fp16, fp8):

    ncu --profile-from-start off --set full -o fp8 python tools/ncu_fp8.py [bf16|fp16|fp8]
    ncu --import fp8.ncu-rep --page details

Compiling, autotuning and warm-up calls happen before `cudaProfilerStart`, so the report holds
exactly the two GEMM launches (and cuBLAS's scale kernels, if any). The inputs are those of
tools/tune_sm90.py's fp8 anchor (same generator draws). Nothing here is asserted.
"""

from __future__ import annotations

import sys

import torch

from gemmconf.backends import resolve
from tools.tune_sm90 import problem


def main(recipe: str) -> None:
    fn, args, _ = problem(recipe)
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
    print(f"profiled ({recipe}): the reference's kernel, then cuBLAS's")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "fp8")
