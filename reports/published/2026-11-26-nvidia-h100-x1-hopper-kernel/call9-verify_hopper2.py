"""Device check: hopper_gemm_kernel against the Triton kernels (bitwise), cuBLAS and fp64."""
import torch
import torch.nn.functional as F
from gemmconf_reference.compiler import ReferenceCompiler
from gemmconf_reference.launcher import BackendOptions

dev = "cuda"
print(torch.cuda.get_device_name(), flush=True)


def run(options, fn, args):
    comp = ReferenceCompiler(options)
    out = torch.compile(fn, backend=comp, fullgraph=True)(*args)
    torch.cuda.synchronize()
    kernels = sorted({r.plan.kernel for r in comp.launches()})
    torch._dynamo.reset()
    return out, kernels


def gen(seed):
    return torch.Generator(device=dev).manual_seed(seed)


def fp8_case(M, N, K, scaling, out_dtype, b_dtype=torch.float8_e4m3fn):
    g = gen(M + N + K)
    a = (torch.randn(M, K, device=dev, generator=g) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device=dev, generator=g) * 2).to(b_dtype).t()
    if scaling == "rowwise":
        sa, sb = torch.rand(M, 1, device=dev, generator=g) + 0.5, torch.rand(1, N, device=dev, generator=g) + 0.5
    else:
        sa, sb = torch.tensor(0.75, device=dev), torch.tensor(1.25, device=dev)
    fn = lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=out_dtype)
    ref = (a.double() @ b.double()) * sa.double() * sb.double()
    return fn, (a, b, sa, sb), ref


def mm_case(M, N, K, dtype, linear):
    g = gen(M + N + K)
    a = torch.randn(M, K, device=dev, generator=g, dtype=dtype)
    if linear:
        w = torch.randn(N, K, device=dev, generator=g, dtype=dtype)
        return (lambda a, w: F.linear(a, w)), (a, w), a.double() @ w.double().t()
    b = torch.randn(K, N, device=dev, generator=g, dtype=dtype)
    return (lambda a, b: torch.mm(a, b)), (a, b), a.double() @ b.double()


cases = {
    "fp8 8192^3 rowwise bf16": fp8_case(8192, 8192, 8192, "rowwise", torch.bfloat16),
    "fp8 tails 8300x4112x1008 rowwise": fp8_case(8300, 4112, 1008, "rowwise", torch.bfloat16),
    "fp8 8192x4096x4096 tensorwise fp32": fp8_case(8192, 4096, 4096, "tensorwise", torch.float32),
    "fp8 e4m3 x e5m2 rowwise fp16": fp8_case(8192, 4096, 4096, "rowwise", torch.float16, torch.float8_e5m2),
    "bf16 mm 8192^3": mm_case(8192, 8192, 8192, torch.bfloat16, False),
    "bf16 linear 8192x6144x4096": mm_case(8192, 6144, 4096, torch.bfloat16, True),
    "bf16 mm tails 8300x4112x1000": mm_case(8300, 4112, 1000, torch.bfloat16, False),
    "bf16 linear tails 8300x4112x1000": mm_case(8300, 4112, 1000, torch.bfloat16, True),
    "fp16 mm 8192x4096x14336": mm_case(8192, 4096, 14336, torch.float16, False),
    "fp16 linear tails 8193x4096x520": mm_case(8193, 4096, 520, torch.float16, True),
}
for label, (fn, args, ref) in cases.items():
    eager = fn(*args)
    new, k_new = run(BackendOptions(), fn, args)
    old, k_old = run(BackendOptions(persistent="always"), fn, args)

    def err(x):
        d = (x.double() - ref).abs()
        return f"max {float(d.max() / ref.abs().max()):.3e} rms {float(d.pow(2).mean().sqrt() / ref.pow(2).mean().sqrt()):.3e}"

    print(f"{label}: new {k_new} {err(new)} | old {k_old} {err(old)} | new==old {torch.equal(new, old)}"
          f" | eager {err(eager)} new==eager {torch.equal(new, eager)}", flush=True)
    del args, ref, new, old, eager
    torch.cuda.empty_cache()
