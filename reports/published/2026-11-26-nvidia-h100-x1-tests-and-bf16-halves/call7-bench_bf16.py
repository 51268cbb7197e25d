"""Device check: hopper_gemm_kernel for 16-bit types, one 256-column chain and store (3 stages)
against two 128-column halves (3 or 4 stages); bitwise against each other, interleaved do_bench
against cuBLAS on the same inputs."""
import statistics, sys
import torch, triton
import torch.nn.functional as F
from gemmconf_reference import hopper

triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
dev = torch.device("cuda")
SMS = torch.cuda.get_device_properties(0).multi_processor_count
print(torch.__version__, triton.__version__, torch.cuda.get_device_name(), SMS, flush=True)


def launch(a, b, out, b_kn, **cx):
    M, K = a.shape
    N = out.shape[1]
    progs = min(SMS, triton.cdiv(M, 128) * triton.cdiv(N, 256))
    return hopper.hopper_gemm_kernel[(progs,)](
        a, b, out, None, None, M, N, K, a.stride(0),
        b.stride(0) if b_kn else 1, 1 if b_kn else b.stride(0), out.stride(0), 0, 0,
        BLOCK_N=256, BLOCK_K=64, GROUP_M=8, NUM_PROGRAMS=progs, B_KN=b_kn, PROMOTE=False,
        SCALING="none", num_warps=4, num_stages=1, **cx)


VARIANTS = {
    "256x3": dict(SUB_N=256, STAGES=3),  # sessions 12-13
    "128x3": dict(SUB_N=128, STAGES=3),
    "128x4": dict(SUB_N=128, STAGES=4),  # this session's plan
}
# (M, N, K, op, dtype): the anchors (mm, B row-major) and Llama-3 8B/70B prefill projections
SHAPES = [(8192, 8192, 8192, "mm", torch.bfloat16), (8192, 8192, 8192, "mm", torch.float16)]
SHAPES += [(8192, n, k, "linear", torch.bfloat16) for n, k in
           [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336),
            (10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)]]
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
for (M, N, K, op, dtype) in SHAPES:
    g = torch.Generator(device=dev).manual_seed(M + N + K)
    a = torch.randn(M, K, device=dev, generator=g).to(dtype)
    if op == "mm":
        b = torch.randn(K, N, device=dev, generator=g).to(dtype)
        cublas = lambda: torch.mm(a, b)
    else:
        b = torch.randn(N, K, device=dev, generator=g).to(dtype)
        cublas = lambda: F.linear(a, b)
    outs = {k: torch.full((M, N), float("nan"), device=dev, dtype=dtype) for k in VARIANTS}
    fns = {"cublas": cublas}
    for k, cx in VARIANTS.items():
        fns[k] = (lambda cx=cx, o=outs[k]: launch(a, b, o, op == "mm", **cx))
    for k, f in fns.items():
        compiled = f()
        if k in VARIANTS and hasattr(compiled, "n_spills"):
            print(f"  {k}: {compiled.n_regs} registers, {compiled.n_spills} spills, "
                  f"{compiled.metadata.shared} bytes shared", flush=True)
    torch.cuda.synchronize()
    same = all(torch.equal(outs["256x3"], o) for o in outs.values())
    ref = (a.double() @ (b.double() if op == "mm" else b.double().t())) if M * N <= 8192 * 28672 else None
    err = {}
    if ref is not None:
        scale = ref.abs().max().item()
        err = {"cublas": (cublas().double() - ref).abs().max().item() / scale,
               "128x4": (outs["128x4"].double() - ref).abs().max().item() / scale}
        del ref
    times = {k: [] for k in fns}
    for r in range(rounds):
        for k, f in fns.items():
            times[k].append(triton.testing.do_bench(f, warmup=25, rep=100))
    flop = 2 * M * N * K
    tf = {k: flop / statistics.median(v) / 1e9 for k, v in times.items()}
    line = f"{op} {str(dtype)[6:]} {M}x{N}x{K}: cuBLAS {tf['cublas']:6.0f}"
    for k in VARIANTS:
        line += f" | {k} {tf[k] / tf['cublas']:.3f}x"
    line += f" | bitwise {same}"
    if err:
        line += f" | err/max cuBLAS {err['cublas']:.2e} 128x4 {err['128x4']:.2e}"
    print(line, flush=True)
    del a, b, outs
    torch.cuda.empty_cache()
