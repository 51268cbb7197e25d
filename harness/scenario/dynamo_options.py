"""The `dynamo_config:` field: torch._dynamo.config options a seed test compiled under, checked at
load.

Some seeds reach their GEMM only under a dynamo option: `test_zero_grid_with_unbacked_symbols`
multiplies rows picked by `torch.nonzero`, whose count is an unbacked symbol only where dynamo
captures nonzero() into the graph (`capture_dynamic_output_shape_ops`); without it dynamo breaks
the graph there and the GEMM gets a backed size. Dynamo runs under every torch.compile-based
backend (inductor, the reference backend, `dynamo:NAME`), so each of them applies the field
around its compile and calls (`for_instance`); eager ignores it.

Checked as `inductor_config` is (gemmconf.scenario.inductor_options: the installed torch's own
option table, scalar values of the declared type, errors naming the entry's file:line), with a
stricter rule: only the options of ALLOWED may be set. Dynamo's other options are the harness's
(the recompile limit the compile budget rests on, compiled autograd, which has its own field) or
reach outside the item (logs, caches, debug dirs).
"""

from __future__ import annotations

import functools
from typing import Any

from gemmconf.scenario.inductor_options import Scalar, _Option, module_table
from gemmconf.scenario.inductor_options import check_config as _check_entries

MODULE = "torch._dynamo.config"

# What a suite file may set, each for what it changes in the graph dynamo hands the backend
ALLOWED: dict[str, str] = {
    "capture_dynamic_output_shape_ops": "ops whose output size depends on the data (nonzero, "
    "masked indexing) stay in the graph, with an unbacked size",
    "capture_scalar_outputs": "Tensor.item() stays in the graph, an unbacked scalar",
}


@functools.cache
def _table() -> dict[str, _Option]:
    """dynamo's options, read once per process (cached as inductor's table is)."""
    return module_table(MODULE)


def _refused_reason(name: str) -> str | None:
    if name in ALLOWED:
        return None
    return (
        f"dynamo_config sets only {', '.join(ALLOWED)}: dynamo's other options are the "
        "harness's (the recompile limit, compiled autograd) or the user's (logs, caches)"
    )


def check_config(value: Any) -> tuple[tuple[str, Scalar], ...]:
    """The whole field, in the file's order; `OptionProblem` naming the bad entry otherwise."""
    return _check_entries(
        value,
        example="{capture_dynamic_output_shape_ops: true}",
        module=MODULE,
        table=_table,
        refuse=_refused_reason,
    )
