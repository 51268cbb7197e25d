"""lightning-thunder 0.2.6 as a gemmconf backend: `gemmconf run --backend thunder_gemm:backend`.

thunder registers no torch.compile backend name, so this wraps its dynamo compiler,
`thunder.dynamo.ThunderCompiler`, with gemmconf's adapter.
"""
import torch

# thunder 0.2.6 lists named-tensor methods that torch 2.13 removed at import time
# (thunder/torch/default_torch_ops.py): stub them so `import thunder` works.
for _attr in ("align_as", "align_to", "has_names", "refine_names", "rename"):
    if not hasattr(torch.Tensor, _attr):
        def _gone(*args, _n=_attr, **kwargs):
            raise NotImplementedError(f"torch.Tensor.{_n} is gone in torch {torch.__version__}")
        _gone.__name__ = _attr  # thunder checks the name against the attribute
        setattr(torch.Tensor, _attr, _gone)

from thunder.dynamo import ThunderCompiler  # noqa: E402
from gemmconf.backends.dynamo import dynamo_backend  # noqa: E402


def thunder_compiler(gm, example_inputs):
    return ThunderCompiler()(gm, example_inputs)  # a fresh compiler per graph


backend = dynamo_backend(thunder_compiler, name="thunder")
