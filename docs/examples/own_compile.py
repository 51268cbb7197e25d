"""A backend with a compile step of its own, behind gemmconf's Backend protocol:
`gemmconf run --backend own_compile:TracingBackend -m cpu` from the folder that holds this file.

`compile(fn, example_inputs, *, dynamic)` traces the program with torch.fx, swaps its GEMM calls
for the library's kernels and returns the rewritten module; the harness calls it once per shape
set and reads `compiles()` for the recompile checks, `artifacts()` for the code checks (here the
rewritten graph's Python, as `python`). `dynamic` is torch.compile's argument of that name: True
where one compile must serve every shape set, False where each shape may compile anew, None for
`mark_dynamic` scenarios (gemmconf.backends.dynamo says more); a tracer like this one serves all
shapes with one graph and may ignore it.
"""

from __future__ import annotations

import blocked_kernels
import torch

SWAPS = {
    torch.mm: blocked_kernels.mm,
    torch.bmm: blocked_kernels.bmm,
    torch.addmm: blocked_kernels.addmm,
}


class Compiled:
    def __init__(self, module: torch.fx.GraphModule):
        self.module = module

    def __call__(self, *inputs):
        return self.module(*inputs)

    def artifacts(self) -> dict[str, str]:
        return {"python": self.module.code}

    def compiles(self) -> int:
        return 1  # one trace, whatever the shapes


class TracingBackend:
    name = "tracing"

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        module = torch.fx.symbolic_trace(fn)
        for node in module.graph.nodes:
            if node.op == "call_function" and node.target in SWAPS:
                node.target = SWAPS[node.target]
        module.recompile()
        return Compiled(module)
