"""`CutlassBackend`: the object gemmconf finds under the entry point `cutlass` (pyproject.toml).

It implements the Backend protocol (`gemmconf.backends.base`): `name`, `availability()`,
`compile(fn, example_inputs, dynamic=)`, and the optional `configure(options)`,
`compile_timeout_s` and `expectations`. Compiling is `torch.compile(fn, backend=CutlassCompiler)`
through gemmconf's shared adapter (`gemmconf.backends.dynamo.DynamoCompiled`: an isolated code
object per compile, dynamo's recompile limit raised and made loud); `compiles()` counts dynamo's
invocations of the compiler.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from gemmconf.backends.base import RunOptions
from gemmconf.backends.dynamo import DynamoCompiled, with_dynamo_config
from gemmconf_cutlass import codegen
from gemmconf_cutlass.launch import gpu_launch
from gemmconf_cutlass.lowering import CutlassCompiler, Launcher

NO_GPU = (
    "the cutlass backend launches kernels on a CUDA GPU; none found (codegen and nvcc "
    "compile-only checks run in gemmconf-cutlass's tests/test_cutlass_backend.py)"
)


class CutlassCompiled(DynamoCompiled):
    """One `torch.compile(fn, backend=CutlassCompiler)` with its compile count and artifacts."""

    def artifacts(self) -> dict[str, str]:
        return self.compiler.artifacts()


class CutlassBackend:
    """CUTLASS 3.x sm90 kernels (cutlass_library + nvcc) behind torch.compile.

    `launcher` and `allow_cpu` are for running without a GPU (tests, the survey): each planned
    launch goes to `launcher` instead of the GPU, and CPU tensors are planned too. Both are
    keyword-only, so `--backend cutlass:OPTION` is refused: the backend takes no option.
    """

    name = "cutlass"
    # Seconds a compile may take (gemmconf.backends.base): each kernel missing from the cache is
    # one nvcc run, about a minute, several on a loaded machine.
    compile_timeout_s = 300.0
    # The scenarios this backend declares it fails or skips, shipped with it (gemmconf uses the
    # suite's suites/expectations/cutlass.yaml instead where one exists).
    expectations = Path(__file__).with_name("expectations.yaml")

    def __init__(self, *, launcher: Launcher = gpu_launch, allow_cpu: bool = False) -> None:
        self.launcher = launcher
        self.allow_cpu = allow_cpu
        self.target_arch: str | None = None
        self.dynamo_config: dict[str, Any] = {}  # the scenario's, per item (for_instance)

    def for_instance(self, instance: Any) -> CutlassBackend:
        """This backend for one item: under the scenario's `dynamo_config` (dynamo runs
        here too)."""
        return with_dynamo_config(self, instance)

    def configure(self, options: RunOptions) -> None:
        self.target_arch = options.target_arch

    def availability(self) -> str | None:
        if not torch.cuda.is_available() or torch.version.hip is not None:
            return NO_GPU
        if self.target_arch not in (None, "sm90"):
            return (
                f"the cutlass backend builds sm_90a kernels only (--target-arch {self.target_arch})"
            )
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) != (9, 0):
            return (
                f"the cutlass backend's kernels are sm_90a (Hopper: H100/H200); this GPU, "
                f"{torch.cuda.get_device_name()}, is sm_{major}{minor}"
            )
        try:
            codegen.include_dirs()
        except (codegen.CodegenError, codegen.BuildError) as exc:
            return str(exc)
        if codegen.find_nvcc() is None and not any(codegen.cache_root().glob("*/libkernel.so")):
            return (
                "the cutlass backend needs nvcc to build its kernels (none found: CUDACXX, "
                f"CUDA_HOME, PATH) or prebuilt ones in {codegen.cache_root()}"
            )
        return None

    def compile(
        self, fn: Callable[..., Any], example_inputs: Sequence[Any], *, dynamic: bool | None
    ) -> CutlassCompiled:
        compiler = CutlassCompiler(self.launcher, allow_cpu=self.allow_cpu)
        return CutlassCompiled(fn, compiler, dynamic=dynamic, dynamo_config=self.dynamo_config)
