"""torch-mlir RefBackend: a column-major (non-contiguous) operand. torch + torch-mlir only.

usage: python col_major.py [verify|noverify]
"""
import sys

import torch

import mlir_refbackend as rb
from torch._dynamo.backends.common import aot_autograd

verify = (sys.argv[1:] or ["verify"])[0] == "verify"
orig = rb.refbackend_compile
rb.refbackend_compile = lambda m: orig(m, generate_runtime_verification=verify)
backend = aot_autograd(fw_compiler=rb._base_backend)

torch.manual_seed(0)
a = torch.randn(64, 64).t()  # column-major: stride (1, 64)
b = torch.randn(64, 64)
print("a.stride()", a.stride(), "contiguous", a.is_contiguous(), flush=True)
f = torch.compile(lambda a, b: torch.mm(a, b), backend=backend)
out = f(a, b)
ref = torch.mm(a, b)
print("max |torch-mlir - eager|:", (out - ref).abs().max().item())
# the storage of `a`, read row-major, is a.t(): the compiled code ignored the strides
print("allclose(out, mm(a.t(), b)):", torch.allclose(out, torch.mm(a.t(), b), atol=1e-4))
