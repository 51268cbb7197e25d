"""torch-mlir RefBackend: tanh (and so gelu(approximate='tanh')) in fp32 is off by many ulps."""
import torch
import torch.nn.functional as F

from mlir_refbackend import mlir_compile

x = torch.linspace(-6, 6, 4097)
for name, fn in [("tanh", torch.tanh), ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
                 ("exp", torch.exp), ("erf", torch.erf)]:
    out = torch.compile(fn, backend=mlir_compile)(x)
    ref64 = fn(x.double())
    eager = fn(x)
    e_mlir = (out.double() - ref64).abs()
    e_eager = (eager.double() - ref64).abs()
    i = int(e_mlir.argmax())
    print(f"{name:9s} max err vs fp64: torch-mlir {e_mlir.max().item():.2e}, eager {e_eager.max().item():.2e}"
          f"; worst at x={x[i].item():+.4f}: torch-mlir {out[i].item():.8f}, fp64 {ref64[i].item():.8f}")
