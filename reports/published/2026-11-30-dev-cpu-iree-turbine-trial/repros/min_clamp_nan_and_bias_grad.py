# Minimal standalone: (1) clamp after mm must keep NaN (torch.clamp propagates NaN);
# (2) bf16 F.linear bias gradient error vs fp64
import torch, torch.nn.functional as F, iree.turbine  # noqa
torch.manual_seed(0)
a, b = torch.randn(16, 48), torch.randn(48, 24)
a[0, 0] = float("nan")
fn = lambda a, b: torch.clamp(a @ b, -1.0, 1.0)
print("eager NaNs", int(fn(a, b).isnan().sum()))
for name in ["aot_eager", "turbine_cpu"]:
    torch._dynamo.reset()
    print(f"  {name} NaNs", int(torch.compile(fn, backend=name)(a, b).isnan().sum()))
torch.manual_seed(1)
x = torch.randn(64, 48, dtype=torch.bfloat16); w = torch.randn(24, 48, dtype=torch.bfloat16)
bias = torch.randn(24, dtype=torch.bfloat16); g = torch.randn(64, 24, dtype=torch.bfloat16)
def grad_bias(backend):
    bb = bias.clone().requires_grad_()
    f = (lambda x, w, b: F.linear(x, w, b)) if backend is None else torch.compile(lambda x, w, b: F.linear(x, w, b), backend=backend)
    f(x, w, bb).backward(g)
    return bb.grad.double()
ref = g.double().sum(0)
for name in [None, "aot_eager", "turbine_cpu"]:
    torch._dynamo.reset()
    print(f"bias grad max|err| vs fp64, {name or 'eager'}: {float((grad_bias(name) - ref).abs().max()):.3g}")
