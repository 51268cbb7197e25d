"""A call guard: a result shares memory with an input only where eager's result shares it with
the same input (an `out=` target eager returns; the gradient of a bias that autograd hands back
as the incoming gradient itself). Elsewhere eager's results are tensors of their own, and a
caller that writes into one must not change its inputs.

Found by an outside trial (reports/published/2026-12-01-dev-cpu-tvm-trial): TVM's relax backend
returned the input C itself for `addmm` with alpha=0 and beta=1. Its values were right, so the
items passed, with "computed by the backend", though no GEMM ran anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gemmconf import integrity, kinds
from gemmconf.item import EagerAnswer, ItemRun
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
    """Every result tensor's storage is its own, or an input's where eager's result at the same
    place shares that input's."""

    name = "outputs own their memory"

    def watch(self, item: ItemRun, tensors: Sequence[Any], eager: EagerAnswer) -> _AliasWatch:
        return _AliasWatch(item, list(zip(item.names(), tensors, strict=True)), eager)


class _AliasWatch:
    def __init__(self, item: ItemRun, inputs: list[tuple[str, Any]], eager: EagerAnswer):
        self.item, self.inputs = item, inputs
        named = list(zip(eager.inputs.names, eager.inputs.tensors, strict=True))
        # where eager's own result shares an input's memory
        self.eager = shared(eager.result, named)

    def __enter__(self) -> _AliasWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def problems(self, actual: Any) -> list[Problem]:
        index = self.item.shape_index
        return [
            AliasedOutput(f"the result{path}" if path else "the result", name, index)
            for path, name in sorted(shared(actual, self.inputs) - self.eager)
        ]


def shared(value: Any, inputs: list[tuple[str, Any]]) -> set[tuple[str, str]]:
    """(path of a result tensor in `value`, name of an input) for each result tensor that shares
    its storage with that input."""
    start = integrity.storage_start
    storages = [(name, s) for name, tensor in inputs if (s := start(tensor)) is not None]
    found = set()
    for path, leaf in integrity.leaves(value):
        storage = start(leaf)
        found |= {(path, name) for name, s in storages if storage is not None and s == storage}
    return found
