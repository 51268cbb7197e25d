"""A backward under compiled autograd (`compiled_autograd:`): the backward graphs it captured and
the compiles of them, over every call of the item so far, against the counts the seed asserts.

The runner turns compiled autograd on around the backend's compile and calls
(`gemmconf.backends.dynamo.compiled_autograd`); a torch.compile backend then computes the
gradients in the graph compiled autograd captured and handed to it. A backend that never goes
through torch.compile (eager, an aten-override library) has nothing for compiled autograd to
capture: the item says so in a note and is judged by its values alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from gemmconf import kinds
from gemmconf.checks.base import Findings
from gemmconf.item import ItemRun

NOT_THROUGH_DYNAMO_NOTE = (
    "Compiled autograd: the scenario runs its backward under compiled autograd, which applies to "
    "torch.compile backends only; this backend never went through torch.compile, so its "
    "autograd computed the gradients and no capture or compile count was checked."
)


@dataclass(frozen=True)
class AutogradCounts:
    """Compiled autograd captured or compiled another number of backward graphs than the
    scenario (the seed) expects."""

    captures: int
    expected_captures: int | None
    compiles: int | None
    expected_compiles: int | None
    kind = kinds.CODE_CHECK

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        counts = [f"{self.captures} backward graph(s) captured"]
        if self.expected_captures is not None:
            counts[0] += f" (expected {self.expected_captures})"
        if self.compiles is not None:
            compiled = f"{self.compiles} compiled for the backend"
            if self.expected_compiles is not None:
                compiled += f" (expected {self.expected_compiles})"
            counts.append(compiled)
        why = (
            "the backward ran outside compiled autograd (the backend's torch.compile was made or "
            "called with compiled autograd off, or the gradients came from elsewhere)"
            if self.captures == 0
            else "compiled autograd's counters over the item's calls"
        )
        return f"Compiled autograd counts: {', '.join(counts)}: {why}."


class CompiledAutogradCounts:
    """The captures and compiles compiled autograd counted, against `compiled_autograd:`'s."""

    name = "compiled autograd"

    def applies(self, item: ItemRun) -> bool:
        return item.autograd is not None

    def run(self, item: ItemRun) -> Findings:
        watch, spec = item.autograd, item.instance.compiled_autograd
        assert watch is not None and spec is not None  # applies() says so
        metrics = {"autograd_captures": watch.captures}
        if watch.compiles is not None:
            metrics["autograd_compiles"] = watch.compiles
        if not item.frames.frames:
            return Findings(metrics=metrics, notes=(NOT_THROUGH_DYNAMO_NOTE,))
        wrong = spec.captures is not None and watch.captures != spec.captures
        wrong |= (
            spec.compiles is not None
            and watch.compiles is not None
            and watch.compiles != spec.compiles
        )
        if not wrong:
            return Findings(metrics=metrics)
        problem = AutogradCounts(watch.captures, spec.captures, watch.compiles, spec.compiles)
        return Findings(problems=(problem,), metrics=metrics)
