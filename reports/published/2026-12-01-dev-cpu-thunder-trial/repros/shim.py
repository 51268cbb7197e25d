"""Shim: torch 2.13 removed the named-tensor methods that thunder 0.2.6 lists at import time
(thunder/torch/default_torch_ops.py). Stub them before `import thunder`."""
import torch
SHIMMED = []
for _a in ("align_as", "align_to", "has_names", "refine_names", "rename"):
    if not hasattr(torch.Tensor, _a):
        def _f(*a, _n=_a, **k):
            raise NotImplementedError(f"torch.Tensor.{_n} is gone in torch {torch.__version__}")
        _f.__name__ = _a
        setattr(torch.Tensor, _a, _f)
        SHIMMED.append(_a)
