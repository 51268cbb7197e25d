"""A torch.compile backend that dynamo never called is "not compiled", never a pass.

Dynamo runs a frame eagerly when it captures no graph: an `out=` target that is not contiguous
(torch 2.13 and 2.11), or `F.scaled_mm` on torch 2.11 (dynamo skips `_scaled_mm_v2`). eager then
computes the result the oracle judges, and the item used to pass on every compiler backend.
"""

from __future__ import annotations

import torch

from gemmconf import api, kinds
from gemmconf.backends import resolve
from gemmconf.backends.dynamo import GraphBreaks


def instance(record_id: str):
    (found,) = api.instances([record_id])
    return found


def test_a_strided_out_target_is_not_compiled_on_compiler_backends():
    strided = instance("out/targets[mm-strided]")
    for name in ("reference", "inductor"):
        verdict = api.run(strided, resolve(name))
        assert not verdict.passed and verdict.kind == kinds.NOT_COMPILED, (name, verdict)
        assert "non-contiguous `out=`" in verdict.summary, verdict.summary
        assert verdict.metrics["compiles"] == 0


def test_the_same_program_reaching_the_backend_still_passes():
    assert api.run(instance("out/targets[mm-contiguous]"), resolve("reference")).passed
    # eager compiles nothing by design: it is not a compiler, and it is the baseline
    assert api.run(instance("out/targets[mm-strided]"), resolve("eager")).passed


def test_graph_breaks_name_the_reason_only_when_nothing_was_compiled():
    breaks = GraphBreaks()

    def program(x, y, out):
        return torch.mm(x, y, out=out)

    compiled = torch.compile(program, backend=lambda gm, _: gm.forward)
    with breaks.watching():
        compiled(torch.ones(4, 3), torch.ones(3, 5), torch.empty(5, 4).t())
    assert breaks.reasons and "out=" in breaks.reasons[0]
    assert breaks.called  # watching() saw a call
    assert breaks.uncaptured(compiles=0).startswith("Attempted to call op")
    assert breaks.uncaptured(compiles=1) is None  # a graph reached the backend
    assert GraphBreaks().uncaptured(compiles=0) is None  # never called: no finding


def test_a_call_that_raised_after_a_graph_break_is_not_compiled_either():
    """torch 2.11: dynamo skipped F.scaled_mm, eager's cuBLAS raised on sm90, and the item was
    charged as the backend's crash; the failure now says the backend never saw the program.
    A call that raised while dynamo traced (no graph break) stays what it was."""
    breaks, silent = GraphBreaks(), GraphBreaks()
    breaks.called = silent.called = True
    breaks.reasons.append("Attempted to call function marked as skipped\n\n  Explanation: ...")
    assert breaks.uncaptured(compiles=0, broke=True).startswith("Attempted")
    assert silent.uncaptured(compiles=0, broke=True) is None
    # grouped/not_bf16: the meta function raises while dynamo traces: a crash, not "not compiled"
    verdict = api.run(instance("grouped/not_bf16[fp16]"), resolve("reference"))
    assert verdict.kind == kinds.CRASH, verdict
