"""Variants of hopper_fp8_kernel's constexprs against cuBLAS (do_bench medians, interleaved)."""
import statistics, torch, triton
from gemmconf_reference import hopper_fp8, compat
compat.set_tma_allocator()
dev = "cuda"; SMS = torch.cuda.get_device_properties(0).multi_processor_count
def operands(M, N, K):
    g = torch.Generator(device=dev).manual_seed(1)
    a = (torch.randn(M, K, device=dev, generator=g) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device=dev, generator=g) * 2).to(torch.float8_e4m3fn)
    return a, b, torch.rand(M, 1, device=dev, generator=g) + 0.5, torch.rand(1, N, device=dev, generator=g) + 0.5
def ours(a, b, sa, sb, out, STAGES, GROUP_M):
    M, K = a.shape; N = b.shape[0]
    progs = min(SMS, triton.cdiv(M, 128) * triton.cdiv(N, 128))
    hopper_fp8.hopper_fp8_kernel[(progs,)](a, b, out, sa, sb, M, N, K, a.stride(0), b.stride(0), out.stride(0), 1, 1,
        BLOCK_N=128, BLOCK_K=128, STAGES=STAGES, GROUP_M=GROUP_M, NUM_PROGRAMS=progs, SCALING="rowwise", num_warps=4, num_stages=STAGES)
VARS = [(4, 8), (3, 8), (5, 8), (4, 4), (4, 16), (6, 16)]
for name, (M, N, K) in {"8192^3": (8192, 8192, 8192), "8b-gate_up": (8192, 28672, 4096), "8b-o": (8192, 4096, 4096), "70b-qkv": (8192, 10240, 8192)}.items():
    a, b, sa, sb = operands(M, N, K); out = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    fns = {"cublas": lambda: torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16)}
    for s, gm in VARS: fns[f"s{s}g{gm}"] = (lambda s=s, gm=gm: ours(a, b, sa, sb, out, s, gm))
    t = {k: [] for k in fns}
    for r in range(5):
        for k, f in fns.items(): t[k].append(triton.testing.do_bench(f, warmup=25, rep=100))
    med = {k: statistics.median(v) for k, v in t.items()}
    print(f"{name:10s} cublas {2*M*N*K/med['cublas']/1e9:6.0f} | " + " | ".join(f"{k} {med['cublas']/med[k]:.3f}x" for k in fns if k != "cublas"), flush=True)
