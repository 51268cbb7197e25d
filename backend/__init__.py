"""gemmconf's reference GEMM backend: a torch.compile backend lowering GEMMs to Triton kernels.

Usage: `torch.compile(fn, backend=gemmconf_reference.reference_backend)`, or
`ReferenceCompiler(options)` for a backend instance that keeps its compile count and artifacts
(what the harness adapter, `harness/backends/reference.py`, uses).

Without a CUDA GPU the kernels run in the Triton interpreter on CPU tensors. The interpreter is
chosen by TRITON_INTERPRET=1, which Triton reads when a kernel is defined; so importing this
package sets it when no GPU is usable and the variable is unset, before `gemmconf_reference.kernels`
defines its kernels. Set TRITON_INTERPRET yourself to override (e.g. TRITON_INTERPRET=1 on a GPU
machine to debug in the interpreter). The kernels avoid Triton's own @jit standard-library
helpers, so this also works when Triton was imported first.
"""

import os

import torch

if not torch.cuda.is_available() and "TRITON_INTERPRET" not in os.environ:
    os.environ["TRITON_INTERPRET"] = "1"

from gemmconf_reference.compiler import ReferenceCompiler, reference_backend
from gemmconf_reference.launcher import BackendOptions

__all__ = ["BackendOptions", "ReferenceCompiler", "reference_backend"]
