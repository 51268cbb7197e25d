# thunder 0.2.6 on torch 2.13: torch.mm == torch.spmm (same C function), so thunder's default-op
# registration of spmm overwrites torch.mm's entry: mm becomes an "automatic torch fallback" and
# ThunderCompiler hands every mm region to inductor.
import torch
import shim  # noqa: F401  (named-tensor stubs so thunder imports)
from thunder.torch import _torch_to_thunder_function_map as m
from thunder.dynamo import ThunderCompiler
print("torch.spmm == torch.mm:", torch.spmm == torch.mm)
print("thunder symbol for torch.mm:", m[torch.mm])
tc = ThunderCompiler(); torch.compile(lambda a, b: torch.mm(a, b), backend=tc)(torch.randn(1, 1), torch.randn(1, 1))
si = tc.subgraph_infos[0]
print([c.compiler.name for c in si.submodule_to_compiled_functions.values()], si.split_reasons[0].info)
