"""Two planted backends with one bug, adding 1 to every result, for the torch.compile layer's
tests (tests/test_compile_layer.py): one built on torch.compile (a dynamo compiler function
through gemmconf's adapter), one that never enters dynamo (its own compile object)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from gemmconf.backends.dynamo import dynamo_backend


def _plus_one(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value + 1
    if isinstance(value, tuple | list):
        return type(value)(_plus_one(v) for v in value)
    return value


def _off_by_one_compiler(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    def run(*args: Any) -> Any:
        return _plus_one(gm.forward(*args))

    return run


off_by_one_compiled = dynamo_backend(_off_by_one_compiler, name="off-by-one-compiled")


class _OffByOne:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any) -> Any:
        return _plus_one(self.fn(*args))

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return 1


class OffByOneOwnCompile:
    """The same bug without torch.compile: the layer never applies to it."""

    name = "off-by-one-own"

    def availability(self) -> str | None:
        return None

    def compile(self, fn: Callable[..., Any], example_inputs: Sequence[Any], *, dynamic: Any):
        return _OffByOne(fn)


off_by_one_own = OffByOneOwnCompile()
