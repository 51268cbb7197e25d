"""What torch-mlir's torch-backend IR keeps of torch._scaled_mm (fp8, tensorwise)."""
import torch
from torch._dynamo.backends.common import aot_autograd
from torch_mlir import fx


def show(gm, example_inputs):
    print(gm.code.strip())
    try:
        m = fx.stateless_fx_import(gm, output_type="torch", model_name="main")
        print("\n".join(l for l in str(m).splitlines() if "_scaled_mm" in l or "torch.operator" in l))
    except Exception as e:  # noqa: BLE001
        print(type(e).__name__, str(e).splitlines()[:3])
    return gm


x = torch.randn(32, 32)
a8 = x.to(torch.float8_e4m3fn)
b8 = x.t().contiguous().to(torch.float8_e4m3fn).t()
one = torch.tensor(1.0)
f = torch.compile(lambda a, b, s: torch._scaled_mm(a, b, s, s, out_dtype=torch.float32),
                  backend=aot_autograd(fw_compiler=show))
f(a8, b8, one)
