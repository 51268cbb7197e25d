"""inductor max-autotune on the CPU: bmm with K = 0 (bf16) raises AssertionError in
lowering.py's slice_; mode="default" returns the zeros eager returns (torch 2.13.0+cpu)."""
import sys

import torch

mode = sys.argv[1] if len(sys.argv) > 1 else "max-autotune"
a = torch.randn(2, 32, 0, dtype=torch.bfloat16)
b = torch.randn(2, 0, 24, dtype=torch.bfloat16)
torch._dynamo.reset()
out = torch.compile(torch.bmm, mode=mode)(a, b)
print(mode, "ok", torch.equal(out, torch.bmm(a, b)))
