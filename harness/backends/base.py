"""The Backend protocol every system under test implements (docs/design.md, "Contracts").

A backend turns a Python function over tensors into a `Compiled` callable. The harness never looks
inside: it calls `compile`, calls the result once per shape set, reads `artifacts()` for the code
checks and `compiles()` for the recompile budget.

Optional attributes and methods, read with getattr (a backend without them is complete):

- `supports(instance) -> str | None`: a declared refusal. Given a `gemmconf.scenario.
  ScenarioInstance` (its `op`, `dtype`, `operands`, `scaling`, `compile.mode`, `axes`, ...), return
  None to run the item, or the reason the backend does not support it ("no fp8 on this
  backend"): the item then fails with kind "unsupported" without running, or is an xfail where
  the backend's expectations list it. Called in the pytest process before the item runs: keep it
  cheap, and free of CUDA.
- `compile_timeout_s` (a number): the seconds one compile may take on this backend beyond what the
  harness allows any item (nvcc, autotuning). `--item-timeout auto` adds it once per compile the
  item may make; a fixed `--item-timeout` ignores it.
- `expectations` (a path): the expectations file the backend's package ships (the format of
  `suites/expectations/*.yaml`, its `backend:` the name the backend runs under). It is used when
  the suite has no file of its own for the backend, after any `--expectations` file, and
  validated the same way against the whole suite (an entry that matches nothing is an error). A
  package can also register a file under the entry-point group `gemmconf.expectations`, named as
  the backend.
- `autotunes = True`: the backend's first call of a shape times candidate kernels. Its time to
  first result gets the autotuning default (`--first-result-timeout`), and `-n auto` on GPUs runs
  one xdist worker per GPU (workers autotuning side by side on one GPU time each other's
  kernels), unless `--workers-per-gpu` says otherwise.
- `configure(options: RunOptions)`: run-wide settings, called once after the backend is made.
- `for_instance(instance) -> Backend`: the backend to run one item with, where what it compiles
  depends on the scenario (the inductor backends apply the scenario's `inductor_config`, the
  config patch its seed test compiled under); itself where nothing changes. Called once per item
  before anything of it runs (`for_item`); keep it cheap, and free of CUDA.

Optional on a `Compiled`: `user_callable()`, the callable as the backend's own users call it,
without the adapter's per-call bookkeeping (the harness's config patches and graph-break
counters around each call). Benchmarks time it, after the adapter's own calls compiled and
checked it, so that host figures charge the backend with its own work only; without it, the
`Compiled` itself is timed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Compiled(Protocol):
    """What `Backend.compile` returns: callable like the function it was made from."""

    def __call__(self, *args: Any) -> Any: ...

    def artifacts(self) -> dict[str, str]:
        """Generated code by kind (`python`, `triton`, `ttir`, `ttgir`, `ptx`, `cuda`, ...)."""
        ...

    def compiles(self) -> int:
        """How many (re)compilations happened so far."""
        ...


@runtime_checkable
class Backend(Protocol):
    name: str

    def availability(self) -> str | None:
        """None when usable on this machine, else the reason its items are skipped."""
        ...

    def compile(
        self, fn: Callable[..., Any], example_inputs: Sequence[Any], *, dynamic: bool | None
    ) -> Compiled: ...


@dataclass(frozen=True)
class RunOptions:
    """Run-wide settings a backend may read through its optional `configure(options)` method.

    `target_arch` is `--target-arch` (e.g. "sm90"): backends that can cross-compile produce that
    class's code artifacts even where no such GPU is present. None means the detected device.
    """

    target_arch: str | None = None
    device: str = "cpu"


class UnsupportedResult(TypeError):
    """A backend's `supports` returned something other than None or a reason string."""


def compiled_gaps(compiled: Any) -> tuple[str, ...]:
    """What every item uses of a `Compiled` and `compiled` lacks: `__call__`, `compiles()`.
    (`artifacts()` is read by the code checks alone, `user_callable()` is optional.)"""
    gaps = [] if callable(compiled) else ["__call__"]
    if not callable(getattr(compiled, "compiles", None)):
        gaps.append("compiles()")
    return tuple(gaps)


def refusal(backend: Any, instance: Any) -> str | None:
    """The reason `backend` declares it does not support `instance` (its optional `supports`),
    or None when it runs the item."""
    supports = getattr(backend, "supports", None)
    if supports is None:
        return None
    reason = supports(instance)
    if reason is None or reason == "":
        return None
    if not isinstance(reason, str):
        raise UnsupportedResult(
            f"backend {getattr(backend, 'name', backend)!r}: supports() returns None (supported) "
            f"or the reason it is not, a string; it returned {reason!r}"
        )
    return reason


def for_item(backend: Any, instance: Any) -> Any:
    """The backend that runs `instance`: its optional `for_instance(instance)`, else itself."""
    specialise = getattr(backend, "for_instance", None)
    return backend if specialise is None else specialise(instance)


def compile_allowance(backend: Any) -> float:
    """The backend's optional `compile_timeout_s`; 0 unless it is a positive finite number."""
    try:
        value = float(getattr(backend, "compile_timeout_s", 0.0) or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) and value > 0 else 0.0


def declares_autotuning(backend: Any) -> bool:
    """The backend's optional `autotunes`, True only when it says so."""
    return getattr(backend, "autotunes", False) is True
