"""Does an inductor compile change which ptxas (and libdevice) later Triton compiles in the same
process use? Prints the environment, the ptxas Triton resolves and its version, the CUDA
backend's hash, and one Triton kernel's hash, before and after one inductor compile."""

import os
import pathlib

import torch
import triton
import triton.language as tl
from triton import knobs
from triton.compiler.compiler import make_backend

target = triton.runtime.driver.active.get_current_target()


@triton.jit
def copy(x, y, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + i, tl.load(x + i, mask=i < n), mask=i < n)


def state(when, x):
    y = torch.empty_like(x)
    kernel = copy[(1,)](x, y, x.numel(), B=1024)
    print(
        f"{when}: TRITON_PTXAS_PATH={os.environ.get('TRITON_PTXAS_PATH')} "
        f"TRITON_LIBDEVICE_PATH={os.environ.get('TRITON_LIBDEVICE_PATH')}"
    )
    print(f"  knobs.nvidia.ptxas: {knobs.nvidia.ptxas.path} ({knobs.nvidia.ptxas.version})")
    print(f"  backend hash: {make_backend(target).hash()!r}"[:300])
    print(f"  copy kernel hash: {kernel.hash}")


torch_ptxas = pathlib.Path(torch.__file__).parent / "bin" / "ptxas"
print(f"torch ships {torch_ptxas}: {torch_ptxas.exists()}")
x = torch.randn(1000, device="cuda")
state("before", x)
torch.compile(lambda t: t.sin() * 2 + 1)(x)
copy.device_caches.clear() if hasattr(copy, "device_caches") else None
state("after one inductor compile", x + 1)
