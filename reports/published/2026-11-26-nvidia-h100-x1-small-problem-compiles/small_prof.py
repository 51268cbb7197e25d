"""Session 18: device time of small problems' kernels, gemm_kernel_unaligned against
gemm_kernel (the old rule), from torch.profiler's kernel records (CUPTI), 200 launches each."""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, "tests")
from gemmconf_reference import launcher  # noqa: E402
from test_reference_backend import compile_ref, launches  # noqa: E402

CASES = [  # (M, N, K, dtype)
    (127, 65, 33, torch.bfloat16),
    (128, 128, 128, torch.bfloat16),
    (256, 256, 256, torch.bfloat16),
    (64, 64, 4096, torch.bfloat16),
    (256, 256, 256, torch.float32),
    (127, 255, 129, torch.float16),
    (33, 1000, 200, torch.bfloat16),
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


def device_us(fn, a, b, reps=200):
    for _ in range(10):
        fn(a, b)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn(a, b)
        torch.cuda.synchronize()
    times = [e.device_time for e in prof.events() if "gemm_kernel" in e.name]
    return sum(times) / len(times), len(times)


for m, n, k, dt in CASES:
    a = torch.randn(m, k, device="cuda").to(dt)
    b = torch.randn(k, n, device="cuda").to(dt)
    old, o1, k1 = build(-1, a, b)
    new, o2, k2 = build(launcher.UNALIGNED_MAX_MACS, a, b)
    rounds = [(device_us(old, a, b), device_us(new, a, b)) for _ in range(3)]
    t_old = sorted(r[0][0] for r in rounds)[1]
    t_new = sorted(r[1][0] for r in rounds)[1]
    print(
        f"{m}x{n}x{k} {str(dt)[6:]}: {k1} {t_old:.2f} us, {k2} {t_new:.2f} us, "
        f"ratio {t_new / t_old:.3f}, kernels seen {rounds[0][0][1]}/{rounds[0][1][1]}, "
        f"bitwise equal: {torch.equal(o1, o2)}"
    )
