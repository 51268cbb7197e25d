"""The reference through torch.compile on the new 16-bit plan: bitwise equal to a direct launch
of the kernel with the plan's flags, and the plan's flags."""
import torch, triton
import torch.nn.functional as F
from gemmconf_reference import ReferenceCompiler
import importlib.util, sys
spec = importlib.util.spec_from_file_location("bench", "devwork/bench_bf16.py")
dev = torch.device("cuda")
for op, (M, N, K) in [("mm", (4096, 4096, 4096)), ("linear", (8192, 6144, 4096)), ("linear", (2048, 8192, 2048))]:
    g = torch.Generator(device=dev).manual_seed(1)
    a = torch.randn(M, K, device=dev, generator=g).bfloat16()
    b = (torch.randn(K, N, device=dev, generator=g) if op == "mm" else torch.randn(N, K, device=dev, generator=g)).bfloat16()
    fn = (lambda x, y: torch.mm(x, y)) if op == "mm" else (lambda x, y: F.linear(x, y))
    compiler = ReferenceCompiler()
    got = torch.compile(fn, backend=compiler)(a, b)
    (rec,) = [r for g_ in compiler.graphs for c in g_.calls for r in c.launches.values()]
    flags = dict(rec.plan.constexprs)
    want = fn(a, b)
    ref = a.double() @ (b.double() if op == "mm" else b.double().t())
    e_ours = (got.double() - ref).abs().max().item(); e_cub = (want.double() - ref).abs().max().item()
    print(op, M, N, K, rec.plan.kernel, {k: flags[k] for k in ("BLOCK_N", "SUB_N", "STAGES", "B_KN")},
          f"max err ours {e_ours:.3e} cuBLAS {e_cub:.3e}", flush=True)
