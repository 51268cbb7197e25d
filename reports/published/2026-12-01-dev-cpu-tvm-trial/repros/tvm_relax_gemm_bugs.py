"""TVM relax's torch.compile frontend on GEMMs: torch + apache-tvm only (no gemmconf).

Each case compiles one small program with torch.compile(backend=relax_dynamo()) and compares it
with eager. Run: python tvm_relax_gemm_bugs.py
"""
import traceback

import torch
import tvm
from tvm.relax.frontend.torch import relax_dynamo

print("torch", torch.__version__, "tvm", tvm.__version__)
torch.manual_seed(0)


def run(name, fn, *args):
    torch._dynamo.reset()
    try:
        got = torch.compile(fn, backend=relax_dynamo())(*args)
    except Exception as e:  # noqa: BLE001
        msg = str(e).split("Set TORCHDYNAMO_VERBOSE")[0].strip().replace("\n", " ")
        print(f"[{name}] compiled RAISED {type(e).__name__}: {msg[:300]}")
        return None
    want = fn(*args)
    same_dtype = got.dtype == want.dtype
    same_shape = got.shape == want.shape
    err = (got.double() - want.double()).abs().max().item() if same_shape else float("nan")
    print(f"[{name}] eager {tuple(want.shape)} {want.dtype} | tvm {tuple(got.shape)} {got.dtype}"
          f" | dtype ok {same_dtype} shape ok {same_shape} max|tvm-eager| {err:.3g}")
    return got, want


f32 = dict(dtype=torch.float32)
a, b = torch.randn(33, 65), torch.randn(65, 40)
c = torch.randn(33, 40)

# 1. torch.mm has no converter in fx_translator (the exported-program translator has mm.default)
run("1 mm fp32", lambda x, y: torch.mm(x, y), a, b)
run("1b a @ b fp32 (same op through matmul)", lambda x, y: x @ y, a, b)

# 2. bf16/fp16 GEMMs return float32: matmul/bmm/addmm/linear hard-code out_dtype="float32"
ab, bb = a.bfloat16(), b.bfloat16()
run("2 matmul bf16", lambda x, y: torch.matmul(x, y), ab, bb)
run("2b bmm fp16", lambda x, y: torch.bmm(x, y), torch.randn(2, 17, 65).half(), torch.randn(2, 65, 9).half())
run("2c linear bf16 no bias", lambda x, w: torch.nn.functional.linear(x, w), ab, bb.t().contiguous())

# 3. the fp32 product then meets a bf16 bias: relax refuses the add at build time
run("3 addmm bf16", lambda c_, x, y: torch.addmm(c_, x, y), c.bfloat16(), ab, bb)
run("3b linear bf16 with bias", lambda x, w, bias: torch.nn.functional.linear(x, w, bias), ab,
    bb.t().contiguous(), torch.randn(40).bfloat16())

# 4. addmm alpha=0: returns beta*C unbroadcast (shape of C, not (M, N))
run("4 addmm alpha=0, C (40,)", lambda c_, x, y: torch.addmm(c_, x, y, alpha=0), torch.randn(40), a, b)

# 5. baddbmm bf16: relax.op.matmul with no out_dtype: the product is rounded to bf16 before the
# bias add (two roundings; eager rounds once). Error against fp64 over 8 draws (gemmconf's item
# dense_bias/baddbmm_nan_in_c_beta0[bias_BMN-bf16] is B=2 M=17 N=24 K=40 with beta=0).
for k, beta in ((40, 1.0), (40, 0.0), (1024, 0.0)):
    worst = []
    for draw in range(8):
        A, B, C = torch.randn(2, 17, k).bfloat16(), torch.randn(2, k, 24).bfloat16(), torch.randn(2, 17, 24).bfloat16()
        torch._dynamo.reset()
        got = torch.compile(lambda c_, x, y: torch.baddbmm(c_, x, y, beta=beta), backend=relax_dynamo())(C, A, B)
        ref = torch.baddbmm(C.double(), A.double(), B.double(), beta=beta)
        e_t = (got.double() - ref).abs().max().item()
        e_e = (torch.baddbmm(C, A, B, beta=beta).double() - ref).abs().max().item()
        worst.append(e_t / e_e)
    print(f"[5 baddbmm bf16 K={k} beta={beta}] max|tvm-fp64| / max|eager-fp64| over 8 draws: " + ", ".join(f"{w:.2f}" for w in worst))

# 6. zero-size operand (K = 0) through a converter that exists (matmul)
run("6 matmul K=0", lambda x, y: x @ y, torch.randn(8, 0), torch.randn(0, 5))

# 8. autograd: exec_tvm detaches every input, so the result has no grad_fn
x = torch.randn(24, 32, requires_grad=True)
w = torch.randn(32, 40, requires_grad=True)
torch._dynamo.reset()
y = torch.compile(lambda p, q: torch.matmul(p, q), backend=relax_dynamo())(x, w)
print(f"[8 matmul requires_grad inputs] eager result requires_grad {torch.matmul(x, w).requires_grad}; "
      f"tvm result requires_grad {y.requires_grad}, grad_fn {y.grad_fn}")
try:
    y.sum().backward()
except RuntimeError as e:
    print(f"    backward RAISED RuntimeError: {e}")

# 9. out=: the converter drops the out= keyword, so the target is never written
x, y = torch.randn(2, 17, 65), torch.randn(2, 65, 9)
target = torch.full((2, 17, 9), float("nan"))
torch._dynamo.reset()
ret = torch.compile(lambda p, q, o: torch.bmm(p, q, out=o), backend=relax_dynamo())(x, y, target)
print(f"[9 bmm(out=) fp32] target still NaN: {bool(target.isnan().all())}; returned tensor is target: "
      f"{ret.data_ptr() == target.data_ptr()}; returned values right: {torch.allclose(ret, torch.bmm(x, y), atol=1e-5)}")

# 7. the second operand one element into its storage (offset view): this shape runs; (33, 65)
# segfaults (tvm_offset_segfault.py)
store = torch.randn(65 * 40 + 1)
b_off = store[1:].view(65, 40)
print("7 offset b: running (a segfault ends the script here)", flush=True)
run("7 matmul b offset by 1 element", lambda x, y: x @ y, a, b_off)
