"""inductor max-autotune on the CPU: bmm compiled with M marked dynamic, then called with M = 0,
raises AssertionError: View(...) (torch 2.13.0+cpu); mode="default" returns the empty result."""
import sys

import torch

mode = sys.argv[1] if len(sys.argv) > 1 else "max-autotune"
torch._dynamo.reset()
compiled = torch.compile(torch.bmm, mode=mode)
b = torch.randn(3, 16, 24)
for m in (32, 0, 17):
    a = torch.randn(3, m, 16)
    torch._dynamo.mark_dynamic(a, 1)
    out = compiled(a, b)
    print(mode, f"M={m} ok", torch.allclose(out, torch.bmm(a, b), atol=1e-5))
