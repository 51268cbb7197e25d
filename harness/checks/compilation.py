"""What the compile and the first calls say about the backend: whether dynamo handed it the
program at all, its optional kernel statistics, and the recompile budget."""

from __future__ import annotations

from gemmconf.checks.base import NOTHING, Findings
from gemmconf.item import ItemRun, shape_text
from gemmconf.outcome import Recompiled
from gemmconf.scenario import ScenarioInstance


class Captured:
    """The program reached the backend: a frame dynamo ran eagerly is "not compiled", put
    first, since it explains whatever else went wrong."""

    name = "captured"

    def applies(self, item: ItemRun) -> bool:
        return True

    def run(self, item: ItemRun) -> Findings:
        return Findings(lead=item.not_compiled())


class KernelStats:
    """The compiled callable's optional `kernel_stats()` (launches, signatures), as metrics."""

    name = "kernel stats"

    def applies(self, item: ItemRun) -> bool:
        return getattr(item.compiled, "kernel_stats", None) is not None

    def run(self, item: ItemRun) -> Findings:
        return Findings(metrics=item.backend_raises("kernel_stats()", item.compiled.kernel_stats))


class Recompiles:
    """At most the scenario's compile budget (`compile_budget`) over its shape sets, beside the
    backward graphs compiled autograd handed the backend (their count is checked on its own:
    gemmconf.checks.compiled_autograd)."""

    name = "recompiles"

    def applies(self, item: ItemRun) -> bool:
        return True

    def run(self, item: ItemRun) -> Findings:
        instance, budget = item.instance, compile_budget(item.instance)
        if item.autograd is not None:
            watch = item.autograd
            budget += watch.captures if watch.compiles is None else watch.compiles
        if item.compiles <= budget:
            return NOTHING
        shape_sets = tuple(shape_text(s) for s in instance.shape_sets)
        problem = Recompiled(
            item.compiles, budget, shape_sets, instance.compile.mode, frames=item.graph_frames
        )
        return Findings(problems=(problem,))


def compile_budget(instance: ScenarioInstance) -> int:
    """Compiles allowed: the file's max_compiles, else 1 when dynamic, else one per shape set."""
    if instance.compile.max_compiles is not None:
        return instance.compile.max_compiles
    if instance.compile.mode != "static":
        return 1
    return len(set(instance.shape_sets))
