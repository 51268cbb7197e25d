"""Device time of small problems' kernels on a GPU: the rule of this tree (gemm_kernel_generic or
gemm_kernel_unaligned, three pipeline stages) against every small problem on the fully
specialised gemm_kernel with the table's and `configs.deepen`'s stages (UNALIGNED_MAX_MACS set
below every problem), from torch.profiler's kernel records, 200 launches a round, the middle of
three rounds. Both variants run in one process, alternating by round."""

import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, "tests")
from gemmconf_reference import launcher  # noqa: E402
from test_reference_backend import compile_ref, launches  # noqa: E402

CASES = [  # (M, N, K, dtype, layout of b)
    (127, 65, 33, torch.bfloat16, "row"),
    (41, 25, 1001, torch.bfloat16, "row"),
    (41, 25, 1001, torch.bfloat16, "col"),
    (128, 128, 128, torch.bfloat16, "row"),
    (256, 256, 256, torch.bfloat16, "row"),
    (64, 64, 4096, torch.bfloat16, "row"),
    (64, 64, 4096, torch.float16, "col"),
    (256, 256, 256, torch.float32, "row"),
    (127, 255, 129, torch.float16, "row"),
    (33, 1000, 200, torch.bfloat16, "row"),
]


def build(limit, a, b):
    saved = launcher.UNALIGNED_MAX_MACS
    launcher.UNALIGNED_MAX_MACS = limit
    try:
        compiled = compile_ref(lambda x, y: torch.mm(x, y), target_arch=None)
        out = compiled(a, b)
    finally:
        launcher.UNALIGNED_MAX_MACS = saved
    plan = launches(compiled)[0].plan
    return compiled, out, f"{plan.kernel}/{plan.config.num_stages}st"


def device_us(fn, a, b, reps=200):
    for _ in range(10):
        fn(a, b)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn(a, b)
        torch.cuda.synchronize()
    times = [e.device_time for e in prof.events() if "gemm" in e.name]
    return sum(times) / max(len(times), 1)


for m, n, k, dt, layout in CASES:
    a = torch.randn(m, k, device="cuda").to(dt)
    b = torch.randn(k, n, device="cuda").to(dt)
    if layout == "col":
        b = b.t().contiguous().t()
    old, o1, k1 = build(-1, a, b)
    new, o2, k2 = build(launcher.UNALIGNED_MAX_MACS, a, b)
    rounds = [(device_us(old, a, b), device_us(new, a, b)) for _ in range(3)]
    t_old = sorted(r[0] for r in rounds)[1]
    t_new = sorted(r[1] for r in rounds)[1]
    print(
        f"{m}x{n}x{k} {str(dt)[6:]} b {layout}: specialised {k1} {t_old:.2f} us, "
        f"this tree {k2} {t_new:.2f} us, ratio {t_new / t_old:.3f}, "
        f"bitwise equal: {torch.equal(o1, o2)}"
    )
