# torch.addmm(c, a, b, beta=0) ignores c (NaN included); torchax computes beta*c, so NaN*0 = NaN
# reaches the output. torch.baddbmm(beta=0) is right in torchax.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import torch
from torchax_gemm import torchax  # lenient import for torch 2.13 (see 01)
a, b, c = torch.randn(33, 48), torch.randn(48, 40), torch.full((33, 40), float("nan"))
f = torchax.compile(lambda c, a, b: torch.addmm(c, a, b, beta=0.0))
env = torchax.default_env()
print("eager NaNs:", torch.addmm(c, a, b, beta=0.0).isnan().sum().item())  # 0
print("torchax.compile NaNs:", f(*env.to_xla((c, a, b))).torch().isnan().sum().item())  # 1320
with env:  # torchax eager mode too
    print("torchax eager NaNs:", torch.addmm(*env.to_xla((c, a, b)), beta=0.0).torch().isnan().sum().item())
