"""The reference GEMM backend (`backend/`) as a system under test: `--backend reference`.

Per `compile()`:
- Isolation. Dynamo caches compiled code on the code object it compiles, and the harness's
  functions share one code object across items; each `compile()` therefore compiles a copy of
  `fn` with a code object and name of its own, so no cache entry or recompile budget crosses items.
- Counting. The dynamo backend is a fresh `backend.ReferenceCompiler`; `compiles()` is how many
  times dynamo invoked it (the first compile and every recompile, one per graph).
- Artifacts. `python` (call plans and rewritten graphs), `triton` (kernel source), and `ttir`,
  `ttgir`, `ptx` cross-compiled for `RunOptions.target_arch` (else the GPU here, else sm90).
- Errors. Inputs the aten ops reject fail while dynamo traces, inside eager's meta functions,
  and dynamo wraps that error (`TorchRuntimeError`) or the meta raises another class than eager
  (`_scaled_mm` scale shapes: RuntimeError from meta, ValueError from eager). Nothing was compiled
  then, so the call runs `fn` eagerly once and raises eager's own exception, chained to dynamo's;
  if eager does not raise, dynamo's error propagates. Failures inside the backend itself
  (`BackendCompilerFailed`) propagate unchanged.

Environment: on a machine without a usable CUDA GPU, importing `backend` sets
TRITON_INTERPRET=1 (unless set) so kernels run in the Triton interpreter on CPU tensors. TF32 for
fp32 GEMMs follows `torch.backends.cuda.matmul.allow_tf32` at compile time.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from backend import BackendOptions, ReferenceCompiler
    from harness.backends.base import RunOptions

# Recompiles one item may make before dynamo gives up (dynamo's default is 8); reaching it raises
# instead of silently running eagerly.
RECOMPILE_LIMIT = 64

_serial = itertools.count(1)


def _fresh_entry(fn: Callable[..., Any]) -> types.FunctionType:
    """`fn` as a function with a code object and name no other compile has used."""
    base = re.sub(r"\W", "_", getattr(fn, "__name__", type(fn).__name__))
    name = f"{base}__ref_{next(_serial)}"
    if isinstance(fn, types.FunctionType):
        template = fn
    else:

        def template(*args: Any) -> Any:
            return fn(*args)

    entry = types.FunctionType(template.__code__.replace(co_name=name, co_qualname=name),
                               template.__globals__, name, template.__defaults__,
                               template.__closure__)
    entry.__kwdefaults__ = template.__kwdefaults__
    return entry


def _dynamo_patches() -> dict[str, Any]:
    import torch._dynamo.config as config

    limit_key = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    patches: dict[str, Any] = {limit_key: max(RECOMPILE_LIMIT, getattr(config, limit_key))}
    for fail_key in ("fail_on_recompile_limit_hit", "fail_on_cache_limit_hit"):
        if hasattr(config, fail_key):
            patches[fail_key] = True
            break
    return patches


def _tracing_error(error: BaseException) -> bool:
    """An error dynamo raised while tracing (not one from inside our backend)."""
    from torch._dynamo import exc

    return isinstance(error, exc.TorchDynamoException) and not isinstance(
        error, exc.BackendCompilerFailed)


class ReferenceCompiled:
    """One `torch.compile(fn, backend=ReferenceCompiler)` with its count and artifacts."""

    def __init__(self, fn: Callable[..., Any], compiler: ReferenceCompiler, *,
                 dynamic: bool | None, target_arch: str | None) -> None:
        import torch._dynamo.config as dynamo_config

        self._fn = fn
        self.compiler = compiler  # the dynamo backend: its lowered graphs and launches
        self._target_arch = target_arch
        self._patches = _dynamo_patches()
        with dynamo_config.patch(self._patches):
            self._compiled = torch.compile(_fresh_entry(fn), backend=compiler, dynamic=dynamic)

    def __call__(self, *args: Any) -> Any:
        import torch._dynamo.config as dynamo_config

        try:
            with dynamo_config.patch(self._patches):
                return self._compiled(*args)
        except Exception as error:
            if not _tracing_error(error):
                raise
            try:
                self._fn(*args)
            except Exception as eager_error:
                raise eager_error from error
            raise

    def artifacts(self) -> dict[str, str]:
        return self.compiler.artifacts(self._target_arch)

    def compiles(self) -> int:
        return self.compiler.invocations


class ReferenceBackend:
    """The project's own Triton GEMM backend (backend/), the default system under test."""

    name = "reference"

    def __init__(self, options: BackendOptions | None = None) -> None:
        self.options = options
        self.target_arch: str | None = None

    def availability(self) -> str | None:
        try:
            import triton  # noqa: F401

            import backend  # noqa: F401
        except ImportError as exc:
            return f"reference backend unavailable: {exc}"
        return None

    def configure(self, options: RunOptions) -> None:
        self.target_arch = options.target_arch

    def compile(self, fn: Callable[..., Any], example_inputs: Sequence[Any], *,
                dynamic: bool | None) -> ReferenceCompiled:
        from backend import BackendOptions, ReferenceCompiler

        options = dataclasses.replace(self.options or BackendOptions(),
                                      target_arch=self.target_arch)
        return ReferenceCompiled(fn, ReferenceCompiler(options), dynamic=dynamic,
                                 target_arch=self.target_arch)


def make() -> ReferenceBackend:
    return ReferenceBackend()


BACKEND = ReferenceBackend()
