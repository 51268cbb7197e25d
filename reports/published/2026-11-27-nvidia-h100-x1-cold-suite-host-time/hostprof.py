"""Host time of one 16x6144x4096 bf16 F.linear per path, for py-spy: python hostprof.py PATH N."""

import sys
import time

import torch
import torch.nn.functional as F

from gemmconf_reference import BackendOptions, ReferenceCompiler


def linear(x, w):
    return F.linear(x, w)


x = torch.randn(16, 4096, dtype=torch.bfloat16, device="cuda")
w = torch.randn(6144, 4096, dtype=torch.bfloat16, device="cuda")
which, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0
compiler = ReferenceCompiler(BackendOptions())
ref = torch.compile(linear, backend=compiler, dynamic=False)
ref(x, w)
(gemm,) = compiler.graphs[0].calls
paths = {
    "reference": ref,
    "floor": torch.compile(linear, backend=lambda gm, _: gm.forward, dynamic=False),
    "gemmcall": lambda x, w: gemm(x, w.t(), None, None, [], []),
    "forward": compiler.graphs[0].gm.forward,
    "eager": linear,
}
if which == "code":
    print(compiler.graphs[0].gm.code)
    for name, fn in paths.items():
        for _ in range(200):
            fn(x, w)
        torch.cuda.synchronize()
        times = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(5000):
                fn(x, w)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t) / 5000 * 1e6)
        print(f"{name}: {sorted(times)[2]:.1f} us per call (median of 5 x 5000, synced per 5000)")
    sys.exit(0)
fn = paths[which]
for _ in range(200):
    fn(x, w)
torch.cuda.synchronize()
t = time.perf_counter()
for i in range(n):
    fn(x, w)
    if i % 2000 == 0:
        torch.cuda.synchronize()
torch.cuda.synchronize()
print(which, (time.perf_counter() - t) / n * 1e6, "us per call")
