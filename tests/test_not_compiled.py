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


class OutsideCompiler:
    """A backend as the README's protocol describes it, written the way an outside author
    would: its own torch.compile, a compiler that counts the graphs it receives, and no
    `uncaptured()` (found by a fresh-venv trial, 2026-11-25: such a backend passed the strided
    `out=` items with eager's numbers)."""

    name = "outside-compiler"

    def availability(self):
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        backend = self

        class Compiled:
            graphs = 0

            def __init__(self):
                def compiler(gm, _example):
                    Compiled.graphs += 1
                    return gm.forward

                self._fn = torch.compile(fn, backend=compiler, dynamic=dynamic)

            def __call__(self, *args):
                return self._fn(*args)

            def artifacts(self):
                return {}

            def compiles(self):
                return Compiled.graphs

        backend.last = Compiled()
        return backend.last


class NotACompiler:
    """An aten-override library: no dynamo, no compile; compiles() stays 0."""

    name = "not-a-compiler"

    def availability(self):
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        class Direct:
            def __call__(self, *args):
                return fn(*args)

            def artifacts(self):
                return {}

            def compiles(self):
                return 0

        return Direct()


def test_an_outside_torch_compile_backend_is_not_compiled_where_dynamo_ran_eagerly():
    verdict = api.run(instance("out/targets[mm-strided]"), OutsideCompiler())
    assert not verdict.passed and verdict.kind == kinds.NOT_COMPILED, verdict
    assert "non-contiguous `out=`" in verdict.summary, verdict.summary
    assert api.run(instance("out/targets[mm-contiguous]"), OutsideCompiler()).passed


def test_a_backend_that_never_enters_dynamo_is_judged_on_its_results_alone():
    for record_id in ("out/targets[mm-strided]", "first/mm[bf16-127x65x33-nt]"):
        verdict = api.run(instance(record_id), NotACompiler())
        assert verdict.passed, (record_id, verdict.summary)


def test_dynamo_guard_timing_is_skipped_and_guards_still_decide(monkeypatch):
    import torch._dynamo.guards as guards
    from torch._dynamo.testing import CompileCounter

    from gemmconf.backends import dynamo

    monkeypatch.setattr(guards, "profile_guard_manager", guards.profile_guard_manager)
    assert dynamo.skip_guard_latency_profile()
    assert guards.profile_guard_manager(None, None, 1) == 0.0
    counter = CompileCounter()
    compiled = torch.compile(dynamo.isolated_entry(torch.mm), backend=counter, dynamic=False)
    compiled(torch.ones(2, 2), torch.ones(2, 2))
    compiled(torch.ones(2, 2), torch.ones(2, 2))
    assert counter.frame_count == 1  # the guards pass: no recompile
    compiled(torch.ones(3, 3), torch.ones(3, 3))
    assert counter.frame_count == 2  # a new shape fails them
