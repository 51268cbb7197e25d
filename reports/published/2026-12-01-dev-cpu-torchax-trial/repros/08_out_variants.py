# torchax 0.0.13 lowers aten::mm/bmm/addmm without their out= overloads (TypeError), in torchax's
# eager mode too; torch.baddbmm(out=) runs, but under torchax.compile the write to `out` is lost.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import torch
from torchax_gemm import torchax  # lenient import for torch 2.13 (see 01)
env = torchax.default_env()
a, b, o = env.to_xla((torch.randn(48, 32), torch.randn(32, 40), torch.full((48, 40), float("nan"))))
try:
    with env: torch.mm(a, b, out=o)
except TypeError as e: print("eager-mode torch.mm(out=):", e)
def bad(c, a, b, o): torch.baddbmm(c, a, b, out=o); return o
c, a3, b3, o3 = env.to_xla((torch.randn(2, 48, 40), torch.randn(2, 48, 32), torch.randn(2, 32, 40), torch.full((2, 48, 40), float("nan"))))
torchax.compile(bad)(c, a3, b3, o3)
print("compile baddbmm(out=): NaNs left in out:", o3.torch().isnan().sum().item(), "of", o3.numel())
