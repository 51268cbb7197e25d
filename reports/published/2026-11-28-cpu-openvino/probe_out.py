import torch, sys
def program(a, b, out):
    out = torch.matmul(a, b, out=out)
    return out
a, b = torch.randn(2, 48, 32), torch.randn(32, 40)
for backend in sys.argv[1:]:
    torch._dynamo.reset()
    out = torch.full((2, 48, 40), float("nan"))
    try:
        r = torch.compile(program, backend=backend, dynamic=False)(a, b, out)
        print(backend, "out still NaN:", bool(out.isnan().all()), "returned right:", torch.allclose(r, a @ b, atol=1e-5), "returned is out:", r.data_ptr() == out.data_ptr())
    except Exception as e:
        print(backend, type(e).__name__, str(e).splitlines()[0][:200])
