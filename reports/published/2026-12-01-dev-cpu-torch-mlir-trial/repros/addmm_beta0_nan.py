"""torch-mlir: addmm/baddbmm with beta=0 propagate NaN/Inf from the bias. torch + torch-mlir only.

PyTorch documents that with beta=0 `input` is ignored, and nan/inf in it are not propagated.
"""
import torch

from mlir_refbackend import mlir_compile

torch.manual_seed(0)
c = torch.full((4, 5), float("nan"))
a, b = torch.randn(4, 3), torch.randn(3, 5)
f = torch.compile(lambda c, a, b: torch.addmm(c, a, b, beta=0.0), backend=mlir_compile)
print("eager     :", torch.addmm(c, a, b, beta=0.0)[0].tolist())
print("torch-mlir:", f(c, a, b)[0].tolist())

c3 = torch.full((2, 4, 5), float("inf"))
a3, b3 = torch.randn(2, 4, 3), torch.randn(2, 3, 5)
g = torch.compile(lambda c, a, b: torch.baddbmm(c, a, b, beta=0.0), backend=mlir_compile)
print("baddbmm eager     :", torch.baddbmm(c3, a3, b3, beta=0.0)[0, 0].tolist())
print("baddbmm torch-mlir:", g(c3, a3, b3)[0, 0].tolist())
