"""torch-mlir RefBackend: (1) a contiguous zero-size operand aborts the process in the runtime
stride check; (2) a graph with a symbolic size argument does not compile. torch + torch-mlir only.

usage: python zero_size_and_symint.py symint|zero|zero-dynamic
"""
import sys

import torch
import torch.nn.functional as F

from mlir_refbackend import mlir_compile

which = sys.argv[1]
torch.manual_seed(0)
if which == "symint":
    # dynamic=True: dynamo hands the backend a graph whose placeholders include SymInts, used by a view
    f = torch.compile(lambda x, w, b: F.linear(x, w, b), backend=mlir_compile, dynamic=True)
    x, w, b = torch.randn(2, 5, 16), torch.randn(8, 16), torch.randn(8)
    try:
        print((f(x, w, b) - F.linear(x, w, b)).abs().max().item())
    except Exception as e:  # noqa: BLE001
        print(type(e).__name__, [l for l in str(e).splitlines() if l.strip()][:2])
else:
    # as gemmconf's dynamic/reach_zero[mm-fp32-k0]: dynamic=True, K=16 first, then K=0
    f = torch.compile(lambda a, b: torch.mm(a, b), backend=mlir_compile, dynamic=which == "zero-dynamic")
    for k in ([16, 0] if which == "zero-dynamic" else [0]):
        a, b = torch.randn(32, k), torch.randn(k, 24)
        print("K", k, "a", tuple(a.shape), a.stride(), "contiguous", a.is_contiguous(), flush=True)
        print("  max |out - eager|", (f(a, b) - torch.mm(a, b)).abs().max().item(), flush=True)
