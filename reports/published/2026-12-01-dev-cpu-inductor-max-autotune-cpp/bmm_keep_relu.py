"""inductor max-autotune on the CPU: a bmm whose result is returned beside its relu raises
AssertionError in ir.py's indexer; mode="default" compiles it (torch 2.13.0+cpu)."""
import sys

import torch

mode = sys.argv[1] if len(sys.argv) > 1 else "max-autotune"


def f(a, b):
    y = torch.bmm(a, b)
    return y, torch.relu(y)


a, b = torch.randn(2, 33, 24), torch.randn(2, 24, 40)
torch._dynamo.reset()
out = torch.compile(f, mode=mode)(a, b)
print(mode, "ok", all(torch.allclose(x, y, atol=1e-5) for x, y in zip(out, f(a, b))))
