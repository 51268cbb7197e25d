# Minimal standalone: fp32 GELU(approximate="tanh") (and tanh itself) through turbine_cpu vs fp64
import torch, torch.nn.functional as F, iree.turbine  # noqa
torch.manual_seed(0)
x = torch.randn(64, 48) * 2
a, b = torch.randn(64, 40) / 40**0.25, torch.randn(40, 48) / 40**0.25
progs = {
    "gelu_tanh(x)": (lambda x: F.gelu(x, approximate="tanh"), (x,)),
    "tanh(x)": (lambda x: torch.tanh(x), (x,)),
    "gelu_erf(x)": (lambda x: F.gelu(x), (x,)),
    "gelu_tanh(mm(a,b))": (lambda a, b: F.gelu(a @ b, approximate="tanh"), (a, b)),
}
for pname, (fn, args) in progs.items():
    ref = fn(*[t.double() for t in args])
    eager_err = float((fn(*args).double() - ref).abs().max())
    line = f"{pname:20s} eager max|err| {eager_err:.2e}"
    for name in ["aot_eager", "turbine_cpu"]:
        torch._dynamo.reset()
        out = torch.compile(fn, backend=name)(*args)
        line += f"  {name} {float((out.double() - ref).abs().max()):.2e}"
    print(line)
