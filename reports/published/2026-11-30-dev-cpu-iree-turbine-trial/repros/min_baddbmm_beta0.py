# Minimal standalone: baddbmm / addmm with beta=0 must ignore NaN in `input` (PyTorch docs:
# "If beta is 0, then input will be ignored, and nan and inf in it will not be propagated.")
import torch, iree.turbine  # noqa
torch.manual_seed(0)
c = torch.randn(2, 17, 24); c[0, 0, 0] = float("nan")
a, b = torch.randn(2, 17, 40), torch.randn(2, 40, 24)
c2 = torch.randn(17, 24); c2[0, 0] = float("nan")
progs = {
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b, beta=0.0, alpha=1.0), (c, a, b)),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b, beta=0.0, alpha=1.0), (c2, a[0], b[0])),
}
for pname, (fn, args) in progs.items():
    ref = fn(*args)
    print(pname, "eager nan count:", int(ref.isnan().sum()))
    for name in ["aot_eager", "aot_eager_decomp_partition", "inductor", "turbine_cpu"]:
        torch._dynamo.reset()
        out = torch.compile(fn, backend=name)(*args)
        print(f"  {name:28s} nan count: {int(out.isnan().sum())}")
