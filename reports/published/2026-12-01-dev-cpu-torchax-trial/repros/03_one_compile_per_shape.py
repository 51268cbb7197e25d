# torchax.compile (jax.jit) specializes on shapes: 3 distinct M -> 3 XLA compiles; torchax has no
# dynamic-shape mode for a function (CompileOptions(mode="dynamo") raises "not supported yet").
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import jax, torch
from torchax_gemm import torchax, interop  # lenient import for torch 2.13 (see 01)
jitted = jax.jit(interop.jax_view(lambda a, b: torch.mm(a, b)))
env = torchax.default_env()
for m in (64, 37, 100):
    jitted(*env.t2j_copy((torch.randn(m, 48), torch.randn(48, 32))))
print("XLA compiles:", jitted._cache_size())  # 3
try: torchax.compile(lambda a, b: a @ b, torchax.CompileOptions(mode="dynamo"))
except RuntimeError as e: print("mode=dynamo:", e)
