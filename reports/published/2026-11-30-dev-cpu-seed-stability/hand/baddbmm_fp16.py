"""TVM relax's fp16 baddbmm against emulations: fp32 accumulation rounded once; the product
rounded to fp16 before the bias; fp16 accumulation."""

import torch
from tvm.relax.frontend.torch import relax_dynamo

torch.manual_seed(0)
f = torch.compile(lambda c, a, b: torch.baddbmm(c, a, b), backend=relax_dynamo())
B, M, K, N = 3, 33, 48, 40
for trial in range(3):
    a = torch.randn(B, M, K).half()
    b = torch.randn(B, K, N).half()
    c = torch.randn(B, M, N).half()
    out = f(c, a, b)
    ref = c.double() + a.double() @ b.double()
    eager = torch.baddbmm(c, a, b)
    once = (c.float() + a.float() @ b.float()).half()
    prod_rounded = (c.float() + (a.float() @ b.float()).half().float()).half()
    acc16 = torch.zeros(B, M, N, dtype=torch.half)
    for k in range(K):
        acc16 = (acc16.float() + a[:, :, k : k + 1].float() * b[:, k : k + 1, :].float()).half()
    acc16 = (acc16.float() + c.float()).half()
    err = lambda x: float((x.double() - ref).abs().max())
    print(
        f"trial {trial}: dtype {out.dtype}; max err tvm {err(out):.3g} eager {err(eager):.3g} "
        f"ratio {err(out) / err(eager):.2f}; equal to: once {torch.equal(out, once)}, "
        f"product rounded {torch.equal(out, prod_rounded)}, fp16 accumulation {torch.equal(out, acc16)}; "
        f"err once {err(once):.3g} prod_rounded {err(prod_rounded):.3g} acc16 {err(acc16):.3g}"
    )
