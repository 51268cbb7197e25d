"""The values: each shape set's result judged against eager and the fp64 reference
(gemmconf.oracle), over as many independent draws as gemmconf.drawing asks, a judgment near its
bar decided by further rounds of fresh draws (a sequential test; borderline when they leave it
undecided). Output attributes, strides and NaN/Inf positions are part of each judgment."""

from __future__ import annotations

import dataclasses
import math
import statistics
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
        tally = _Tally()
        verdicts = []
        metrics: dict[str, Any] = {}
        if item.judges_values:
            for index in range(len(item.draws)):
                verdicts.append(_judge_shape_set(item, index, found, tally))
            metrics.update(tally.metrics())
            sqnr = [d[0].sqnr for d in item.draws if d[0].sqnr is not None]
            if sqnr:
                metrics["sqnr_db"] = min(sqnr)  # block-scaled results (gemmconf.emulation)
        metrics.update(verdict_metrics(verdicts))
        if item.stand_in is not None:
            metrics["eager_emulated"] = 1  # eager had no kernel: judged against fp64 alone
        return Findings(
            problems=tuple(found), metrics=metrics, verdicts=tuple(verdicts), notes=tally.notes
        )


@dataclasses.dataclass
class _Tally:
    """What the item's judgments add up to, over its shape sets (metrics, borderline notes)."""

    draws: int = 0
    draws_failed: int = 0
    rounds: int = 0  # the most rounds one shape set took
    ratios: tuple[float, ...] = ()  # that shape set's err_ratio per round, where it took more
    borderline: int = 0
    notes: tuple[str, ...] = ()

    def add(self, rounds: list[oracle.Verdict]) -> None:
        if len(rounds) > self.rounds:
            self.rounds = len(rounds)
            ratios = [v.err_ratio for v in rounds]
            self.ratios = tuple(r for r in ratios if r is not None) if len(rounds) > 1 else ()

    def metrics(self) -> dict[str, Any]:
        metrics: dict[str, Any] = {
            "draws": self.draws,
            "draws_failed": self.draws_failed,
            "rounds": self.rounds,
        }
        if self.ratios:
            metrics["err_ratio_rounds"] = [float(f"{r:.4g}") for r in self.ratios]
        if self.borderline:
            metrics["borderline"] = self.borderline
        return metrics


def _judge_shape_set(
    item: ItemRun, index: int, found: list[Problem], tally: _Tally
) -> oracle.Verdict:
    """Shape set `index` judged over its draws, and near its bar over further rounds of fresh
    draws until the sequential test decides (gemmconf.drawing); a NumericFailure in `found` when
    it fails, with what further draws' calls found that is new."""
    item.require_pristine(f"after the backend's calls, before judging shape set {index}", ours=True)
    drawn = item.draws[index]
    numel = sum(t.numel() for t in integrity.tensors_of(drawn[0].expected))
    per_judgment = drawing.judgment_draws(item.instance, index, drawn[0].inputs.dims, numel)

    def more(confirming: bool = False) -> Draw:
        counter = next_draw[confirming]
        draw, problems = item.draw(index, counter, confirming=confirming)
        next_draw[confirming] += 1
        # one finding of a kind is enough: the first draw's already says it
        kinds_seen = {type(q) for q in (*item.problems, *found)}
        found.extend(p for p in problems if type(p) not in kinds_seen)
        return draw

    next_draw = [len(drawn), 0]  # the run seed's next draw, the confirmation stream's
    while len(_kept(drawn)) < per_judgment:
        drawn.append(more())
    rounds = [_judge(item, drawn)]
    draws, draws_failed = len(_kept(drawn)), _failed(drawn)
    decided = drawing.decision(rounds)
    while decided is None:
        # the rounds that decide: the item's confirmation draws, the same whatever --seed
        batch = [more(confirming=True) for _ in range(per_judgment)]
        rounds.append(_judge(item, batch))
        draws, draws_failed = draws + len(batch), draws_failed + _failed(batch)
        del batch  # judged: its tensors are not needed again (one round's draws held at a time)
        decided = drawing.decision(rounds)
    tally.draws += draws
    tally.draws_failed += draws_failed
    tally.add(rounds)
    failed_rounds = [v for v in rounds if not v.passed]
    if decided == drawing.FAILED:
        gross = [v for v in failed_rounds if not drawing.marginal(v)]
        deciding = (gross or failed_rounds)[0]
        found.append(
            NumericFailure(
                index,
                shape(drawn[0].inputs),
                drawn[0].inputs.describe(),
                deciding,
                draws=draws,
                draws_failed=draws_failed,
                rounds=len(rounds),
                rounds_failed=len(failed_rounds),
                ratios=tuple(v.err_ratio for v in rounds if v.err_ratio is not None),
            )
        )
        return deciding
    if decided == drawing.BORDERLINE:
        tally.borderline += 1
        tally.notes += (_borderline_note(index, shape(drawn[0].inputs), rounds),)
    return where_it_sits(rounds)


def where_it_sits(rounds: list[oracle.Verdict]) -> oracle.Verdict:
    """The verdict that stands for a shape set that passed: its one round, or near the bar
    (borderline, or stopped early as passed) the round at the median, where the error sits,
    which may be a little over the bar (borderline; an early pass needs the further rounds'
    median below it, `drawing.sequential`). Its first passing round had been the item's err_ratio:
    half the bar where 17 of 33 rounds were over it (a FlagGems trial, 2026-12-02: `report
    diff`'s closest passes and the page showed it far from its bar)."""
    if len(rounds) == 1:
        return rounds[0]
    ratios = [drawing.ratio_to_bar(v) or 0.0 for v in rounds]
    order = sorted(range(len(rounds)), key=ratios.__getitem__)
    return rounds[order[(len(order) - 1) // 2]]


def _kept(drawn: list[Draw]) -> list[Draw]:
    """The draws whose results were judged as the backend returned them (`Draw.overwritten`);
    all of them where none was (a backend whose results all read later values)."""
    return [d for d in drawn if not d.overwritten] or drawn


def _failed(drawn: list[Draw]) -> int:
    """Draws whose own judgment failed."""
    return sum(1 for d in drawn if d.verdict is not None and not d.verdict.passed)


def _borderline_note(index: int, shape_text: str, rounds: list[oracle.Verdict]) -> str:
    """The words for a shape set left undecided: where its error sits against the bar."""
    ratios = sorted(v.err_ratio for v in rounds if v.err_ratio is not None) or [math.nan]
    bar = min((v.max_ratio for v in rounds if v.max_ratio is not None), default=math.nan)
    over = sum(1 for v in rounds if not v.passed)
    return (
        f"Borderline: shape set {index} ({shape_text}) passes with its error at the bar: over "
        f"{len(rounds)} judgments on fresh draws its err_ratio was {ratios[0]:.3g} to "
        f"{ratios[-1]:.3g} (median {statistics.median(ratios):.3g}, {over} over the bar of "
        f"{bar:.3g}), too close to the bar for these rounds to tell it above or below "
        "(gemmconf.drawing: a failure needs evidence at a 0.1% error rate; metrics.borderline, "
        "metrics.err_ratio_rounds)."
    )


def _judge(item: ItemRun, drawn: list[Draw]) -> oracle.Verdict:
    """One judgment over draws: each draw's own (attributes, strides), then, for small
    outputs, all values pooled as one output, so that a few elements per draw add up to
    many; a large output's draws are judged each on its own. Overwritten draws are left out."""
    drawn = _kept(drawn)
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
