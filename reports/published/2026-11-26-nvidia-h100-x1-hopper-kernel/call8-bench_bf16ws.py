"""Device check of the Gluon 16-bit prototype: errors against fp64 and cuBLAS, interleaved do_bench."""
import statistics
import sys

import torch
import triton

sys.path.insert(0, "devwork")
import bf16ws  # noqa: E402
from gemmconf_reference import compat  # noqa: E402
from gemmconf_reference.compiler import ReferenceCompiler  # noqa: E402

compat.set_tma_allocator()
dev = "cuda"
SMS = torch.cuda.get_device_properties(0).multi_processor_count
print(torch.cuda.get_device_name(), flush=True)


def ours(a, b, out, kn, BN, ST, GM=8):
    M, K = a.shape
    N = out.shape[1]
    progs = min(SMS, triton.cdiv(M, 128) * triton.cdiv(N, BN))
    bf16ws.ws16_kernel[(progs,)](a, b, out, M, N, K, a.stride(0), b.stride(0), out.stride(0),
        BLOCK_N=BN, BLOCK_K=64, STAGES=ST, GROUP_M=GM, NUM_PROGRAMS=progs, B_KN=kn,
        CONSUMER_REGS=232, LOADER_REGS=40, num_warps=4, num_stages=ST)


VARS = {"256x3": (256, 3), "128x4": (128, 4), "128x6": (128, 6)}
SHAPES = {"square mm 8192^3": (8192, 8192, 8192, True), "8b qkv": (8192, 6144, 4096, False),
          "8b o": (8192, 4096, 4096, False), "8b gate_up": (8192, 28672, 4096, False),
          "8b down": (8192, 4096, 14336, False), "70b qkv": (8192, 10240, 8192, False),
          "70b gate_up": (8192, 57344, 8192, False)}
for name, (M, N, K, kn) in SHAPES.items():
    g = torch.Generator(device=dev).manual_seed(0)
    a = torch.randn(M, K, device=dev, generator=g, dtype=torch.bfloat16)
    if kn:  # mm: b (K, N) row-major
        b = torch.randn(K, N, device=dev, generator=g, dtype=torch.bfloat16)
        eager = lambda: torch.mm(a, b)
        fn = lambda x, y: torch.mm(x, y)
    else:  # linear: w (N, K) row-major
        b = torch.randn(N, K, device=dev, generator=g, dtype=torch.bfloat16)
        eager = lambda: torch.nn.functional.linear(a, b)
        fn = lambda x, y: torch.nn.functional.linear(x, y)
    ref_fn = torch.compile(fn, backend=ReferenceCompiler(), fullgraph=True)
    expected = eager()
    line = f"{name:18s}"
    outs = {}
    for v, (BN, ST) in VARS.items():
        out = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
        try:
            ours(a, b, out, kn, BN, ST)
            torch.cuda.synchronize()
            err = float((out.float() - expected.float()).norm() / expected.float().norm())
            outs[v] = out
            line += f" | {v} err {err:.1e}"
        except Exception as exc:
            line += f" | {v} FAILED {type(exc).__name__} {str(exc)[:100]}"
    rerr = float((ref_fn(a, b).float() - expected.float()).norm() / expected.float().norm())
    print(line + f" | reference err {rerr:.1e}", flush=True)
    fns = {"cublas": eager, "reference": lambda: ref_fn(a, b)}
    for v in outs:
        BN, ST = VARS[v]
        fns[v] = (lambda BN=BN, ST=ST, out=outs[v]: ours(a, b, out, kn, BN, ST))
    t = {k: [] for k in fns}
    for _ in range(5):
        for k, f in fns.items():
            t[k].append(triton.testing.do_bench(f, warmup=25, rep=100))
    med = {k: statistics.median(v) for k, v in t.items()}
    print(f"   cublas {2*M*N*K/med['cublas']/1e9:6.0f} TF/s | " + " | ".join(
        f"{k} {med['cublas']/med[k]:.3f}x" for k in fns if k != "cublas"), flush=True)
    torch._dynamo.reset()
    del a, b, outs
    torch.cuda.empty_cache()
