# Importing torchax makes "jax" torch's PrivateUse1 accelerator (rename_privateuse1_backend +
# _register_device_module at import). After that, torch.compile of ANY program on CPU tensors,
# with any backend (even "eager"), raises while dynamo traces: torch.accelerator.current_stream().
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import torch
a, b = torch.randn(8, 8), torch.randn(8, 8)
print("before:", torch.compile(lambda a, b: a @ b, backend="eager")(a, b).shape)
torch._dynamo.reset()
from torchax_gemm import torchax  # lenient import for torch 2.13 (see 01)
print("accelerator now:", torch.accelerator.current_accelerator())
try: torch.compile(lambda a, b: a @ b, backend="eager")(a, b)
except Exception as e: print("after import torchax:", type(e).__name__, str(e).splitlines()[0])
