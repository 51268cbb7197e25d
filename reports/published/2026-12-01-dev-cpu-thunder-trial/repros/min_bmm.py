import torch
for _a in ("align_as", "align_to", "has_names", "refine_names", "rename"):  # thunder 0.2.6 import shim
    if not hasattr(torch.Tensor, _a):
        def _g(*a, **k): raise NotImplementedError
        _g.__name__ = _a; setattr(torch.Tensor, _a, _g)
import thunder
from thunder.dynamo import ThunderCompiler
a, b = torch.randn(3, 32, 32), torch.randn(3, 32, 32)
fn = lambda a, b: torch.bmm(a, b)
print("aot_eager", (torch.compile(fn, backend="aot_eager")(a, b) - fn(a, b)).abs().max().item())
print("thunder.jit", (thunder.jit(fn)(a, b) - fn(a, b)).abs().max().item())
torch._dynamo.reset()
try:
    torch.compile(fn, backend=ThunderCompiler())(a, b); print("ThunderCompiler ok")
except Exception as e:
    import traceback; tb = traceback.extract_tb(e.__traceback__)
    print("ThunderCompiler FAIL", type(e).__name__, str(e).splitlines()[0])
    print([f"{f.filename.split('site-packages/')[-1]}:{f.lineno} {f.name}" for f in tb if "interpreter.py" not in f.filename][:40])
