"""The call guards: what watches every call of the backend, the first call of each shape set
and every further draw alike (`ItemRun.call`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gemmconf import integrity
from gemmconf.item import ItemRun
from gemmconf.outcome import InputsModified, Problem, Unwritten


class InputsUntouched:
    """The call leaves its inputs as they were, bytes outside the views included (`out=`
    targets are the op's to write)."""

    name = "inputs untouched"

    def watch(self, item: ItemRun, tensors: Sequence[Any], like: Any) -> _InputsWatch:
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

    def watch(self, item: ItemRun, tensors: Sequence[Any], like: Any) -> _PoisonWatch:
        poison = integrity.Poison(item.device, integrity.nbytes_of(like), enabled=item.poison)
        return _PoisonWatch(item, poison, like)


class _PoisonWatch:
    def __init__(self, item: ItemRun, poison: integrity.Poison, like: Any):
        self.item, self.poison, self.like = item, poison, like

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
            for f in integrity.unwritten(self.like, actual, self.poison.patterns)
        ]


def _shape_of(shape: tuple[int, ...]) -> str:
    return "x".join(str(s) for s in shape) or "scalar"
