# minimal: thunder (ThunderCompiler) on torch 2.13 CPU, mm of a transposed operand
import torch
for _a in ("align_as", "align_to", "has_names", "refine_names", "rename"):  # thunder 0.2.6 import shim
    if not hasattr(torch.Tensor, _a):
        def _g(*a, **k): raise NotImplementedError
        _g.__name__ = _a; setattr(torch.Tensor, _a, _g)
import thunder
from thunder.dynamo import ThunderCompiler
a, b = torch.randn(64, 64), torch.randn(64, 64)
fn = lambda a, b: torch.mm(a, b.transpose(-2, -1))
print("eager ok", fn(a, b).shape)
print("aot_eager ok", torch.compile(fn, backend="aot_eager")(a, b).shape)
try:
    thunder.jit(fn)(a, b); print("thunder.jit ok")
except Exception as e: print("thunder.jit FAIL", type(e).__name__, e)
torch._dynamo.reset()
try:
    torch.compile(fn, backend=ThunderCompiler())(a, b); print("ThunderCompiler ok")
except Exception as e: print("ThunderCompiler FAIL", type(e).__name__, str(e).splitlines()[0])
# the same graph, straight into thunder.jit
gm = torch.fx.symbolic_trace(lambda a, b: torch.mm(a, b.transpose(-2, -1)))
try:
    thunder.jit(gm)(a, b); print("thunder.jit(fx gm) ok")
except Exception as e: print("thunder.jit(fx gm) FAIL", type(e).__name__, str(e).splitlines()[0])
