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
  and dynamo wraps that error (`TorchRuntimeError`); the backend's own failures arrive wrapped
  in `BackendCompilerFailed`. Both propagate as raised: the harness takes the error out of the
  wrappers and compares its class with eager's, and never substitutes eager's. Checks eager makes
  only in its kernels are the backend's own (backend/eager_checks.py).

Environment: on a machine without a usable CUDA GPU, importing `backend` sets
TRITON_INTERPRET=1 (unless set) so kernels run in the Triton interpreter on CPU tensors. TF32 for
fp32 GEMMs follows `torch.backends.cuda.matmul.allow_tf32` at compile time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from gemmconf.backends.dynamo import DynamoCompiled, with_dynamo_config

if TYPE_CHECKING:
    from gemmconf.backends.base import RunOptions
    from gemmconf_reference import BackendOptions, ReferenceCompiler


class ReferenceCompiled(DynamoCompiled):
    """One `torch.compile(fn, backend=ReferenceCompiler)` with its count and artifacts."""

    def __init__(
        self,
        fn: Callable[..., Any],
        compiler: ReferenceCompiler,
        *,
        dynamic: bool | None,
        target_arch: str | None,
        dynamo_config: dict[str, Any] | None = None,
    ) -> None:
        # the compiler: lowered graphs, launches
        super().__init__(fn, compiler, dynamic=dynamic, dynamo_config=dynamo_config)
        self._target_arch = target_arch

    def __call__(self, *args: Any) -> Any:
        from gemmconf_reference.compat import ops_in_graph

        with ops_in_graph():  # F.scaled_mm's op, which torch 2.11's dynamo skips
            return super().__call__(*args)

    def artifacts(self) -> dict[str, str]:
        return self.compiler.artifacts(self._target_arch)

    def kernel_stats(self) -> dict[str, object]:
        """Distinct kernel signatures launched and compiles they cost (the run's summary)."""
        return self.compiler.kernel_stats()


class ReferenceBackend:
    """The project's own Triton GEMM backend (backend/), the default system under test."""

    name = "reference"

    def __init__(self, options: BackendOptions | None = None, name: str = "reference") -> None:
        self.options = options
        self.name = name
        self.target_arch: str | None = None
        self.dynamo_config: dict[str, Any] = {}  # the scenario's, per item (for_instance)

    def for_instance(self, instance: Any) -> ReferenceBackend:
        """This backend for one item (base.py): under the scenario's `dynamo_config`."""
        return with_dynamo_config(self, instance)

    def availability(self) -> str | None:
        try:
            import triton  # noqa: F401

            import gemmconf_reference  # noqa: F401
        except ImportError as exc:
            return f"reference backend unavailable: {exc}"
        return None

    @property
    def autotunes(self) -> bool:
        """`reference:autotune` benchmarks its tile candidates (base.py)."""
        return bool(self.options is not None and self.options.autotune)

    def configure(self, options: RunOptions) -> None:
        self.target_arch = options.target_arch

    def compile(
        self, fn: Callable[..., Any], example_inputs: Sequence[Any], *, dynamic: bool | None
    ) -> ReferenceCompiled:
        from gemmconf_reference import BackendOptions, ReferenceCompiler

        options = dataclasses.replace(
            self.options or BackendOptions(), target_arch=self.target_arch
        )
        return ReferenceCompiled(
            fn,
            ReferenceCompiler(options),
            dynamic=dynamic,
            target_arch=self.target_arch,
            dynamo_config=self.dynamo_config,
        )


# Options of fp8 promotion variants that measured slower (BENCHMARKS.md, 2026-11-25, fp8 8192^3
# with tools/tune_sm90.py fp8 --accum): named, so that an old command line says what became of it.
RETIRED = {
    "promote": "promoting every N K tiles (0.935x cuBLAS) differs from cuBLAS by 1.1e-3, the "
    "fast-accumulation error class; fp8 without use_fast_accum promotes every K tile",
    "fp8_accum": "promotion inside the MMA lowering ('mma') is the one form: 'tile' measured "
    "4-6% and 'pingpong' 6-7% slower on an H100 and an H200",
}


def make_reference(option: str | None = None) -> ReferenceBackend:
    """Registry factory: `reference` or `reference:OPTIONS`, comma-separated: `autotune`
    (benchmark the tile table's candidates per kernel signature, GPU only), `persistent=auto|
    always|never`, `cudagraphs` (replay each call's launch from a CUDA graph per set of input
    addresses, while the previous output is free; GPU only, ignored in the interpreter), `ws`
    (the persistent kernel's tile loop warp-specialized by Triton; sm90 and later),
    `split_k=auto|never|N|stream` (K slices of the split-K kernel, or stream-K over the SMs:
    `BackendOptions.split_k`). All but
    `cudagraphs` and `split_k` keep large sm90 GEMMs on the Triton kernels rather than on
    `hopper_gemm_kernel` (gemmconf_reference.launcher.hopper_plan). The fp8 promotion variants
    `promote=N` and `fp8_accum=tile|mma|pingpong` are retired (RETIRED says why)."""
    from gemmconf_reference import BackendOptions

    if option is None:
        return ReferenceBackend()
    fields: dict[str, Any] = {}
    for part in (p.strip() for p in option.split(",")):
        key, _, value = part.partition("=")
        if key == "autotune" and not value:
            fields["autotune"] = True
        elif key == "persistent" and value in ("auto", "always", "never"):
            fields["persistent"] = value
        elif key == "cudagraphs" and not value:
            fields["cudagraphs"] = True
        elif key == "ws" and not value:
            fields["warp_specialize"] = True
        elif key == "split_k" and (value in ("auto", "never", "stream") or value.isdigit()):
            fields["split_k"] = int(value) if value.isdigit() else value
        elif key in RETIRED:
            raise ValueError(f"reference option {part!r} is retired: {RETIRED[key]}")
        else:
            raise ValueError(
                f"unknown reference option {part!r}; known: autotune, "
                "persistent=auto|always|never, cudagraphs, ws, split_k=auto|never|N|stream"
            )
    return ReferenceBackend(BackendOptions(**fields), name=f"reference:{option}")
