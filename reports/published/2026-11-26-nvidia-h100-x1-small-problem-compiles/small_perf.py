"""Session 18: kernel time of small problems, gemm_kernel_unaligned against gemm_kernel (the
old rule: every problem specialised), same process, do_bench medians of alternating rounds."""
import statistics
import sys

import torch
import triton

sys.path.insert(0, "tests")
from gemmconf_reference import launcher  # noqa: E402
from test_reference_backend import compile_ref, launches  # noqa: E402

CASES = [  # (M, N, K, dtype)
    (127, 65, 33, torch.bfloat16),
    (128, 128, 128, torch.bfloat16),
    (256, 256, 256, torch.bfloat16),
    (64, 64, 4096, torch.bfloat16),
    (256, 256, 256, torch.float32),
    (1, 1024, 1024, torch.bfloat16),
    (127, 255, 129, torch.float16),
]


def build(limit, a, b):
    saved = launcher.UNALIGNED_MAX_MACS
    launcher.UNALIGNED_MAX_MACS = limit
    try:
        c = compile_ref(lambda x, y: torch.mm(x, y), target_arch=None)
        out = c(a, b)
    finally:
        launcher.UNALIGNED_MAX_MACS = saved
    return c, out, launches(c)[0].plan.kernel


for m, n, k, dt in CASES:
    a = torch.randn(m, k, device="cuda").to(dt)
    b = torch.randn(k, n, device="cuda").to(dt)
    old, o1, k1 = build(-1, a, b)
    new, o2, k2 = build(launcher.UNALIGNED_MAX_MACS, a, b)
    same = torch.equal(o1, o2)
    t_old, t_new = [], []
    for _ in range(5):
        t_old.append(triton.testing.do_bench(lambda: old(a, b), warmup=20, rep=100))
        t_new.append(triton.testing.do_bench(lambda: new(a, b), warmup=20, rep=100))
    mo, mn = statistics.median(t_old), statistics.median(t_new)
    print(f"{m}x{n}x{k} {str(dt)[6:]}: {k1} {mo*1e3:.1f} us, {k2} {mn*1e3:.1f} us, "
          f"ratio {mn/mo:.3f}, bitwise equal: {same}")
