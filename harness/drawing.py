"""How many independent input draws one judgment takes, and when a failure is put to a vote.

Numeric verdicts are stable across `--seed`: each shape set is judged over enough independent
input draws that small outputs (a few elements, where eager's own error is a matter of luck) are
judged over at least `DRAW_ELEMENTS` elements, and a failing judgment is confirmed on
`CONFIRM_ROUNDS` further rounds of fresh draws: the shape set fails when most rounds fail. The
second draw of the first shape set is also the check that fresh values give a fresh answer. Only
marginal failures are put to the vote (`CONFIRM_BELOW`): a grossly wrong result fails at once.

The checks (gemmconf.checks) draw by these rules and gemmconf.memory counts what the draws hold.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gemmconf.oracle import Verdict
    from gemmconf.scenario import ScenarioInstance

DRAW_ELEMENTS = 64  # a judgment covers at least this many output elements (more draws if small)
MAX_DRAWS = 64  # draws per judgment, for a one-element output
CONFIRM_ROUNDS = 2  # further judgments over fresh draws when one fails; most decide
# A failure is confirmed only when marginal (err_ratio up to this many times the allowed ratio,
# NaN/Inf positions and attributes right): a grossly wrong result is a bug, whatever other draws do.
CONFIRM_BELOW = 10.0
# The second draw of shape set 0 (fresh values: no result caching) is judged in full below this
# many FLOPs; above it, only compared bit for bit with the first call's answer (a cache returns
# that answer; a fresh computation on other values does not), so the largest items do not pay
# for a second eager run and fp64 reference.
FULL_STALE_CHECK_FLOPS = 2**33


def draws_per_judgment(numel: int) -> int:
    """Independent draws one judgment takes so that it covers `DRAW_ELEMENTS` output elements."""
    if numel <= 0 or numel >= DRAW_ELEMENTS:
        return 1
    return min(MAX_DRAWS, math.ceil(DRAW_ELEMENTS / numel))


def large(instance: ScenarioInstance, dims: dict[str, int]) -> bool:
    """Past FULL_STALE_CHECK_FLOPS: the fresh-values check compares bit for bit only."""
    return instance.spec.flops(dims) > FULL_STALE_CHECK_FLOPS


def judgment_draws(instance: ScenarioInstance, index: int, dims: dict[str, int], numel: int) -> int:
    """Independent draws the first judgment of shape set `index` takes (`numel`: its output
    elements): enough to cover `DRAW_ELEMENTS`, and on shape set 0 below FULL_STALE_CHECK_FLOPS
    at least two, the second with fresh values (a backend must not answer with the first's
    result). Each draw's inputs and results live until the item ends (`memory.estimate`)."""
    draws = draws_per_judgment(numel)
    if index == 0 and not large(instance, dims):
        draws = max(draws, 2)
    return draws


def undecided(rounds: list[Verdict]) -> bool:
    """Whether more rounds are needed: the first failed, and neither side has a majority of
    1 + CONFIRM_ROUNDS yet."""
    if rounds[0].passed:
        return False
    total = 1 + CONFIRM_ROUNDS
    failed = sum(1 for v in rounds if not v.passed)
    return failed * 2 <= total and (len(rounds) - failed) * 2 <= total


def marginal(verdict: Verdict) -> bool:
    """A failure that further draws may not confirm: values off by a small factor only."""
    if any(not c.passed and c.name != "values" for c in verdict.checks):
        return False
    failed = [p for p in (verdict.parts or (verdict,)) if not p.passed]
    return all(
        p.err_ratio is not None and p.err_ratio <= CONFIRM_BELOW * (p.max_ratio or 1.0)
        for p in failed
    )
