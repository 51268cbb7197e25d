"""How long an item may take: `--item-timeout` and the scaled default."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gemmconf.gemm.ops import OPS
from gemmconf.runner import compile_budget
from gemmconf.scenario import ScenarioInstance

# The scaled default timeout (TimeoutPolicy): generous, since a false "timed out" costs more than
# a late one, and far above what items take (BENCHMARKS.md, "Harness figures"); a hang is still
# caught within a couple of minutes.
BASE_S = 60.0  # inputs, eager, one compile, the oracle


BENCH_S = 60.0  # --benchmark: input copies, warm-up and two do_bench runs


PER_SHAPE_SET_S = 20.0  # each further shape set may compile again


COLD_S = 300.0  # first item of a backend in a fresh worker: imports, toolchains, autotuning


FLOPS_PER_S = {"cpu": 5e7, "cuda": 5e10}  # pessimistic rates (interpreted Triton on a CPU)


PACE_FACTOR = 10.0  # and never under 10x the slowest item this backend has finished here


@dataclass(frozen=True)
class TimeoutPolicy:
    """The seconds an item may take. `fixed` is ``--item-timeout`` (0: no timeout); None scales
    the timeout to the item (`scaled_timeout`)."""

    fixed: float | None = None

    def seconds(
        self,
        instance: ScenarioInstance,
        device: str,
        *,
        cold: bool,
        slowest: float = 0.0,
        compile_s: float = 0.0,
    ) -> float | None:
        """`slowest`: the longest item of this backend so far (slow backends such as
        max-autotune get a longer default, learnt from their own pace). `compile_s`: what the
        backend says one compile may take (`compile_timeout_s`), added per compile allowed."""
        if self.fixed is not None:
            return self.fixed or None
        scaled = scaled_timeout(instance, device, cold=cold)
        scaled += round(max(compile_s, 0.0) * compile_budget(instance), 1)
        return max(scaled, round(PACE_FACTOR * slowest, 1))

    def describe(self) -> str:
        if self.fixed is None:
            return "auto"
        return "none" if not self.fixed else f"{self.fixed:g}"


def parse_timeout(text: str) -> TimeoutPolicy:
    """``auto`` or a number of seconds >= 0 (0: none); ValueError says what is wrong."""
    if text.strip().lower() == "auto":
        return TimeoutPolicy()
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(
            f"expected a number of seconds >= 0 (0: no timeout) or 'auto', got {text!r}"
        )
    return TimeoutPolicy(fixed=seconds)


def item_flops(instance: ScenarioInstance) -> int:
    """The op's FLOPs summed over the shape sets: the size term of the timeout."""
    flops = OPS[instance.op].flops
    return sum(flops(dict(shape_set)) for shape_set in instance.shape_sets)


def scaled_timeout(instance: ScenarioInstance, device: str, *, cold: bool) -> float:
    """Base + per extra shape set + the item's FLOPs at a pessimistic rate (+ a cold start)."""
    rate = FLOPS_PER_S.get(device, FLOPS_PER_S["cpu"])
    seconds = (
        BASE_S + PER_SHAPE_SET_S * (len(instance.shape_sets) - 1) + item_flops(instance) / rate
    )
    return round(seconds + (COLD_S if cold else 0.0), 1)
