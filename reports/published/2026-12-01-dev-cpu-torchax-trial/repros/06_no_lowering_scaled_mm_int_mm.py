# torchax 0.0.13 has no lowering for aten::_int_mm or aten::_scaled_mm (both run in eager on CPU).
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import torch
from torchax_gemm import torchax  # lenient import for torch 2.13 (see 01)
env = torchax.default_env()
a8, b8 = torch.randint(-8, 8, (64, 64), dtype=torch.int8), torch.randint(-8, 8, (64, 48), dtype=torch.int8)
af, bf = torch.randn(64, 64).to(torch.float8_e4m3fn), torch.randn(48, 64).to(torch.float8_e4m3fn).t()
one = torch.tensor(1.0)
for name, fn, args in [("_int_mm", torch._int_mm, (a8, b8)),
                       ("_scaled_mm", lambda a, b, s, t: torch._scaled_mm(a, b, s, t, out_dtype=torch.bfloat16), (af, bf, one, one))]:
    print(name, "eager:", tuple(fn(*args).shape), end="; ")
    try: torchax.compile(fn)(*env.to_xla(args))
    except Exception as e: print("torchax:", type(e).__name__, e)
