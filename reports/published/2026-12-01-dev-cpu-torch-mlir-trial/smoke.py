import torch
from mlir_refbackend import mlir_compile
torch.manual_seed(0)
a, b = torch.randn(127, 33), torch.randn(33, 65)
f = torch.compile(lambda a, b: torch.mm(a, b), backend=mlir_compile)
out = f(a, b)
print(type(out), out.dtype, out.shape, (out - a @ b).abs().max().item())
c = torch.randn(65)
g = torch.compile(lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), backend=mlir_compile)
print((g(c, a, b) - torch.addmm(c, a, b, beta=0.5, alpha=2.0)).abs().max().item())
