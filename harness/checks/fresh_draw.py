"""Fresh values give a fresh answer: the backend must not answer a second draw of shape set 0
(same shapes, other values) with the first draw's result (a result cache keyed on shapes)."""

from __future__ import annotations

from typing import Any

import torch

from gemmconf import inputs, integrity
from gemmconf.checks.base import NOTHING, Findings
from gemmconf.checks.guards import UnwrittenTarget
from gemmconf.item import ItemRun, bitwise_equal, shape
from gemmconf.outcome import StaleResult, Unwritten


class FreshDraw:
    """Below FULL_STALE_CHECK_FLOPS the second draw was judged in full already (gemmconf.
    drawing): a failed second judgment after a passing first whose answer is the first's bit
    for bit is a stale result."""

    name = "fresh draw"

    def applies(self, item: ItemRun) -> bool:
        return item.judges_values and not item.large_first

    def run(self, item: ItemRun) -> Findings:
        item.stage = "comparing the fresh draw with the first"
        drawn = item.draws[0]
        if len(drawn) < 2 or drawn[1].verdict is None or drawn[1].verdict.passed:
            return NOTHING
        if drawn[0].verdict is None or not drawn[0].verdict.passed:
            return NOTHING  # wrong from the start: not a stale answer
        first = integrity.tensors_of(drawn[0].actual)
        if not any(t.numel() for t in first) or _poisoned(item):
            return NOTHING
        later = drawn[1]
        if bitwise_equal(first, integrity.tensors_of(later.actual)):
            return Findings(lead=(StaleResult(shape(later.inputs), True, later.verdict),))
        return NOTHING


class FreshDrawBitwise:
    """A large shape set's fresh-values check: the backend's answer on a second draw must not
    be the first call's answer bit for bit. Eager's inputs and result of the first draw are
    released first (every check that reads them has run: this one is the last check), so that
    the fresh inputs take their place in memory."""

    name = "fresh draw, bit for bit"

    def applies(self, item: ItemRun) -> bool:
        return item.judges_values and item.large_first

    def run(self, item: ItemRun) -> Findings:
        first = item.first_draw
        item.stage = "building the inputs"
        probe = _probe(first.inputs.tensors)
        first.inputs = first.expected = first.judged = None  # type: ignore[assignment]
        fresh = inputs.build(item.instance, 0, item.seed, item.device, draw=1)
        if bitwise_equal(probe, _probe(fresh.tensors)):
            return NOTHING  # the scenario's values do not change between draws
        compiled = item.compiled
        actual = item.backend_call(
            f"the call on shape set 0 (draw 1: fresh values, {shape(fresh)})",
            lambda: compiled(*fresh.tensors),
        )
        item.stage = "comparing the fresh draw with the first"
        if _poisoned(item):
            return NOTHING
        earlier = integrity.tensors_of(first.actual)
        if any(t.numel() for t in earlier) and bitwise_equal(earlier, integrity.tensors_of(actual)):
            return Findings(lead=(StaleResult(shape(fresh), True, None),))
        return NOTHING


def _poisoned(item: ItemRun) -> bool:
    """Two outputs full of the poison pattern (or two out= targets left as allocated) are equal:
    that is not a cache."""
    return any(isinstance(p, Unwritten | UnwrittenTarget) for p in item.problems)


def _probe(tensors: Any, elements: int = 4096) -> list[torch.Tensor]:
    """The first elements of each tensor: enough to tell two draws apart."""
    return [
        t.detach().reshape(-1)[:elements].clone()
        for t in tensors
        if isinstance(t, torch.Tensor) and t.is_contiguous()
    ]
