"""How long an item may take: `--item-timeout`, `--first-result-timeout` and the scaled defaults.

Under ``auto`` each phase of an item (`gemmconf.progress`: prepare, compile, call, check,
benchmark) has its own budget, counted from when the worker reports entering it: the time to
first result (compile, autotune, JIT and the first call) apart from the run, with defaults that
an autotuning library fits in. Before the worker reports a phase, the item's whole scaled
timeout applies (`TimeoutPolicy.seconds`), as it did before phases were reported. A fixed
``--item-timeout`` is one wall-clock limit for the whole item.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gemmconf.checks import compile_budget
from gemmconf.scenario import ScenarioInstance, eval_dim

# The scaled default timeout (TimeoutPolicy): generous, since a false "timed out" costs more than
# a late one, and far above what items take (BENCHMARKS.md, "Harness figures"); a hang is still
# caught within a couple of minutes.
BASE_S = 60.0  # inputs, eager, one compile, the oracle


BENCH_S = 60.0  # --benchmark: input copies, warm-up and two do_bench runs


PER_SHAPE_SET_S = 20.0  # each further shape set may compile again


COLD_S = 300.0  # first item of a backend in a fresh worker: imports, toolchains, autotuning


FLOPS_PER_S = {"cpu": 5e7, "cuda": 5e10}  # pessimistic rates (interpreted Triton on a CPU)


PACE_FACTOR = 10.0  # and never under 10x the slowest item this backend has finished here


# Time to first result (compile, autotune, JIT and the first call), beyond the item's size term
# and the backend's own `compile_timeout_s`: a plain compiler, and a backend that declares
# `autotunes = True` (its first call of a new shape times candidate kernels; an H100 run of an
# autotuning library failed 60 s timeouts while it tuned).
FIRST_RESULT_S = 180.0


AUTOTUNE_FIRST_RESULT_S = 600.0


ELEMENTS_PER_S = 2e7  # input elements drawn, converted and moved per second (on the CPU)
# The checks' passes over the inputs (fp64 copies, host copies for the input guard, a fresh
# draw): an H100 item of 533M input elements spent over 100 s checking (2026-11-23)
CHECK_PASSES = 4


@dataclass(frozen=True)
class TimeoutPolicy:
    """The seconds an item may take. `fixed` is ``--item-timeout`` (0: no timeout); None scales
    the timeout to the item (`scaled_timeout`) and budgets each phase (`phase_seconds`).
    `first_result` is ``--first-result-timeout`` (0: none; None: the default)."""

    fixed: float | None = None
    first_result: float | None = None

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

    def phase_seconds(
        self,
        phase: str,
        instance: ScenarioInstance,
        device: str,
        *,
        cold: bool,
        compile_s: float = 0.0,
        autotunes: bool = False,
        slowest: float = 0.0,
    ) -> float | None:
        """The budget of one phase under ``auto`` (None: no limit), counted from its start.
        `slowest`: the longest this phase took for this backend so far (a slow backend's own
        pace raises its budget). Under a fixed timeout: the fixed one (for the whole item)."""
        if self.fixed is not None:
            return self.fixed or None
        size = item_flops(instance) / FLOPS_PER_S.get(device, FLOPS_PER_S["cpu"])
        if phase == "prepare":
            seconds = BASE_S + 2 * input_elements(instance) / ELEMENTS_PER_S + size
        elif phase in ("compile", "call"):
            first = self.first_result_seconds(
                cold=cold and phase == "compile", compile_s=compile_s, autotunes=autotunes
            )
            if first is None:
                return None
            seconds = first + size
        elif phase == "check":  # fp64 upcasts, host copies of inputs and fresh draws
            seconds = BASE_S + size + CHECK_PASSES * input_elements(instance) / ELEMENTS_PER_S
        elif phase == "benchmark":
            seconds = BENCH_S + size
        else:  # "start", or a phase this policy does not know: the whole item's timeout
            return self.seconds(instance, device, cold=cold, slowest=slowest, compile_s=compile_s)
        return round(max(seconds, PACE_FACTOR * slowest), 1)

    def first_result_seconds(
        self, *, cold: bool, compile_s: float = 0.0, autotunes: bool = False
    ) -> float | None:
        """Time to first result: ``--first-result-timeout``, else the default for the backend
        (autotuning or not) plus its `compile_timeout_s`, plus a cold worker's start."""
        if self.first_result is not None:
            return self.first_result or None
        base = AUTOTUNE_FIRST_RESULT_S if autotunes else FIRST_RESULT_S
        return base + max(compile_s, 0.0) + (COLD_S if cold else 0.0)

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


def parse_first_result(text: str, policy: TimeoutPolicy) -> TimeoutPolicy:
    """`policy` with ``--first-result-timeout`` (``auto`` or seconds >= 0; 0: none)."""
    if text.strip().lower() == "auto":
        return policy
    parsed = parse_timeout(text)
    return TimeoutPolicy(fixed=policy.fixed, first_result=parsed.fixed)


def input_elements(instance: ScenarioInstance) -> int:
    """Elements of the operands over the shape sets (inputs are drawn on the CPU)."""
    total = 0
    for shape_set in instance.shape_sets:
        dims = dict(shape_set)
        for operand in instance.operands:
            elements = 1
            for expr in operand.shape:
                elements *= max(eval_dim(expr, dims), 0)
            total += elements
    return total


def item_flops(instance: ScenarioInstance) -> int:
    """The op's FLOPs summed over the shape sets: the size term of the timeout."""
    flops = instance.spec.flops
    return sum(flops(dict(shape_set)) for shape_set in instance.shape_sets)


def scaled_timeout(instance: ScenarioInstance, device: str, *, cold: bool) -> float:
    """Base + per extra shape set + the item's FLOPs at a pessimistic rate (+ a cold start)."""
    rate = FLOPS_PER_S.get(device, FLOPS_PER_S["cpu"])
    seconds = (
        BASE_S + PER_SHAPE_SET_S * (len(instance.shape_sets) - 1) + item_flops(instance) / rate
    )
    return round(seconds + (COLD_S if cold else 0.0), 1)
