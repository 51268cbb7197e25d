"""Device check of the Gluon fp8 prototype: errors against fp64 and cuBLAS, do_bench times."""
import sys, time, statistics, json
import torch, triton
sys.path.insert(0, "devwork")
import fp8ws

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


def ours(a, b, sa, sb, out, **cx):
    M, K = a.shape
    N = b.shape[0]
    tiles = triton.cdiv(M, 2 * cx["HALF_M"]) * triton.cdiv(N, cx["BLOCK_N"])
    progs = min(SMS, tiles)
    fp8ws.fp8_ws_kernel[(progs,)](
        a, b, out, sa, sb, M, N, K, a.stride(0), b.stride(0), out.stride(0),
        NUM_PROGRAMS=progs, num_warps=4, num_stages=1, **cx)
    return out


def cublas(a, b, sa, sb):
    return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=False)


BASE = dict(BLOCK_N=128, BLOCK_K=128, HALF_M=64, STAGES=4, GROUP_M=8, OVERLAP=False, CONSUMER_REGS=232, LOADER_REGS=40)
VARIANTS = {
    "sync-s4": dict(),
    "sync-s5": dict(STAGES=5),
    "sync-s6": dict(STAGES=6),
    "overlap-s4": dict(OVERLAP=True),
    "overlap-s5": dict(OVERLAP=True, STAGES=5),
    "overlap-s6": dict(OVERLAP=True, STAGES=6),
    "overlap-s5-240": dict(OVERLAP=True, STAGES=5, CONSUMER_REGS=240, LOADER_REGS=24),
}

# correctness: tails and the anchor, against fp64
for (M, N, K) in [(1000, 1008, 1008), (8192, 8192, 8192), (300, 5008, 4096)]:
    a, b, sa, sb = operands(M, N, K)
    ref = (a.double() @ b.double().t()) * sa.double() * sb.double()
    cb = cublas(a, b, sa, sb)
    def err(x):
        d = (x.double() - ref).abs()
        return float(d.max() / ref.abs().max()), float((d / (ref.abs() + 1e-3 * ref.abs().max())).max())
    print(f"{M}x{N}x{K} cublas err {err(cb)}", flush=True)
    for name, v in VARIANTS.items():
        cx = dict(BASE, **v)
        out = torch.full((M, N), float("nan"), device=dev, dtype=torch.bfloat16)
        try:
            ours(a, b, sa, sb, out, **cx)
            torch.cuda.synchronize()
            print(f"   {name}: err {err(out)} nan {int(out.isnan().sum())} bitwise==cublas {bool(torch.equal(out, cb))}", flush=True)
        except Exception as exc:
            print(f"   {name}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
    del a, b, ref, cb

# timing: interleaved rounds of do_bench medians
SHAPES = {"8192^3": (8192, 8192, 8192), "8b-qkv": (8192, 6144, 4096), "8b-o": (8192, 4096, 4096),
          "8b-gate_up": (8192, 28672, 4096), "8b-down": (8192, 4096, 14336),
          "70b-qkv": (8192, 10240, 8192), "70b-gate_up": (8192, 57344, 8192), "70b-down": (8192, 8192, 28672)}
only = sys.argv[1:] or list(VARIANTS)
rows = {}
for sname, (M, N, K) in SHAPES.items():
    a, b, sa, sb = operands(M, N, K)
    out = torch.empty((M, N), device=dev, dtype=torch.bfloat16)
    fns = {"cublas": lambda: cublas(a, b, sa, sb)}
    for name in only:
        cx = dict(BASE, **VARIANTS[name])
        fns[name] = (lambda cx=cx: ours(a, b, sa, sb, out, **cx))
    times = {k: [] for k in fns}
    for r in range(3):
        for k, f in fns.items():
            try:
                times[k].append(triton.testing.do_bench(f, warmup=50, rep=200))
            except Exception as exc:
                times[k].append(float("nan"))
    flops = 2 * M * N * K
    med = {k: statistics.median(v) for k, v in times.items()}
    line = f"{sname:12s} cublas {flops / med['cublas'] / 1e9:7.0f} TF/s"
    for k in fns:
        if k != "cublas":
            line += f" | {k} {flops / med[k] / 1e9:6.0f} ({med['cublas'] / med[k]:.3f}x)"
    print(line, flush=True)
    rows[sname] = med
    del a, b, out
json.dump(rows, open(sys.argv[0] + ".json", "w")) if False else None
