"""A torch.compile backend registered by name, tested with no adapter: `--backend dynamo:NAME`.

`compile_graph` is a compiler function as torch.compile calls it: it gets the FX graph dynamo
captured (`torch.mm` call_function nodes) and returns what runs it; this one swaps mm for its
own kernel and leaves the rest to PyTorch. Its package registers it under dynamo's entry-point
group, so that `torch.compile(fn, backend="blocked_mm")` finds it in any process, in
pyproject.toml:

    [project.entry-points.torch_dynamo_backends]
    blocked_mm = "registered_compiler:compile_graph"

Once installed (`pip install -e .`), gemmconf runs the suite on it by that name, through its own
torch.compile adapter (a fresh code object per item, the recompile limit raised, frames dynamo
ran eagerly reported as "not compiled"):

    gemmconf run --backend dynamo:blocked_mm -m cpu

Options after the name go to torch.compile (`mode=`, `fullgraph=`) or, every other key, to the
backend in `options=`: `--backend dynamo:blocked_mm,fullgraph=True`.
(`torch._dynamo.register_backend(compile_graph, name="blocked_mm")` at import time registers it
too, but only in processes that import this module: gemmconf's item workers do not.)
"""

from __future__ import annotations

import blocked_kernels
import torch


def compile_graph(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.mm:
            node.target = blocked_kernels.mm
    gm.recompile()
    return gm.forward
