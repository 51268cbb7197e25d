import torch
for _a in ("align_as", "align_to", "has_names", "refine_names", "rename"):
    if not hasattr(torch.Tensor, _a):
        def _g(*a, **k): raise NotImplementedError
        _g.__name__ = _a; setattr(torch.Tensor, _a, _g)
import thunder
from thunder.dynamo import ThunderCompiler
from torch.fx._lazy_graph_module import _force_skip_lazy_graph_module
def comp(gm, ex):
    from torch.fx._lazy_graph_module import _LazyGraphModule
    for m in gm.modules():
        if isinstance(m, _LazyGraphModule): m.real_recompile()
    out = ThunderCompiler()(gm, ex)
    n = 0
    for m in out.modules():
        if isinstance(m, _LazyGraphModule): m.real_recompile(); n += 1
    return out
a, b, c = torch.randn(3, 32, 32), torch.randn(3, 32, 32), torch.randn(32)
for name, fn in [("bmm", lambda a, b: torch.bmm(a, b)), ("mm_t", lambda a, b: a[0] @ b[0].t()),
                 ("linear", lambda a, b: torch.nn.functional.linear(a[0], b[0], c)),
                 ("relu", lambda a, b: torch.relu(a[0] @ b[0]))]:
    torch._dynamo.reset()
    try:
        print(name, (torch.compile(fn, backend=comp)(a, b) - fn(a, b)).abs().max().item())
    except Exception as e: print(name, "FAIL", type(e).__name__, str(e).splitlines()[0][:150])
