"""A call guard: no result shares memory with an input the op does not write (`out=` targets
are the op's to return). Eager's GEMMs return tensors of their own, so a caller that writes into
a result must not change its inputs.

Found by an outside trial (reports/published/2026-12-01-dev-cpu-tvm-trial): TVM's relax backend
returned the input C itself for `addmm` with alpha=0 and beta=1. Its values were right, so the
items passed, with "computed by the backend", though no GEMM ran anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gemmconf import integrity, kinds
from gemmconf.item import ItemRun
from gemmconf.outcome import Problem


@dataclass(frozen=True)
class AliasedOutput:
    """A result of the call that shares its storage with one of the call's inputs."""

    output: str  # "the result", or "the result[i]" of a nested result
    input: str
    shape_set: int
    kind = kinds.ALIASED_OUTPUT

    def describe(self) -> str:
        return (
            f"Aliased output: {self.output} on shape set {self.shape_set} shares memory with the "
            f"input {self.input}. Eager returns a tensor of its own, so a caller that writes into "
            f"the result changes {self.input} too."
        )


class OutputsOwnMemory:
    """Every result tensor's storage is its own, or that of an `out=` target."""

    name = "outputs own their memory"

    def watch(self, item: ItemRun, tensors: Sequence[Any], like: Any) -> _AliasWatch:
        writes = item.instance.spec.writes
        inputs = [
            (name, storage)
            for name, tensor in zip(item.names(), tensors, strict=True)
            if name not in writes and (storage := _storage(tensor)) is not None
        ]
        return _AliasWatch(item, inputs)


class _AliasWatch:
    def __init__(self, item: ItemRun, inputs: list[tuple[str, int]]):
        self.item, self.inputs = item, inputs

    def __enter__(self) -> _AliasWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def problems(self, actual: Any) -> list[Problem]:
        found: list[Problem] = []
        leaves = [(p, t) for p, t in integrity.leaves(actual) if isinstance(t, torch.Tensor)]
        for path, tensor in leaves:
            storage = _storage(tensor)
            for name, shared in self.inputs:
                if storage is not None and storage == shared:
                    output = f"the result{path}" if path else "the result"
                    found.append(AliasedOutput(output, name, self.item.shape_index))
        return found


def _storage(value: Any) -> int | None:
    """Where a tensor's storage begins, or None where it has none to share: no tensor, an empty
    storage (every empty one may begin at 0), or a tensor without storage (a subclass)."""
    if not isinstance(value, torch.Tensor):
        return None
    try:
        storage = value.untyped_storage()
        return storage.data_ptr() if storage.nbytes() else None
    except (RuntimeError, NotImplementedError):
        return None
