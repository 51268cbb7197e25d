"""TVM relax via torch.compile: matmul on operands that start one element into their storage.
torch + apache-tvm only. Usage: python tvm_offset_segfault.py {a|b|both} [calls]"""
import sys

import torch
from tvm.relax.frontend.torch import relax_dynamo

which = sys.argv[1]
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 1
torch.manual_seed(0)


def offset(t):
    flat = torch.empty(t.numel() + 1, dtype=t.dtype)
    view = flat[1:].view(t.shape)
    view.copy_(t)
    return view


a, b = torch.randn(127, 33), torch.randn(33, 65)
if which in ("a", "both"):
    a = offset(a)
if which in ("b", "both"):
    b = offset(b)
f = torch.compile(lambda x, y: torch.matmul(x, y), backend=relax_dynamo())
for i in range(calls):
    out = f(a, b)
    print(f"offset {which}: call {i}: max|tvm-eager| {(out - a @ b).abs().max().item():.3g}", flush=True)
