"""The linalg-on-tensors IR torch-mlir emits for gelu(approximate='tanh') (fp32)."""
import torch
import torch.nn.functional as F
from torch._dynamo.backends.common import aot_autograd
from torch_mlir import fx


def show(gm, example_inputs):
    print(fx.stateless_fx_import(gm, output_type="linalg-on-tensors", model_name="main"))
    return gm


torch.compile(lambda x: F.gelu(x, approximate="tanh"), backend=aot_autograd(fw_compiler=show))(torch.randn(8))
