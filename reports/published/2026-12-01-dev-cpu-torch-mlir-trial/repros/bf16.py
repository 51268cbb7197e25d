"""torch-mlir RefBackend: bf16 GEMMs do not compile. torch + torch-mlir only."""
import torch

from mlir_refbackend import mlir_compile

a = torch.randn(64, 64, dtype=torch.bfloat16)
b = torch.randn(64, 64, dtype=torch.bfloat16)
f = torch.compile(lambda a, b: torch.mm(a, b), backend=mlir_compile)
try:
    f(a, b)
except Exception as e:
    print(type(e).__name__, str(e).splitlines()[0:2])
