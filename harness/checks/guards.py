"""The call guards: what watches every call of the backend, the first call of each shape set
and every further draw alike (`ItemRun.call`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gemmconf import integrity, kinds
from gemmconf.item import EagerAnswer, ItemRun
from gemmconf.outcome import InputsModified, Problem, Unwritten


class InputsUntouched:
    """The call leaves its inputs as they were, bytes outside the views included (`out=`
    targets are the op's to write)."""

    name = "inputs untouched"

    def watch(self, item: ItemRun, tensors: Sequence[Any], eager: EagerAnswer) -> _InputsWatch:
        writes = item.instance.spec.writes
        guarded = [(n, t) for n, t in zip(item.names(), tensors, strict=True) if n not in writes]
        return _InputsWatch(
            item, integrity.InputGuard([n for n, _ in guarded], [t for _, t in guarded])
        )


class _InputsWatch:
    def __init__(self, item: ItemRun, guard: integrity.InputGuard):
        self.item, self.guard = item, guard

    def __enter__(self) -> _InputsWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def problems(self, actual: Any) -> list[Problem]:
        self.item.stage = "checking the inputs after the call"
        return [
            InputsModified(
                m.name, _shape_of(m.shape), m.count, m.numel, m.first_index, m.before, m.after
            )
            for m in self.guard.modified()
        ]


class OutputsWritten:
    """Every output element is written: fresh memory is poisoned during the call, and an
    element that still holds the pattern afterwards was never written (gemmconf.integrity)."""

    name = "outputs written"

    def watch(self, item: ItemRun, tensors: Sequence[Any], eager: EagerAnswer) -> _PoisonWatch:
        like = eager.result
        poison = integrity.Poison(item.device, integrity.nbytes_of(like), enabled=item.poison)
        return _PoisonWatch(item, poison, like, tensors)


class _PoisonWatch:
    def __init__(
        self, item: ItemRun, poison: integrity.Poison, like: Any, tensors: Sequence[Any] = ()
    ):
        self.item, self.poison, self.like, self.tensors = item, poison, like, tensors

    def __enter__(self) -> _PoisonWatch:
        self.poison.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.poison.__exit__(*exc)

    def problems(self, actual: Any) -> list[Problem]:
        if not self.item.poison:
            return []
        self.item.stage = "looking for unwritten outputs"
        return [
            Unwritten(self.item.shape_index, f.output, f.count, f.numel, f.first_index)
            for f in integrity.unwritten(self.like, actual, self.poison.patterns, self._again)
        ]

    def _again(self) -> tuple[Any, tuple[int, ...]]:
        """The same call once more under the second fill pattern: a one-byte element that holds
        a pattern after both calls was never written (gemmconf.integrity.unwritten)."""
        item, compiled, tensors = self.item, self.item.compiled, self.tensors
        sizes = integrity.nbytes_of(self.like)
        second = integrity.Poison(item.device, sizes, fill=integrity.SECOND_FILL)
        with second:
            actual = item.backend_raises(
                f"the call on shape set {item.shape_index} made again under a second fill "
                "pattern (to tell unwritten one-byte elements from written ones)",
                lambda: compiled(*tensors),
            )
        item.stage = "looking for unwritten outputs"
        return actual, second.patterns


@dataclass(frozen=True)
class UnwrittenTarget:
    """Elements of an `out=` target the call left as the harness allocated them (NaN-filled:
    gemmconf.inputs), where eager wrote them."""

    name: str
    shape_set: int
    count: int
    numel: int
    first_index: tuple[int, ...]
    fill: float  # what the first such element held before the call (and still holds)
    kind = kinds.WRONG_VALUES

    def describe(self) -> str:
        held = "NaN" if math.isnan(self.fill) else repr(self.fill)
        every = "all" if self.count == self.numel else f"{self.count} of"
        return (
            f"Unwritten out= target: {every} {self.numel} elements of {self.name} on shape set "
            f"{self.shape_set} still hold the {held} the harness filled the target with before "
            f"the call (first at index {self.first_index}); the call never wrote them, where "
            f"eager writes its result into {self.name}."
        )


class TargetsWritten:
    """An `out=` call writes its whole target: an element that still holds, bit for bit, what
    the harness filled the target with (NaN) where eager wrote another value was never written.
    Without this, such a target reads as wrong numbers: NaN positions that differ, or, in
    float32, a result whose every value "is a bf16 value" (NaN's float32 bits end in 16 zero
    bits)."""

    name = "out= targets written"

    def watch(self, item: ItemRun, tensors: Sequence[Any], eager: EagerAnswer) -> _TargetWatch:
        writes = item.instance.spec.writes
        targets = [
            (n, t)
            for n, t in zip(item.names(), tensors, strict=True)
            if n in writes and isinstance(t, torch.Tensor) and t.numel()
        ]
        return _TargetWatch(item, targets, eager.result)


class _TargetWatch:
    def __init__(self, item: ItemRun, targets: list[tuple[str, torch.Tensor]], like: Any):
        self.item, self.targets, self.like = item, targets, like
        # the targets' values before the call (an output's size each; none for most ops)
        self.before = [t.detach().clone() for _, t in targets]

    def __enter__(self) -> _TargetWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def problems(self, actual: Any) -> list[Problem]:
        found: list[Problem] = []
        eager = self.like if isinstance(self.like, torch.Tensor) else None
        for (name, target), before in zip(self.targets, self.before, strict=True):
            if target.shape != before.shape or target.dtype != before.dtype:
                continue  # resized by the call: nothing of it is left as allocated
            self.item.stage = f"looking for unwritten elements of the out= target {name}"
            left = _same_bits(target, before)
            if eager is not None and eager.shape == before.shape and eager.dtype == before.dtype:
                left &= ~_same_bits(eager.to(before.device), before)  # eager wrote another value
            count = int(left.sum())
            if count:
                first = tuple(int(i) for i in left.nonzero()[0])
                fill = float(before[first].float()) if before.dim() else float(before.float())
                shape = self.item.shape_index
                found.append(UnwrittenTarget(name, shape, count, target.numel(), first, fill))
        return found


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per element: whether `a` and `b` hold the same bits (NaN's included)."""
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return a.detach().contiguous().view(width) == b.detach().contiguous().view(width)


def _shape_of(shape: tuple[int, ...]) -> str:
    return "x".join(str(s) for s in shape) or "scalar"
