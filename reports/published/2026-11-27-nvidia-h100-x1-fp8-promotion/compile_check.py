"""Cross-compile hopper kernels for sm90 to cubin here; print ptxas's log lines (C7514 etc.)."""
import os, sys, re
os.environ["TRITON_DUMP_PTXAS_LOG"] = "1"
sys.path.insert(0, os.path.dirname(__file__))
import torch, triton
from gemmconf_reference import compat, hopper
import hopper_ov

def compile(fn, block_n, sub_n, stages=4, promote=True):
    sig = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*bf16", "a_scale_ptr": "*fp32",
           "b_scale_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
           "stride_bk": "constexpr", "stride_bn": "i32", "stride_cm": "i32", "stride_sam": "constexpr",
           "stride_sbn": "constexpr", "BLOCK_N": "constexpr", "SUB_N": "constexpr", "BLOCK_K": "constexpr",
           "STAGES": "constexpr", "GROUP_M": "constexpr", "NUM_PROGRAMS": "constexpr", "B_KN": "constexpr",
           "PROMOTE": "constexpr", "SCALING": "constexpr"}
    names = list(sig)
    vals = {"stride_bk": 1, "stride_sam": 1, "stride_sbn": 1, "BLOCK_N": block_n, "SUB_N": sub_n,
            "BLOCK_K": 128, "STAGES": stages, "GROUP_M": 8, "NUM_PROGRAMS": 132, "B_KN": False,
            "PROMOTE": promote, "SCALING": "rowwise"}
    constexprs = {(names.index(k),): v for k, v in vals.items()}
    attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(names) if sig[n] != "constexpr" and n not in ("M", "N", "K")}
    c = triton.compile(compat.ast_source(fn, sig, constexprs, attrs), target=compat.gpu_target(90),
                       options={"num_warps": 4, "num_stages": 1})
    return c

which = sys.argv[1:] or ["default", "narrow", "ov"]
for name in which:
    fn, bn = {"default": (hopper.hopper_gemm_kernel, 256), "narrow": (hopper.hopper_gemm_kernel, 128),
              "ov": (hopper_ov.hopper_gemm_kernel, 128), "p3": (__import__("hopper_p3").hopper_gemm_kernel, 128)}[name]
    print("=====", name, flush=True)
    c = compile(fn, bn, 128)
    ptx = c.asm["ptx"]
    print("wgmma:", ptx.count("wgmma.mma_async"), "wait_group:", re.findall(r"wgmma.wait_group.sync.aligned \d+", ptx)[:10], flush=True)
