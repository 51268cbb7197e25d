"""thunder_gemm with a work-around for thunder 0.2.6 on torch 2.13: generate the code of every
lazy fx GraphModule before thunder.jit interprets it (else thunder's interpreter traces
torch.fx's code generator and fails: "object of type 'MappingKeysView' has no len()")."""
from torch.fx._lazy_graph_module import _LazyGraphModule

import thunder_gemm  # noqa: F401  (the import shim)
from thunder.dynamo import ThunderCompiler
from gemmconf.backends.dynamo import dynamo_backend


def _realize(module):
    for m in module.modules():
        if isinstance(m, _LazyGraphModule):
            m.real_recompile()


def thunder_compiler(gm, example_inputs):
    _realize(gm)
    compiled = ThunderCompiler()(gm, example_inputs)
    _realize(compiled)
    return compiled


backend = dynamo_backend(thunder_compiler, name="thunder-fx")
