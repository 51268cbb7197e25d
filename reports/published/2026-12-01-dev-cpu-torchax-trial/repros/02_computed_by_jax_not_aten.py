# The aten::mm profiler events in a torchax.compile'd call come from jax.jit *tracing* (torchax's
# TorchDispatchMode sees aten::mm and emits jnp.matmul on a tracer); XLA computes the product.
# A cached call dispatches no aten op at all. (torch + torchax only; import shim from torchax_gemm.)
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import torch, torchax_gemm as tx  # the adapter's lenient import for torch 2.13 (see 01)
f = tx.torchax.compile(lambda a, b: torch.mm(a, b))  # = interop.jax_jit
env = tx.torchax.default_env()
a, b = env.to_xla((torch.randn(64, 48), torch.randn(48, 32)))
for call in ("first (traces)", "second (cached)"):
    with torch.autograd.profiler.profile() as p:
        out = f(a, b)
    print(call, "aten::mm events:", sum(e.name == "aten::mm" for e in p.function_events))
print(type(out).__name__, out.jax().device, float((out.torch() - a.torch() @ b.torch()).abs().max()))
