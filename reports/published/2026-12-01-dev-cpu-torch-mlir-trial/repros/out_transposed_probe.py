"""What graph torch-mlir is handed for torch.mm(a, b, out=t) with a transposed target t, and
which aten GEMM ran. torch + torch-mlir only."""
import torch
from torch._dynamo.backends.common import aot_autograd
from torch.profiler import profile

import mlir_refbackend as rb


def probe(gm, example_inputs):
    print("graph handed to torch-mlir:\n" + gm.code.strip())
    return rb._base_backend(gm, example_inputs)


def fn(a, b, out):  # gemmconf's program for out/targets[mm-transposed]
    out = out.transpose(-2, -1)
    out = torch.mm(a, b, out=out)
    return out


a, b = torch.randn(48, 32), torch.randn(32, 40)
t = torch.full((40, 48), float("nan"))  # the program transposes it into the (48, 40) target
f = torch.compile(fn, backend=aot_autograd(fw_compiler=probe))
f(a, b, t)  # compile
t.fill_(float("nan"))
with profile() as p:
    f(a, b, t)
print("aten GEMM ops in the second call:", [e.name for e in p.events() if e.name in ("aten::mm", "aten::addmm", "aten::bmm")])
print("max |t.t() - a@b|:", (t.t() - a @ b).abs().max().item())
