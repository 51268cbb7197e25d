import torch, sys
import openvino.frontend.pytorch.torchdynamo.backend as B
orig = B.compile_fx
def spy(gm, ex):
    print("openvino fell back to inductor's compile_fx")
    return orig(gm, ex)
B.compile_fx = spy
def program(a, b):
    return torch.matmul(a, b)
def padded(m, n):  # rows padded to a multiple of 16 elements
    ld = (n + 15) // 16 * 16
    return torch.randn(m, ld, dtype=torch.float16)[:, :n]
a, b = padded(127, 33), padded(33, 65)
for backend in sys.argv[1:]:
    torch._dynamo.reset()
    try:
        torch.compile(program, backend=backend, dynamic=False)(a, b)
        print(backend, "ok")
    except Exception as e:
        print(backend, type(e).__name__, str(e).splitlines()[0][:200])
