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
        again = item.backend_call("the second call on the same inputs", item.first_call())
        item.stage = "comparing two calls bit for bit"
        d = integrity.first_difference(item.first_draw.actual, again)
        if d is None:
            return NOTHING
        problem = Nondeterministic(shape(item.backend_inputs[0]), d)
        return Findings(problems=(problem,))
