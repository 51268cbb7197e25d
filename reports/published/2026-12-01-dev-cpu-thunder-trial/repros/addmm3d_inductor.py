# errors/bias_mismatch[addmm_3d-*]: torch-only, no thunder. eager raises RuntimeError, inductor AssertionError
import torch
c, a, b = torch.randn(2, 4, 7), torch.randn(4, 5), torch.randn(5, 7)
fn = lambda c, a, b: torch.addmm(c, a, b)
for name, f in [("eager", fn), ("aot_eager", torch.compile(fn, backend="aot_eager")), ("inductor", torch.compile(fn, backend="inductor"))]:
    torch._dynamo.reset()
    try: f(c, a, b); print(name, "no error")
    except Exception as e:
        inner = e
        while getattr(inner, "inner_exception", None) or (type(inner).__module__.startswith("torch._") and inner.__cause__): inner = getattr(inner, "inner_exception", None) or inner.__cause__
        print(name, type(e).__name__, "->", type(inner).__name__, str(inner).splitlines()[0][:120] if str(inner) else "")
