"""gemmconf's public interface for tools that work outside a pytest run: a backend package's own
commands (the cutlass plugin's kernel survey and prebuild), scripts and notebooks.

- `instances(patterns, suites)`: the suite's scenario instances whose ids match the patterns.
- `operand_elements(instance)`: how large an instance is, without building it.
- `program(instance, seed=, device=)`: the function under test and its arguments per shape set,
  exactly as an item builds them (`mark_dynamic` applied in that compile mode), and the numerics
  (TF32 on or off) it runs under.
- `run(instance, backend, seed=, device=)`: one item through the harness's own runner and oracle,
  as `gemmconf explain --run` does. A tool that wants to know whether a backend is right asks
  this; a backend never judges itself.

These names are kept from version to version; the modules behind them are gemmconf's own. An
instance is a read-only `ScenarioInstance` (its fields are the suite format's, suites/README.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any

from gemmconf import bundled_suites
from gemmconf import inputs as _inputs
from gemmconf import program as _program
from gemmconf.backends.base import Backend
from gemmconf.expectations import compile_pattern
from gemmconf.outcome import describe, render
from gemmconf.runner import mark_dynamic_dims, run_item
from gemmconf.scenario import ScenarioError, ScenarioInstance, discover, eval_dim, load_suite

__all__ = [
    "ItemProgram",
    "ItemVerdict",
    "ScenarioError",
    "ScenarioInstance",
    "instances",
    "operand_elements",
    "program",
    "run",
]


def instances(
    patterns: Sequence[str] = ("*",), suites: str | Path | None = None
) -> list[ScenarioInstance]:
    """Instances of the suite under `suites` (default: the suite installed with gemmconf) whose
    ids match any of `patterns` (`*` any run of characters, `?` one; brackets are literal).

    Raises ScenarioError (`file:line: field: message`) for an invalid suite file.
    """
    folder = Path(suites) if suites is not None else bundled_suites()
    regexes = [compile_pattern(p) for p in patterns]
    root = Path.cwd()  # file:line in messages relative to where the tool runs
    return [
        instance
        for path in discover([folder], root)
        for instance in load_suite(path, root=root)
        if any(r.fullmatch(instance.id) for r in regexes)
    ]


def operand_elements(instance: ScenarioInstance) -> int:
    """Elements of all operands in the instance's largest shape set (its host memory, roughly)."""
    return max(
        sum(prod(eval_dim(e, dims) for e in operand.shape) for operand in instance.operands)
        for dims in (instance.dims(i) for i in range(len(instance.shape_sets)))
    )


@dataclass(frozen=True)
class ItemProgram:
    """What an item hands a backend: the function under test and its arguments."""

    instance: ScenarioInstance
    function: Callable[..., Any]
    arguments: tuple[tuple[Any, ...], ...]  # one tuple of positional arguments per shape set
    dynamic: bool | None  # torch.compile's `dynamic=` for this compile mode

    def numerics(self) -> AbstractContextManager[None]:
        """Matmul precision the item runs under: call the function and the backend inside it."""
        return _program.numerics(self.instance)


def program(instance: ScenarioInstance, *, seed: int = 0, device: str = "cpu") -> ItemProgram:
    """The instance's function under test and its inputs on `device`, drawn for `seed` as the
    item's backend inputs are."""
    built = [_inputs.build(instance, i, seed, device) for i in range(len(instance.shape_sets))]
    if instance.compile.mode == "mark_dynamic":
        mark_dynamic_dims(instance, built[0])
    return ItemProgram(
        instance,
        _program.make_function(instance),
        tuple(b.tensors for b in built),
        instance.compile.dynamic,
    )


@dataclass(frozen=True)
class ItemVerdict:
    """The harness's verdict on one instance run on one backend."""

    id: str
    passed: bool
    summary: str  # the first failure's first line; "" when passed
    problems: tuple[str, ...]  # one paragraph per failed check, the last a `Reproduce:` line
    metrics: Mapping[str, Any]  # as in the item's record: err_ratio, recompiles, code_checks, ...
    kind: str | None = None  # the failure kind (results.json's `kind`); None when passed


def run(
    instance: ScenarioInstance,
    backend: Backend,
    *,
    seed: int = 0,
    device: str = "cpu",
    target: str | None = None,
) -> ItemVerdict:
    """Run one item as the pytest plugin does (eager, the backend, the oracle, the recompile
    budget and the code checks for `target`), in this process, without expectations."""
    outcome = run_item(instance, backend, seed=seed, device=device, target=target)
    if outcome.passed:
        return ItemVerdict(instance.id, True, "", (), dict(outcome.metrics))
    repro = f"gemmconf explain '{instance.id}' --run --backend {backend.name} --seed {seed}"
    return ItemVerdict(
        instance.id,
        False,
        render(outcome).reason,
        (*describe(outcome), f"Reproduce: {repro}"),
        dict(outcome.metrics),
        outcome.kind,
    )
