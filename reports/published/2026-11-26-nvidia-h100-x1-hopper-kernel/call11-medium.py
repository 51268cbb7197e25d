"""Medium problems: hopper_gemm_kernel (size class forced) against the Triton kernels and cuBLAS."""
import statistics
import torch
import torch.nn.functional as F
import triton
from gemmconf_reference import configs
from gemmconf_reference.compiler import ReferenceCompiler

dev = "cuda"
print(torch.cuda.get_device_name(), flush=True)
real_size_class = configs.size_class


def compiled(fn, args, force):
    comp = ReferenceCompiler()
    c = torch.compile(fn, backend=comp, fullgraph=True)
    if force:
        configs.size_class = lambda b, m, n: "large"
    try:
        out = c(*args)
    finally:
        configs.size_class = real_size_class
    kernels = sorted({r.plan.kernel for r in comp.launches()})
    return c, out, kernels


SHAPES = [(4096, 4096, 4096), (2048, 4096, 4096), (1024, 8192, 4096), (2048, 2048, 8192),
          (512, 4096, 4096), (4096, 4096, 1024), (3072, 3072, 3072)]
for dtype in ("bf16", "fp8"):
    for (M, N, K) in SHAPES:
        g = torch.Generator(device=dev).manual_seed(M + N + K)
        if dtype == "bf16":
            a = torch.randn(M, K, device=dev, generator=g, dtype=torch.bfloat16)
            w = torch.randn(N, K, device=dev, generator=g, dtype=torch.bfloat16)
            fn = lambda a, w: F.linear(a, w)
            args = (a, w)
        else:
            a = torch.randn(M, K, device=dev, generator=g).to(torch.float8_e4m3fn)
            b = torch.randn(N, K, device=dev, generator=g).to(torch.float8_e4m3fn).t()
            sa = torch.rand(M, 1, device=dev, generator=g) + 0.5
            sb = torch.rand(1, N, device=dev, generator=g) + 0.5
            fn = lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
            args = (a, b, sa, sb)
        eager = fn(*args)
        tri, out_t, k_t = compiled(fn, args, False)
        torch._dynamo.reset()
        hop, out_h, k_h = compiled(fn, args, True)
        same = torch.equal(out_t, out_h)
        fns = {"cublas": lambda: fn(*args), "triton": lambda: tri(*args), "hopper": lambda: hop(*args)}
        t = {k: [] for k in fns}
        for _ in range(5):
            for k, f in fns.items():
                t[k].append(triton.testing.do_bench(f, warmup=20, rep=80))
        med = {k: statistics.median(v) for k, v in t.items()}
        print(f"{dtype} {M}x{N}x{K} ({real_size_class(1, M, N)}): cuBLAS {2*M*N*K/med['cublas']/1e9:5.0f} TF/s | "
              f"triton {k_t} {med['cublas']/med['triton']:.3f}x | hopper {k_h} {med['cublas']/med['hopper']:.3f}x | bitwise {same}", flush=True)
        torch._dynamo.reset()
