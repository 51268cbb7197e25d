"""How often gemmconf.drawing's rule fails a shape set, by where its error sits against the bar.

Log-normal rounds (a median as a multiple of the bar, a spread in log(err_ratio)), each shape
set decided as `values` decides it: the first round alone far from the bar, then further rounds
one at a time through `drawing.sequential` until it decides. Prints, per cell, the share
failed and the rounds taken (the first included).

    python tools/verdict_rates.py at-bar [--sets 100000]
        At a median at the bar: the false fails (the rule's bound: drawing.FAIL_RATE).
    python tools/verdict_rates.py power [--sets 4000]
        At medians of 0.8 to 4 times the bar: how far above it a failure is reliable.
    python tools/verdict_rates.py tail [--sets 4000]
        Rounds at a median near the bar (spread 0.1) with a share of them far below it (0.3
        times the bar): how often such a shape set is labelled passed, borderline or failed.
    --drawing PATH: another tree's harness/drawing.py (git show REV:harness/drawing.py > PATH),
        to compare rules on the same rounds (the same --seed).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import random
from types import ModuleType

SPREADS = (0.1, 0.2, 0.4, 0.6)
MEDIANS = (0.8, 1.1, 1.25, 1.35, 1.5, 1.7, 2.0, 2.5, 4.0)


def _rule(path: str | None) -> ModuleType:
    if path is None:
        from gemmconf import drawing

        return drawing
    spec = importlib.util.spec_from_file_location("drawing_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TAILS = ((1.1, 0.2), (1.1, 0.3), (1.0, 0.3), (0.9, 0.3))  # (median, share of low rounds)
LOW = 0.3  # where a tail's rounds sit, times the bar


def decided(
    rule: ModuleType, median: float, spread: float, rng: random.Random, tail: float = 0.0
) -> tuple[str, int]:
    """One shape set's decision and its rounds (a `tail` share of them at LOW times the bar)."""
    ratios: list[float] = []
    while True:
        centre = LOW if tail and rng.random() < tail else median
        ratios.append(centre * math.exp(rng.gauss(0.0, spread)))
        if ratios[0] > rule.CONFIRM_BELOW:
            return rule.FAILED, 1  # a gross first round fails alone
        decision = rule.sequential(ratios)
        if decision is not None:
            return decision, len(ratios)


def cell(rule: ModuleType, median: float, spread: float, sets: int, seed: int) -> str:
    rng = random.Random(seed)
    found = [decided(rule, median, spread, rng) for _ in range(sets)]
    failed = sum(1 for d, _ in found if d == rule.FAILED)
    rounds = sum(n for _, n in found) / sets
    return f"{100 * failed / sets:.3f}% failed ({failed}/{sets}), {rounds:.1f} rounds"


def tail_cell(rule: ModuleType, median: float, tail: float, sets: int, seed: int) -> str:
    rng = random.Random(seed)
    found = [decided(rule, median, 0.1, rng, tail) for _ in range(sets)]
    shares = ", ".join(
        f"{name} {100 * sum(1 for d, _ in found if d == name) / sets:.0f}%"
        for name in (rule.PASSED, rule.BORDERLINE, rule.FAILED)
    )
    return f"{shares}, {sum(n for _, n in found) / sets:.1f} rounds"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("at-bar", "power", "tail"))
    parser.add_argument("--sets", type=int, help="shape sets per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--drawing", help="a harness/drawing.py to use instead of gemmconf's")
    args = parser.parse_args()
    rule = _rule(args.drawing)
    if args.mode == "tail":
        for median, tail in TAILS:
            text = tail_cell(rule, median, tail, args.sets or 4_000, args.seed)
            print(f"median {median} x bar, {tail:.0%} of rounds at {LOW} x: {text}", flush=True)
        return
    medians = (1.0,) if args.mode == "at-bar" else MEDIANS
    sets = args.sets or (100_000 if args.mode == "at-bar" else 4_000)
    for median in medians:
        for spread in SPREADS:
            text = cell(rule, median, spread, sets, args.seed)
            print(f"median {median} x bar, spread {spread}: {text}", flush=True)


if __name__ == "__main__":
    main()
