"""The `eager` backend: runs the function as written, with no compiler in between.

It is the baseline every scenario must pass: a failure here is a bug in the scenario, the inputs
or the oracle, never in a system under test.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class EagerCompiled:
    """`fn` itself behind the Compiled protocol: no artifacts, never compiled."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn

    def __call__(self, *args: Any) -> Any:
        return self._fn(*args)

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return 0


class EagerBackend:
    """Eager PyTorch as a Backend."""

    name = "eager"

    def availability(self) -> str | None:
        return None

    def compile(
        self, fn: Callable[..., Any], example_inputs: Sequence[Any], *, dynamic: bool | None
    ) -> EagerCompiled:
        return EagerCompiled(fn)
