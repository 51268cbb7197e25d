"""Device check: hopper_gemm_kernel's fp8 tile widths (128 one accumulator, 256 two halves),
bitwise against each other and the session-12 kernel, and interleaved do_bench vs cuBLAS."""
import statistics, sys
import torch, triton
sys.path.insert(0, "devwork")
import hopper_old
from gemmconf_reference import hopper

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


def launch(kernel, a, b, sa, sb, out, **cx):
    M, K = a.shape
    N = b.shape[0]
    progs = min(SMS, triton.cdiv(M, 128) * triton.cdiv(N, cx["BLOCK_N"]))
    cx = {"GROUP_M": 8, **cx}
    kernel[(progs,)](a, b, out, sa, sb, M, N, K, a.stride(0), 1, b.stride(0), out.stride(0),
                     sa.stride(0), sb.stride(1), BLOCK_K=128, NUM_PROGRAMS=progs,
                     B_KN=False, PROMOTE=True, SCALING="rowwise", num_warps=4, num_stages=1, **cx)
    return out


VARIANTS = {
    "old-128": (hopper_old.hopper_gemm_kernel, dict(BLOCK_N=128, STAGES=4)),
    "new-128": (hopper.hopper_gemm_kernel, dict(BLOCK_N=128, SUB_N=128, STAGES=4)),
    "new-256": (hopper.hopper_gemm_kernel, dict(BLOCK_N=256, SUB_N=128, STAGES=4)),
    "new-256-g16": (hopper.hopper_gemm_kernel, dict(BLOCK_N=256, SUB_N=128, STAGES=4, GROUP_M=16)),
}
SHAPES = [(8192, 28672, 4096), (8192, 6144, 4096), (8192, 4096, 14336), (8192, 4096, 4096),
          (8192, 10240, 8192), (8192, 8192, 8192), (8192, 57344, 8192)] if len(sys.argv) > 1 else [(4096, 4096, 4096), (2048, 4096, 4096), (1024, 8192, 4096), (2048, 2048, 8192),
          (512, 4096, 4096), (4096, 4096, 1024), (3072, 3072, 3072), (1024, 4096, 4096),
          (2048, 8192, 8192), (8192, 8192, 8192), (8192, 4096, 4096), (8192, 10240, 8192), (8300, 4112, 1008)]
for (M, N, K) in SHAPES:
    a, b, sa, sb = operands(M, N, K, seed=M + N + K)
    outs = {k: torch.full((M, N), float("nan"), device=dev, dtype=torch.bfloat16) for k in VARIANTS}
    fns = {"cublas": lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)}
    for k, (kern, cx) in VARIANTS.items():
        fns[k] = (lambda kern=kern, cx=cx, o=outs[k]: launch(kern, a, b, sa, sb, o, **cx))
    for f in fns.values():
        f()
    torch.cuda.synchronize()
    same = all(torch.equal(outs["old-128"], o) for o in outs.values())
    nan = sum(int(o.isnan().sum()) for o in outs.values())
    times = {k: [] for k in fns}
    for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
        for k, f in fns.items():
            times[k].append(triton.testing.do_bench(f, warmup=25, rep=100))
    flop = 2 * M * N * K
    tf = {k: flop / statistics.median(v) / 1e9 for k, v in times.items()}
    tiles = {w: triton.cdiv(M, 128) * triton.cdiv(N, w) for w in (128, 256)}
    line = f"{M}x{N}x{K} tiles {tiles[128]}/{tiles[256]}: cuBLAS {tf['cublas']:6.0f}"
    for k in VARIANTS:
        line += f" | {k} {tf[k] / tf['cublas']:.3f}x"
    print(line + f" | bitwise {same} nan {nan}", flush=True)
    del a, b, sa, sb, outs
    torch.cuda.empty_cache()
