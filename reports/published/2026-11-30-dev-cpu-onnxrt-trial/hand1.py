import torch
from tvm.relax.frontend.torch import relax_dynamo
be = relax_dynamo()
a, b = torch.randn(64, 64), torch.randn(64, 64)
try:
    torch.compile(lambda a, b: torch.mm(a, b), backend=be)(a, b)
except Exception as e:
    print("mm:", type(e).__name__, str(e).splitlines()[-1][:200])
print("matmul fp32 err", (torch.compile(lambda a, b: a @ b, backend=be)(a, b) - a @ b).abs().max().item())
for dt in (torch.bfloat16, torch.float16, torch.float32):
    x, y = torch.randn(2, 17, 65).to(dt), torch.randn(2, 65, 9).to(dt)
    torch._dynamo.reset()
    r = torch.compile(lambda a, b: torch.bmm(a, b), backend=be)(x, y)
    print("bmm", dt, "->", r.dtype, "err vs eager", (r.float() - torch.bmm(x, y).float()).abs().max().item())
