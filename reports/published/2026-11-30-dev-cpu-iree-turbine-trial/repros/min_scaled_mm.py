# Minimal standalone: torch._scaled_mm (fp8 e4m3fn, tensorwise scales) through turbine_cpu
import torch, iree.turbine  # noqa
torch.manual_seed(0)
a = torch.randn(64, 64).to(torch.float8_e4m3fn)
b = torch.randn(48, 64).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
sa, sb = torch.tensor(1.0), torch.tensor(1.0)
fn = lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
ref = fn(a, b, sa, sb)
for name in ["aot_eager", "turbine_cpu"]:
    torch._dynamo.reset()
    try:
        out = torch.compile(fn, backend=name)(a, b, sa, sb)
        print(name, "OK, max diff vs eager", float((out.float() - ref.float()).abs().max()))
    except Exception as e:
        print(name, "FAILED:", type(e).__name__, str(e).strip().splitlines()[-1] if str(e).strip() else "")
