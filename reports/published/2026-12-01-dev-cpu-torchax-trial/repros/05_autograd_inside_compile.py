# gemmconf's backward program `(out, *torch.autograd.grad(out, (a, b), grad))` gets inputs that
# require grad; torchax's torch->jax conversions (env.to_xla / t2j_copy, what torchax.compile's
# callers use) drop requires_grad, so autograd.grad raises inside torchax.compile.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import torch
from torchax_gemm import torchax  # lenient import for torch 2.13 (see 01)
def prog(a, b, grad):
    out = torch.matmul(a, b)
    return (out, *torch.autograd.grad(out, (a, b), grad))
a, b = torch.randn(2, 1, 24, 32, requires_grad=True), torch.randn(1, 3, 32, 40, requires_grad=True)
grad = torch.randn(2, 3, 24, 40)
print("eager:", [t.shape for t in prog(a, b, grad)])
xs = torchax.default_env().to_xla((a, b, grad)); print("requires_grad after to_xla:", xs[0].requires_grad)
try: torchax.compile(prog)(*xs)
except Exception as e: print("torchax.compile:", type(e).__name__, e)
