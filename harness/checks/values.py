"""The values: each shape set's result judged against eager and the fp64 reference
(gemmconf.oracle), over as many independent draws as gemmconf.drawing asks, a marginal failure
put to a vote of further rounds. Output attributes, strides and NaN/Inf positions are part of
each judgment."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from gemmconf import drawing, integrity, oracle
from gemmconf.checks.base import Findings
from gemmconf.item import Draw, ItemRun, Judged, output_names, shape
from gemmconf.outcome import NumericFailure, Problem


class Values:
    name = "values"

    def applies(self, item: ItemRun) -> bool:
        return True  # the item's error metrics are written (as None) even when not judged

    def run(self, item: ItemRun) -> Findings:
        found: list[Problem] = []
        counts = {"draws": 0, "draws_failed": 0}
        verdicts = []
        metrics: dict[str, Any] = {}
        if item.judges_values:
            for index in range(len(item.draws)):
                verdicts.append(_judge_shape_set(item, index, found, counts))
            metrics.update(counts)
            sqnr = [d[0].sqnr for d in item.draws if d[0].sqnr is not None]
            if sqnr:
                metrics["sqnr_db"] = min(sqnr)  # block-scaled results (gemmconf.emulation)
        metrics.update(verdict_metrics(verdicts))
        if item.stand_in is not None:
            metrics["eager_emulated"] = 1  # eager had no kernel: judged against fp64 alone
        return Findings(problems=tuple(found), metrics=metrics, verdicts=tuple(verdicts))


def _judge_shape_set(
    item: ItemRun, index: int, found: list[Problem], counts: dict[str, int]
) -> oracle.Verdict:
    """Shape set `index` judged over its draws (more drawn as the rules ask); a NumericFailure
    in `found` when most rounds fail, with what further draws' calls found that is new."""
    item.require_pristine(f"after the backend's calls, before judging shape set {index}", ours=True)
    drawn = item.draws[index]
    numel = sum(t.numel() for t in integrity.tensors_of(drawn[0].expected))
    per_judgment = drawing.judgment_draws(item.instance, index, drawn[0].inputs.dims, numel)

    def more() -> Draw:
        draw, problems = item.draw(index, next_draw[0])
        next_draw[0] += 1
        # one finding of a kind is enough: the first draw's already says it
        kinds_seen = {type(q) for q in (*item.problems, *found)}
        found.extend(p for p in problems if type(p) not in kinds_seen)
        return draw

    next_draw = [len(drawn)]
    while len(drawn) < per_judgment:
        drawn.append(more())
    first = _judge(item, drawn)
    rounds = [first]
    while drawing.marginal(first) and drawing.undecided(rounds):
        batch = [more() for _ in range(per_judgment)]
        rounds.append(_judge(item, batch))
        drawn = [*drawn, *batch]
    failed_rounds = [v for v in rounds if not v.passed]
    draws_failed = sum(1 for d in drawn if d.verdict is not None and not d.verdict.passed)
    counts["draws"] += len(drawn)
    counts["draws_failed"] += draws_failed
    if len(failed_rounds) * 2 > len(rounds):
        deciding = failed_rounds[0]
        found.append(
            NumericFailure(
                index,
                shape(drawn[0].inputs),
                drawn[0].inputs.describe(),
                deciding,
                draws=len(drawn),
                draws_failed=draws_failed,
                rounds=len(rounds),
                rounds_failed=len(failed_rounds),
            )
        )
        return deciding
    return first if first.passed else next(v for v in rounds if v.passed)


def _judge(item: ItemRun, drawn: list[Draw]) -> oracle.Verdict:
    """One judgment over draws: each draw's own (attributes, strides), then, for small
    outputs, all values pooled as one output, so that a few elements per draw add up to
    many; a large output's draws are judged each on its own."""
    numel = sum(t.numel() for t in integrity.tensors_of(drawn[0].expected))
    verdicts = []
    for draw in drawn:
        if draw.verdict is None:
            draw.verdict = item.judge_one(draw)
            if numel >= drawing.DRAW_ELEMENTS:
                draw.judged = None  # judged on its own: its fp64 tensors are not needed again
        verdicts.append(draw.verdict)
    attributes_failed = [v for v in verdicts if v.attributes_failed]
    if attributes_failed:
        return attributes_failed[0]
    if len(drawn) == 1 or numel >= drawing.DRAW_ELEMENTS:
        failed = [v for v in verdicts if not v.passed]
        return failed[0] if failed else max(verdicts, key=lambda v: v.err_ratio or 0.0)
    item.stage = "judging the pooled draws"
    parts = [item.judgment_inputs(d) for d in drawn]
    pooled = Judged(
        *(_stack([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(Judged))
    )
    return oracle.judge(
        pooled.expected,
        pooled.actual,
        pooled.reference,
        k=drawn[0].inputs.k,
        policy=item.policy(drawn[0].expected),
        magnitude=pooled.magnitude,
        rounding=pooled.rounding,
        intermediate=pooled.intermediate,
        names=output_names(item.instance),
        k_name=drawn[0].inputs.k_name,
    )


def _stack(values: list[Any]) -> Any:
    """Draws of one result stacked along a new leading dimension (leaf by leaf)."""
    first = values[0]
    if first is None:
        return None
    if isinstance(first, torch.Tensor):
        return torch.stack([v.to(first.device) for v in values])
    if isinstance(first, tuple | list):
        return type(first)(_stack([v[i] for v in values]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _stack([v[k] for v in values]) for k in first}
    return first


def verdict_metrics(verdicts: list[oracle.Verdict]) -> dict[str, Any]:
    """An item's error metrics: the worst of its judgments, and the bar err_ratio was held to."""

    def worst(attr: str) -> float | None:
        values = [getattr(v, attr) for v in verdicts if getattr(v, attr) is not None]
        return max(values) if values else None

    metrics = {
        "max_abs_err": worst("max_abs_err"),
        "max_rel_err": worst("max_rel_err"),
        "err_ratio": worst("err_ratio"),
    }
    bars = [v.max_ratio for v in verdicts if v.err_ratio is not None and v.max_ratio is not None]
    if bars:
        metrics["max_ratio"] = min(bars)  # the bar err_ratio was held to
    eager_wrong = sum(v.eager_wrong for v in verdicts)
    if eager_wrong:
        metrics["eager_wrong"] = eager_wrong  # eager NaN/Inf elements fp64 refuted (oracle.py)
    return metrics
