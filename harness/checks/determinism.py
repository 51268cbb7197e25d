"""Run to run determinism (`checks: {deterministic: true}`): a second call on the same inputs
returns the first call's answer bit for bit."""

from __future__ import annotations

from gemmconf import integrity
from gemmconf.checks.base import NOTHING, Findings
from gemmconf.item import ItemRun, shape
from gemmconf.outcome import Nondeterministic


class Deterministic:
    name = "deterministic"

    def applies(self, item: ItemRun) -> bool:
        return item.instance.checks.deterministic

    def run(self, item: ItemRun) -> Findings:
        backend_inputs, first = item.backend_inputs[0], item.draws[0][0]
        tensors, compiled = backend_inputs.tensors, item.compiled
        again = item.backend_call("the second call on the same inputs", lambda: compiled(*tensors))
        item.stage = "comparing two calls bit for bit"
        d = integrity.first_difference(first.actual, again)
        if d is None:
            return NOTHING
        where = shape(backend_inputs)
        problem = Nondeterministic(where, d)
        return Findings(problems=(problem,))
