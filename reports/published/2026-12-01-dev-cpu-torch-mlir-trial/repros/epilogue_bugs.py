"""torch-mlir RefBackend: epilogue defects seen by gemmconf's epilogue folder. torch + torch-mlir only."""
import torch
import torch.nn.functional as F

from mlir_refbackend import mlir_compile


def run(name, fn, *args):
    try:
        out = torch.compile(fn, backend=mlir_compile)(*args)
        ref = fn(*args)
        print(f"{name}: max |torch-mlir - eager| = {(out.double() - ref.double()).abs().max().item():.3e}"
              f" (dtype {out.dtype}, eager {ref.dtype})")
    except Exception as e:  # noqa: BLE001
        lines = [l for l in str(e).splitlines() if l.strip()]
        print(f"{name}: {type(e).__name__}: {lines[:2]}")


torch.manual_seed(0)
x32 = torch.randn(64, 64)
# 1. gelu(approximate="tanh") alone, no GEMM
run("gelu_tanh fp32", lambda x: F.gelu(x, approximate="tanh"), x32)
run("gelu_erf  fp32", lambda x: F.gelu(x), x32)
print("  eager |gelu_tanh - gelu_erf| =", (F.gelu(x32, approximate="tanh") - F.gelu(x32)).abs().max().item())
# 2. fp16 gelu: JIT needs compiler-rt's __truncdfhf2
run("gelu fp16", lambda x: F.gelu(x), x32.half())
# 3. fp32 -> bf16 cast: JIT needs __truncsfbf2
run("mm then .to(bf16)", lambda a, b: torch.mm(a, b).to(torch.bfloat16), x32, x32)
# 4. fp8 _scaled_mm (tensorwise)
a8 = x32.to(torch.float8_e4m3fn)
b8 = x32.t().contiguous().to(torch.float8_e4m3fn).t()
one = torch.tensor(1.0)
run("_scaled_mm fp8 tensorwise", lambda a, b, s: torch._scaled_mm(a, b, s, s, out_dtype=torch.float32), a8, b8, one)
