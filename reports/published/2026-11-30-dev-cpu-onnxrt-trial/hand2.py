"""Hand checks of tvm-relax (apache-tvm 0.27.0.post1 relax_dynamo) against eager, torch 2.13.0 CPU."""
import sys
import torch
from tvm.relax.frontend.torch import relax_dynamo

be = relax_dynamo()


def comp(fn, *args):
    torch._dynamo.reset()
    try:
        return torch.compile(fn, backend=be)(*args)
    except Exception as e:
        msg = str(e).strip().splitlines()
        return f"{type(e).__name__}: {msg[0][:140] if msg else ''}"


def show(what, got, want):
    if isinstance(got, str):
        print(what, "->", got)
    else:
        print(what, "-> dtype", got.dtype, "shape", tuple(got.shape), "eager", want.dtype, tuple(want.shape),
              "maxerr", (got.double() - want.double()).abs().max().item() if got.shape == want.shape else "n/a")


torch.manual_seed(0)
case = sys.argv[1] if len(sys.argv) > 1 else "all"
if case in ("all", "addmm_bf16"):
    c, a, b = torch.randn(33, 40).bfloat16(), torch.randn(33, 48).bfloat16(), torch.randn(48, 40).bfloat16()
    show("addmm bf16", comp(torch.addmm, c, a, b), torch.addmm(c, a, b))
    show("linear bf16 (no bias)", comp(torch.nn.functional.linear, a, b.t()), torch.nn.functional.linear(a, b.t()))
    show("linear bf16 (bias)", comp(torch.nn.functional.linear, a, b.t(), c[0]), torch.nn.functional.linear(a, b.t(), c[0]))
if case in ("all", "alpha0"):
    c, a, b = torch.randn(1).bfloat16(), torch.randn(33, 48).bfloat16(), torch.randn(48, 40).bfloat16()
    f = lambda c, a, b: torch.addmm(c, a, b, alpha=0, beta=1)
    show("addmm alpha=0 bias (1,) bf16", comp(f, c, a, b), f(c, a, b))
    c32, a32, b32 = c.float(), a.float(), b.float()
    show("addmm alpha=0 bias (1,) fp32", comp(f, c32, a32, b32), f(c32, a32, b32))
if case in ("all", "k0"):
    c, a, b = torch.randn(32, 24), torch.randn(32, 0), torch.randn(0, 24)
    show("addmm K=0", comp(torch.addmm, c, a, b), torch.addmm(c, a, b))
if case in ("all", "mixed"):
    a, w = torch.randn(4, 5).bfloat16(), torch.randn(7, 5)
    show("linear bf16 x fp32 (eager raises)", comp(torch.nn.functional.linear, a, w),
         torch.zeros(0))
if case in ("all", "out"):
    a, b = torch.randn(3, 33, 40).bfloat16(), torch.randn(3, 40, 24).bfloat16()
    out = torch.full((3, 33, 24), float("nan"), dtype=torch.bfloat16)
    r = comp(lambda a, b, out: torch.bmm(a, b, out=out), a, b, out)
    print("bmm out= bf16: out NaN after call:", torch.isnan(out).all().item(), "returned", r if isinstance(r, str) else (r.dtype, r.data_ptr() == out.data_ptr()))
if case in ("all", "grad"):
    a, b = torch.randn(8, 6, requires_grad=True), torch.randn(6, 4, requires_grad=True)
    r = comp(lambda a, b: a @ b, a, b)
    print("matmul requires_grad inputs -> result requires_grad:", r if isinstance(r, str) else r.requires_grad)
if case == "offset":  # the SIGSEGV case: an operand at a storage offset
    base = torch.randn(127 * 33 + 7)
    a = base[7:].view(127, 33)
    b, c = torch.randn(33, 65), torch.randn(127, 65)
    show("addmm fp32, a at storage offset 7", comp(torch.addmm, c, a, b), torch.addmm(c, a, b))
if case == "offset1":  # as the suite's `offset` layout: a and b one element into their storage
    a = torch.randn(127 * 33 + 1)[1:].view(127, 33)
    b = torch.randn(33 * 65 + 1)[1:].view(33, 65)
    c = torch.randn(127, 65)
    which = sys.argv[2]
    if which == "b":
        a = a.clone()
    if which == "a":
        b = b.clone()
    show(f"addmm fp32, offset 1 on {which}", comp(torch.addmm, c, a, b), torch.addmm(c, a, b))
    show(f"mm via matmul fp32, offset 1 on {which}", comp(torch.matmul, a, b), torch.matmul(a, b))
if case == "out_t":  # out/targets[mm-transposed]: a transposed out= target
    a, b = torch.randn(48, 40), torch.randn(40, 40)
    out = torch.full((40, 48), float("nan")).t()
    counts = {}
    def counting(gm, inputs):
        counts[len(counts)] = [n.target for n in gm.graph.nodes if n.op == "call_function"]
        return be(gm, inputs)
    torch._dynamo.reset()
    torch.compile(lambda a, b, out: torch.mm(a, b, out=out), backend=counting)(a, b, out)
    print("mm out=transposed: graphs handed to relax:", counts, "; out NaN after call:", torch.isnan(out).all().item())
    out2 = torch.full((40, 48), float("nan")).t()
    torch._dynamo.reset()
    torch.compile(lambda a, b, out: torch.mm(a, b, out=out), backend="aot_eager")(a, b, out2)
    print("aot_eager: out NaN after call:", torch.isnan(out2).all().item(), "err", (out2 - a @ b).abs().max().item())
if case == "out_t2":  # as gemmconf's program: the out= result returned
    def program(a, b, out):
        out = out.transpose(-2, -1)
        out = torch.mm(a, b, out=out)
        return out
    a, b = torch.randn(48, 33), torch.randn(33, 40)
    out = torch.full((48, 40), float("nan")).t().contiguous()  # (40, 48), transposed in the program
    graphs = []
    def counting(gm, inputs):
        graphs.append(gm.code.strip())
        return be(gm, inputs)
    torch._dynamo.reset()
    r = torch.compile(program, backend=counting)(a, b, out)
    print("graphs handed to relax:", graphs)
    print("out NaN after call:", torch.isnan(out).all().item(), "; returned err", (r - a @ b).abs().max().item())
    out2 = torch.full((40, 48), float("nan"))
    torch._dynamo.reset()
    torch.compile(program, backend="aot_eager")(a, b, out2)
    print("aot_eager: out NaN after call:", torch.isnan(out2).all().item())
