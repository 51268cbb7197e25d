"""Device check (session 16): hopper_gemm_kernel's fp8 rowwise tiles where it misses cuBLAS on
some H100s (8192^3, 70B qkv): tile width, ring depth (cuBLAS's nvjet kernel here is 128x128 with
6 stages) and GROUP_M, bitwise against each other, interleaved do_bench rounds vs cuBLAS."""
import statistics, sys
import torch, triton
from gemmconf_reference import hopper
sys.path.insert(0, "devwork")
import hopper_q, hopper_pp

triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
dev = torch.device("cuda")
SMS = torch.cuda.get_device_properties(0).multi_processor_count
print(torch.__version__, triton.__version__, torch.cuda.get_device_name(), SMS, flush=True)


def operands(M, N, K, seed=0):
    g = torch.Generator(device=dev).manual_seed(seed)
    a = (torch.randn(M, K, device=dev, generator=g) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device=dev, generator=g) * 2).to(torch.float8_e4m3fn)
    sa = torch.rand(M, 1, device=dev, generator=g) + 0.5
    sb = torch.rand(1, N, device=dev, generator=g) + 0.5
    return a, b, sa, sb


def launch(a, b, sa, sb, out, kernel=None, SUB_N=128, **cx):
    M, K = a.shape
    N = b.shape[0]
    progs = min(SMS, triton.cdiv(M, 128) * triton.cdiv(N, cx["BLOCK_N"]))
    (kernel or hopper.hopper_gemm_kernel)[(progs,)](
        a, b, out, sa, sb, M, N, K, a.stride(0), 1, b.stride(0), out.stride(0), sa.stride(0),
        sb.stride(1), SUB_N=SUB_N, BLOCK_K=128, NUM_PROGRAMS=progs, B_KN=False, PROMOTE=True,
        SCALING="rowwise", num_warps=4, num_stages=1, **cx)
    return out


VARIANTS = {
    "default": dict(BLOCK_N=256, STAGES=4, GROUP_M=8),
    "default-128": dict(BLOCK_N=128, STAGES=4, GROUP_M=8),
    "turns": dict(BLOCK_N=256, STAGES=4, GROUP_M=8, kernel=hopper_pp.hopper_gemm_kernel),
    "turns-128": dict(BLOCK_N=128, STAGES=4, GROUP_M=8, kernel=hopper_pp.hopper_gemm_kernel),
}
SHAPES = [(8192, 8192, 8192), (8192, 10240, 8192), (8192, 28672, 4096), (8192, 6144, 4096), (8192, 4096, 14336), (8192, 57344, 8192)]
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
for (M, N, K) in SHAPES:
    a, b, sa, sb = operands(M, N, K, seed=M + N + K)
    outs = {k: torch.full((M, N), float("nan"), device=dev, dtype=torch.bfloat16) for k in VARIANTS}
    fns = {"cublas": lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)}
    for k, cx in VARIANTS.items():
        try:
            launch(a, b, sa, sb, outs[k], **cx)
            fns[k] = (lambda cx=cx, o=outs[k]: launch(a, b, sa, sb, o, **cx))
        except Exception as exc:  # e.g. out of shared memory
            print(f"  {k}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
    torch.cuda.synchronize()
    ran = [k for k in VARIANTS if k in fns]
    same = all(torch.equal(outs[ran[0]], outs[k]) for k in ran)
    nan = sum(int(outs[k].isnan().sum()) for k in ran)
    ref = fns["cublas"]().float()
    err = float((outs[ran[0]].float() - ref).norm() / ref.norm())
    times = {k: [] for k in fns}
    for r in range(ROUNDS):
        for k, f in fns.items():
            times[k].append(triton.testing.do_bench(f, warmup=25, rep=100))
    flop = 2 * M * N * K
    tf = {k: flop / statistics.median(v) / 1e9 for k, v in times.items()}
    line = f"{M}x{N}x{K}: cuBLAS {tf['cublas']:6.0f}"
    for k in ran:
        line += f" | {k} {tf[k] / tf['cublas']:.3f}x"
    print(line + f" | bitwise {same} nan {nan} rel-err-vs-cuBLAS {err:.2e}", flush=True)
    del a, b, sa, sb, outs
    torch.cuda.empty_cache()
