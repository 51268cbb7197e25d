"""Device check of the wide fp8 prototype (BLOCK_N 256, two promoted halves): bitwise against
the production kernel's configuration, errors against fp64, interleaved do_bench vs cuBLAS."""
import statistics, sys
import torch, triton
sys.path.insert(0, "devwork")
import proto_wide as P

triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
dev = torch.device("cuda")
SMS = torch.cuda.get_device_properties(0).multi_processor_count
print(torch.__version__, triton.__version__, torch.cuda.get_device_name(), SMS, flush=True)


def operands(M, N, K, seed=0, b_dtype=torch.float8_e4m3fn, scaling="rowwise"):
    g = torch.Generator(device=dev).manual_seed(seed)
    a = (torch.randn(M, K, device=dev, generator=g) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device=dev, generator=g) * 2).to(b_dtype)
    if scaling == "rowwise":
        sa = torch.rand(M, 1, device=dev, generator=g) + 0.5
        sb = torch.rand(1, N, device=dev, generator=g) + 0.5
    else:
        sa, sb = torch.tensor(0.75, device=dev), torch.tensor(1.25, device=dev)
    return a, b, sa, sb


def ours(a, b, sa, sb, out, BLOCK_N, STAGES, WIDE, GROUP_M=8, scaling="rowwise"):
    M, K = a.shape
    N = b.shape[0]
    tiles = triton.cdiv(M, 128) * triton.cdiv(N, BLOCK_N)
    progs = min(SMS, tiles)
    P.hopper_gemm_kernel[(progs,)](
        a, b, out, sa, sb, M, N, K, a.stride(0), 1, b.stride(0), out.stride(0),
        sa.stride(0) if sa.dim() else 0, sb.stride(1) if sb.dim() else 0,
        BLOCK_N=BLOCK_N, BLOCK_K=128, STAGES=STAGES, GROUP_M=GROUP_M, NUM_PROGRAMS=progs,
        B_KN=False, PROMOTE=True, SCALING=scaling, WIDE=WIDE, num_warps=4, num_stages=1)
    return out


def cublas(a, b, sa, sb, out_dtype=torch.bfloat16):
    return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=out_dtype, use_fast_accum=False)


VARIANTS = {
    "prod-n128-s4": dict(BLOCK_N=128, STAGES=4, WIDE=False),
    "wide-s4": dict(BLOCK_N=256, STAGES=4, WIDE=True),
    "wide-s3": dict(BLOCK_N=256, STAGES=3, WIDE=True),
    "wide-s4-g16": dict(BLOCK_N=256, STAGES=4, WIDE=True, GROUP_M=16),
}

# correctness
checks = [((8192, 8192, 8192), {}, torch.bfloat16), ((8300, 4112, 1008), {}, torch.bfloat16),
          ((1000, 1008, 1008), {}, torch.bfloat16), ((300, 5008, 4096), {}, torch.bfloat16),
          ((8192, 4096, 4096), dict(scaling="tensorwise"), torch.float32),
          ((8192, 4096, 4096), dict(b_dtype=torch.float8_e5m2), torch.float16)]
for (M, N, K), kw, odt in checks:
    scaling = kw.get("scaling", "rowwise")
    a, b, sa, sb = operands(M, N, K, **kw)
    ref = (a.double() @ b.double().t()) * sa.double() * sb.double()
    cb = cublas(a, b, sa, sb, odt)
    def err(x):
        d = (x.double() - ref).abs()
        return f"max {float(d.max() / ref.abs().max()):.3e} rms {float(d.pow(2).mean().sqrt() / ref.pow(2).mean().sqrt()):.3e}"
    outs = {}
    for name, v in VARIANTS.items():
        if odt == torch.float32 and v["WIDE"] and v["STAGES"] > 3:
            continue  # does not fit shared memory with a 4-byte output
        out = torch.full((M, N), float("nan"), device=dev, dtype=odt)
        try:
            ours(a, b, sa, sb, out, scaling=scaling, **v)
            torch.cuda.synchronize()
            outs[name] = out
        except Exception as exc:
            print(f"  {name}: FAILED {type(exc).__name__}: {str(exc)[:400]}", flush=True)
    base = outs.get("prod-n128-s4")
    print(f"{M}x{N}x{K} {kw} {odt}: cublas {err(cb)}", flush=True)
    for name, out in outs.items():
        print(f"   {name}: {err(out)} nan {int(out.isnan().sum())} =={'prod'} {bool(torch.equal(out, base))}", flush=True)
    del a, b, ref, cb, outs, base
    torch.cuda.empty_cache()

SHAPES = {"8192^3": (8192, 8192, 8192), "8b-qkv": (8192, 6144, 4096), "8b-o": (8192, 4096, 4096),
          "8b-gate_up": (8192, 28672, 4096), "8b-down": (8192, 4096, 14336),
          "70b-qkv": (8192, 10240, 8192), "70b-o": (8192, 8192, 8192), "70b-gate_up": (8192, 57344, 8192), "70b-down": (8192, 8192, 28672)}
ROUNDS = 5
for sname, (M, N, K) in SHAPES.items():
    a, b, sa, sb = operands(M, N, K, seed=hash(sname) % 1000)
    out = torch.empty((M, N), device=dev, dtype=torch.bfloat16)
    fns = {"cublas": lambda: cublas(a, b, sa, sb)}
    for name, v in VARIANTS.items():
        fns[name] = (lambda v=v: ours(a, b, sa, sb, out, **v))
    for f in fns.values():
        f()
    times = {k: [] for k in fns}
    for r in range(ROUNDS):
        for k, f in fns.items():
            times[k].append(triton.testing.do_bench(f, warmup=25, rep=100))
    flop = 2 * M * N * K
    med = {k: statistics.median(v) for k, v in times.items()}
    tf = {k: flop / m / 1e9 for k, m in med.items()}
    line = f"{sname:11s} cublas {tf['cublas']:6.0f}"
    for k in VARIANTS:
        spread = (max(times[k]) - min(times[k])) / med[k] * 100
        line += f" | {k} {tf[k]:6.0f} ({tf[k] / tf['cublas']:.3f}x ±{spread:.1f}%)"
    print(line, flush=True)
    del a, b, sa, sb, out
    torch.cuda.empty_cache()
