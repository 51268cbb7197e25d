"""Where the beta=0 NaN comes from: torch-mlir's torch-backend IR for aten.addmm(beta=0)."""
import torch
from torch._dynamo.backends.common import aot_autograd
from torch_mlir import fx


def show(gm, example_inputs):
    print(gm.code.strip())
    print(fx.stateless_fx_import(gm, output_type="torch", model_name="main"))
    return gm


f = torch.compile(lambda c, a, b: torch.addmm(c, a, b, beta=0.0), backend=aot_autograd(fw_compiler=show))
f(torch.randn(4, 5), torch.randn(4, 3), torch.randn(3, 5))
