"""Device check: the reference backend's hopper_fp8_kernel against its Triton kernel, cuBLAS, fp64."""
import torch
from gemmconf_reference.compiler import ReferenceCompiler
from gemmconf_reference.launcher import BackendOptions

dev = "cuda"
print(torch.cuda.get_device_name(), flush=True)


def scaled(a, b, sa, sb, out_dtype):
    return torch._scaled_mm(a, b, sa, sb, out_dtype=out_dtype)


def run(options, args, out_dtype):
    comp = ReferenceCompiler(options)
    fn = torch.compile(lambda a, b, sa, sb: scaled(a, b, sa, sb, out_dtype), backend=comp, fullgraph=True)
    out = fn(*args)
    torch.cuda.synchronize()
    kernels = sorted({r.plan.kernel for r in comp.launches()})
    torch._dynamo.reset()
    return out, kernels


cases = [
    ("8192^3 rowwise bf16", (8192, 8192, 8192), "rowwise", torch.bfloat16, torch.float8_e4m3fn),
    ("tails 8300x4112x1008 rowwise bf16", (8300, 4112, 1008), "rowwise", torch.bfloat16, torch.float8_e4m3fn),
    ("8192x4096x4096 rowwise fp32", (8192, 4096, 4096), "rowwise", torch.float32, torch.float8_e4m3fn),
    ("8192x4096x4096 rowwise fp16", (8192, 4096, 4096), "rowwise", torch.float16, torch.float8_e4m3fn),
    ("8192x4096x4096 tensorwise bf16", (8192, 4096, 4096), "tensorwise", torch.bfloat16, torch.float8_e4m3fn),
    ("8192x4096x4096 rowwise bf16, b e5m2", (8192, 4096, 4096), "rowwise", torch.bfloat16, torch.float8_e5m2),
]
for label, (M, N, K), scaling, out_dtype, b_dtype in cases:
    g = torch.Generator(device=dev).manual_seed(M + N + K)
    a = (torch.randn(M, K, device=dev, generator=g) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device=dev, generator=g) * 2).to(b_dtype).t()
    if scaling == "rowwise":
        sa = torch.rand(M, 1, device=dev, generator=g) + 0.5
        sb = torch.rand(1, N, device=dev, generator=g) + 0.5
    else:
        sa = torch.tensor(0.75, device=dev)
        sb = torch.tensor(1.25, device=dev)
    args = (a, b, sa, sb)
    ref = (a.double() @ b.double()) * sa.double() * sb.double()
    try:
        cub = scaled(*args, out_dtype)
    except Exception as exc:
        cub = None
        print(f"{label}: cuBLAS refuses: {str(exc)[:120]}")
    new, k_new = run(BackendOptions(), args, out_dtype)
    old, k_old = run(BackendOptions(persistent="always"), args, out_dtype)

    def err(x):
        d = (x.double() - ref).abs()
        return f"max {float(d.max() / ref.abs().max()):.3e} rms {float(d.pow(2).mean().sqrt() / ref.pow(2).mean().sqrt()):.3e}"

    line = f"{label}: new {k_new} {err(new)} | old {k_old} {err(old)} | bitwise new==old {torch.equal(new, old)}"
    if cub is not None:
        line += f" | cuBLAS {err(cub)} new==cuBLAS {torch.equal(new, cub)}"
    print(line, flush=True)
    del a, b, ref, new, old, cub
    torch.cuda.empty_cache()
