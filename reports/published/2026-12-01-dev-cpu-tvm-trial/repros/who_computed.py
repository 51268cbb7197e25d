"""Did TVM compute gemmconf's 'backend' passes? torch + apache-tvm only.

fp32 addmm and bmm through relax_dynamo: the profiler's aten ops of the first (compiling) and
second call, and whether the result differs bitwise from aten's (own rounding order).
"""
import torch
from torch.profiler import ProfilerActivity, profile
from tvm.relax.frontend.torch import relax_dynamo

torch.manual_seed(0)


def check(name, fn, *args):
    torch._dynamo.reset()
    cf = torch.compile(fn, backend=relax_dynamo())
    for call in ("first", "second"):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            got = cf(*args)
        names = sorted({e.name for e in prof.events() if e.name.startswith("aten::")})
        gemm = [n for n in names if any(k in n for k in ("mm", "matmul", "linear", "addmm"))]
        print(f"[{name}] {call} call: aten GEMM ops seen {gemm}; aten ops {len(names)}")
    want = fn(*args)
    print(f"[{name}] bitwise equal to eager: {torch.equal(got, want)}; max|diff| "
          f"{(got - want).abs().max().item():.3g}; type {type(got).__name__} {got.dtype}")


a, b, c = torch.randn(127, 33), torch.randn(33, 65), torch.randn(127, 65)
check("addmm fp32", lambda c_, x, y: torch.addmm(c_, x, y), c, a, b)
check("bmm fp32", lambda x, y: torch.bmm(x, y), torch.randn(3, 32, 32), torch.randn(3, 32, 32))

# dynamic=True: relax gets symbolic shapes; exec_tvm drops every non-tensor argument
torch._dynamo.reset()
cf = torch.compile(lambda x, y: torch.bmm(x, y), backend=relax_dynamo(), dynamic=True)
for m in (17, 40, 64):
    x, y = torch.randn(2, m, 33), torch.randn(2, 33, 9)
    try:
        out = cf(x, y)
        print(f"[bmm dynamic] M={m}: ok={torch.allclose(out, torch.bmm(x, y), atol=1e-4)} shape {tuple(out.shape)}")
    except Exception as e:  # noqa: BLE001
        print(f"[bmm dynamic] M={m}: RAISED {type(e).__name__}: {str(e).splitlines()[-1][:200]}")

# alpha=0: relax's _addmm emits no matmul at all (res = beta*C); with beta=1 the graph returns C.
# Is the returned tensor C itself (eager's addmm returns a new tensor)?
for beta in (1, 0.5):
    torch._dynamo.reset()
    cf = torch.compile(lambda c_, x, y: torch.addmm(c_, x, y, alpha=0, beta=beta), backend=relax_dynamo())
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        out = cf(c, a, b)
    names = sorted({e.name for e in prof.events() if e.name.startswith("aten::")})
    eager = torch.addmm(c, a, b, alpha=0, beta=beta)
    print(f"[addmm alpha=0 beta={beta}] equal to eager {torch.equal(out, eager)}; out is C's storage "
          f"{out.untyped_storage().data_ptr() == c.untyped_storage().data_ptr()}; eager's out is C's storage "
          f"{eager.untyped_storage().data_ptr() == c.untyped_storage().data_ptr()}; aten ops in call {names}")
    if beta == 1:
        out.add_(1.0)
        print(f"    after out.add_(1): C changed: {not torch.equal(c, eager)}")
        c = c.clone()
