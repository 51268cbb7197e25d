# Minimal standalone: IREE turbine_cpu with dynamic shapes (SymInt args)
import torch, iree.turbine  # noqa
a, b = torch.randn(16, 32), torch.randn(32, 64)
for name in ["aot_eager", "inductor", "turbine_cpu"]:
    torch._dynamo.reset()
    f = torch.compile(lambda a, b: torch.mm(a, b), backend=name, dynamic=True)
    try:
        out = f(a, b); print(name, "OK", float((out - a @ b).abs().max()))
    except Exception as e:
        print(name, "FAILED", type(e).__name__, str(e).splitlines()[0])
