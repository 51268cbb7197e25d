"""Build first on plain operands, then call with b one element into its storage: is the crash in
the build or in the run? torch + apache-tvm only."""
import torch
from tvm.relax.frontend.torch import relax_dynamo

torch.manual_seed(0)
compiles = []


def counting(gm, ex):
    compiles.append(1)
    print(f"  compile {len(compiles)}: building", flush=True)
    run = relax_dynamo()(gm, ex)
    print(f"  compile {len(compiles)}: built", flush=True)
    return run


a, b = torch.randn(127, 33), torch.randn(33, 65)
f = torch.compile(lambda x, y: torch.matmul(x, y), backend=counting)
print("plain b:", (f(a, b) - a @ b).abs().max().item(), "compiles", len(compiles), flush=True)
flat = torch.empty(b.numel() + 1)
b_off = flat[1:].view(33, 65)
b_off.copy_(b)
print("calling with offset b (storage_offset 1) ...", flush=True)
out = f(a, b_off)
print("offset b:", (out - a @ b).abs().max().item(), "compiles", len(compiles), flush=True)
