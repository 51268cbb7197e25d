"""Host µs per call of the reference's paths, for whichever gemmconf_reference is importable
(the A/B driver alternates two trees). Medians of 2,000 back-to-back calls, 3 rounds, min of
the rounds' medians printed with the spread."""

import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import gemmconf_reference
from gemmconf_reference import BackendOptions, ReferenceCompiler


def host_us(call, calls=2000):
    for _ in range(50):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def linear(x, w):
    return F.linear(x, w)


x = torch.randn(16, 4096, dtype=torch.bfloat16, device="cuda")
w = torch.randn(6144, 4096, dtype=torch.bfloat16, device="cuda")
expected = x.float() @ w.float().T
comp = ReferenceCompiler(BackendOptions())
ref = torch.compile(linear, backend=comp, dynamic=False)
floor = torch.compile(linear, backend=lambda gm, _: gm.forward, dynamic=False)
for fn in (ref, floor):
    fn(x, w)
(gemm,) = comp.graphs[0].calls
wt = w.t()
paths = {
    "eager": lambda: linear(x, w),
    "floor": lambda: floor(x, w),
    "reference": lambda: ref(x, w),
    "forward": lambda: comp.graphs[0].gm.forward(x, w)[0],
    "GemmCall": lambda: gemm(x, wt, None, None, [], []),
}
errors = {
    name: float((fn().float() - expected).norm() / expected.norm()) for name, fn in paths.items()
}


def overridden(measure):
    """`measure` while the GemmCall is aten::mm's CUDA kernel (eager F.linear reaches it)."""
    library = torch.library.Library("aten", "IMPL")
    library.impl("mm", lambda a, b: gemm(a, b, None, None, [], []), "CUDA")
    try:
        return measure()
    finally:
        library._destroy()


override_error = overridden(
    lambda: float((linear(x, w).float() - expected).norm() / expected.norm())
)
rounds = {name: [] for name in [*paths, "override"]}
for _ in range(3):
    for name, fn in paths.items():
        rounds[name].append(host_us(fn))
    rounds["override"].append(overridden(lambda: host_us(lambda: linear(x, w))))
print(
    json.dumps(
        {
            "tree": sys.argv[1] if len(sys.argv) > 1 else gemmconf_reference.__file__,
            "rel_err": errors | {"override": override_error},
            "host_us": {k: [round(v, 2) for v in vs] for k, vs in rounds.items()},
        }
    )
)
