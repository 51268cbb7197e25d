"""Inductor as a system under test: `inductor` and `inductor-max-autotune[:BACKENDS]`.

`inductor` is `torch.compile(fn, dynamic=dynamic)` with inductor's defaults. `inductor-max-autotune`
adds the options of `mode="max-autotune-no-cudagraphs"` (max_autotune, coordinate descent tuning);
`:BACKENDS` (`TRITON`, `CUTLASS`, `ATEN,TRITON`, ...) sets `max_autotune_gemm_backends`, the GEMM
template families autotuning picks from. CUDA graphs stay off: they reuse output buffers between
calls, which would let one shape set's result overwrite another's before the oracle reads it, and
they test nothing about GEMMs.

How it works, per `compile()`:
- Isolation. Dynamo keeps its compile cache on the code object it compiles and its
  automatic-dynamic profile under (file, first line, name). Each `compile()` compiles a function
  with a code object and name of its own, so no cache or profile crosses items.
- Counting. The dynamo backend is a per-`Compiled` function that counts its calls (one per graph
  compiled: first compile and every recompile) and hands the graph to inductor's `compile_fx`,
  as `torch.compile(backend="inductor")` does. The recompile limit is raised to RECOMPILE_LIMIT and
  hitting it raises, so a backend that recompiles per shape is counted, not silently run eagerly.
- Artifacts. While inductor compiles one of this `Compiled`'s graphs, a hook on
  `GraphLowering.save_output_code` (the one `torch._inductor.utils.run_and_get_code` uses; it
  also fires on FX-graph-cache hits) collects the output module. Compilation is lazy, so modules
  accumulate across calls, in compile order. The `counters` artifact lists how inductor's own
  counters (`torch._dynamo.utils.counters["inductor"]`: epilogue fusions, precompiles, cache
  hits) moved during this `Compiled`'s calls, for the seeds' counter assertions (a graph
  from the FX graph cache replays the counts of the compile that made it).
- Scope. Inductor and dynamo config patches are applied around `torch.compile` and each call
  only (and passed to `compile_fx`, which keeps them for later backward compiles); nothing
  outlives the call. A scenario's `inductor_config` (the config patch its seed test compiled
  under) joins them, over the label's own options, and its `dynamo_config` joins the dynamo
  patches (`for_instance`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

from gemmconf import capability
from gemmconf.backends.cache import cache_dir
from gemmconf.backends.dynamo import (
    GraphBreaks,
    artifacts_of,
    collecting_output_code,
    isolated_entry,
    recompile_limit_patches,
    scenario_dynamo_config,
)

if TYPE_CHECKING:
    pass

# Recompiles one item may make before dynamo gives up (dynamo's default is 8).


def _cuda_gpu() -> bool:
    return torch.cuda.is_available() and torch.version.hip is None


def _rocm_gpu() -> bool:
    return torch.cuda.is_available() and torch.version.hip is not None


def _xpu_gpu() -> bool:
    xpu = getattr(torch, "xpu", None)
    return xpu is not None and xpu.is_available()


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _inductor_config() -> Any:
    return importlib.import_module("torch._inductor.config")


def _dynamo_config() -> Any:
    return importlib.import_module("torch._dynamo.config")


CUTLASS_CONFIGS_ENV = "GEMMCONF_CUTLASS_MAX_CONFIGS"
# Seconds per compile for --item-timeout auto (InductorBackend.compile_timeout_s).
CUTLASS_COMPILE_S = 600.0
AUTOTUNE_COMPILE_S = 180.0
DEFAULT_CUTLASS_CONFIGS = "4"


@contextlib.contextmanager
def counting_inductor(sink: dict[str, int]) -> Iterator[None]:
    """Add to `sink` how much each of inductor's counters moved inside the block (compiles run
    lazily inside calls, backward compiles inside the call that differentiates)."""
    utils = importlib.import_module("torch._dynamo.utils")
    before = dict(utils.counters["inductor"])
    try:
        yield
    finally:
        # looked up again: dynamo may have cleared the counters (a new group object) meanwhile
        for name, value in utils.counters["inductor"].items():
            moved = value - before.get(name, 0)
            moved = value if moved < 0 else moved  # cleared meanwhile: all of it is new
            if moved:
                sink[name] = sink.get(name, 0) + moved


# inductor's scheduler IR before and after fusion (its torch._logging artifacts of these names)
FUSION_IR = ("ir_pre_fusion", "ir_post_fusion")


@contextlib.contextmanager
def collecting_fusion_ir(sink: dict[str, list[str]]) -> Iterator[None]:
    """Append the scheduler's nodes as inductor's `ir_pre_fusion` and `ir_post_fusion` logs
    write them (`torch._inductor.debug.log_ir_pre_fusion`, `log_ir_post_fusion`, which the
    scheduler looks up at each compile) to `sink[kind]`, without turning any log on."""
    debug = importlib.import_module("torch._inductor.debug")
    saved = {kind: getattr(debug, f"log_{kind}", None) for kind in FUSION_IR}
    formatter = getattr(debug, "DebugFormatter", None)
    if formatter is None or any(log is None for log in saved.values()):
        yield  # a torch without these hooks: no artifact, and a block that reads one fails
        return

    def hook(kind: str) -> Callable[[Any], None]:
        def logged(nodes: Any) -> None:
            sink.setdefault(kind, []).append(formatter._write_ir(nodes))
            saved[kind](nodes)

        return logged

    for kind in FUSION_IR:
        setattr(debug, f"log_{kind}", hook(kind))
    try:
        yield
    finally:
        for kind, log in saved.items():
            setattr(debug, f"log_{kind}", log)


def fusion_ir_artifacts(sink: dict[str, list[str]]) -> dict[str, str]:
    """Each kind's logs in compile order, one section per graph inductor scheduled."""
    return {
        kind: "".join(
            f"# gemmconf: inductor scheduler nodes, graph {i} of {len(texts)}\n{text}"
            for i, text in enumerate(texts, start=1)
        )
        for kind, texts in sink.items()
    }


def reads_fusion_ir(instance: Any) -> bool:
    """Whether a FileCheck block of the scenario reads `ir_pre_fusion` or `ir_post_fusion`."""
    blocks = getattr(getattr(instance, "checks", None), "filecheck", ()) or ()
    return any(block.artifact in FUSION_IR for block in blocks)


def counters_artifact(counted: dict[str, int]) -> str:
    """One `name value` line per counter that moved, sorted; a counter that did not move has no
    line (a seed's `counter == 0` is a CHECK-NOT). The header keeps the text from being empty.
    A graph served by inductor's FX graph cache replays the counts its compile made."""
    lines = ["# inductor counters moved by this item's compiles and calls"]
    lines += [f"{name} {value}" for name, value in sorted(counted.items())]
    return "\n".join(lines) + "\n"


def _cutlass_section() -> str:
    return "cutlass" if hasattr(_inductor_config(), "cutlass") else "cuda"  # older torch: cuda


def _cutlass_dir() -> str:
    return str(getattr(_inductor_config(), _cutlass_section()).cutlass_dir)


def _has_checkout(directory: str) -> bool:
    return os.path.isdir(os.path.join(directory, "python", "cutlass_library"))


def wheel_cutlass_dir() -> str | None:
    """A CUTLASS checkout's layout made of the installed nvidia-cutlass wheel, for inductor.

    Inductor wants `cutlass_dir` with include/, tools/ and python/{cutlass_library,
    cutlass_cppgen, pycute}; torch's pip wheels ship no third_party/cutlass, but the nvidia-cutlass
    wheel (the `cutlass` extra) holds all of it. The layout is symlinks under
    `$GEMMCONF_CACHE/inductor-cutlass` (default ~/.cache/gemmconf). None when the wheel is absent.
    """
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.origin:
        return None
    site = os.path.dirname(os.path.dirname(spec.origin))
    source = os.path.join(site, "cutlass_library", "source")
    root = str(cache_dir("inductor-cutlass"))
    links = {
        "include": os.path.join(source, "include"),
        "tools": os.path.join(source, "tools"),
        os.path.join("python", "cutlass_library"): os.path.join(site, "cutlass_library"),
        os.path.join("python", "cutlass_cppgen"): os.path.join(site, "cutlass_cppgen"),
        os.path.join("python", "pycute"): os.path.join(site, "pycute"),
    }
    if not all(os.path.isdir(target) for target in links.values()):
        return None
    for name, target in links.items():
        link = os.path.join(root, name)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.realpath(link) == os.path.realpath(target):
            continue
        if os.path.lexists(link):
            os.unlink(link)
        try:
            os.symlink(target, link)
        except FileExistsError:  # another worker made it meanwhile
            if os.path.realpath(link) != os.path.realpath(target):
                raise
    return root


def _cutlass_dir_patch() -> dict[str, Any]:
    """Point inductor at the wheel's layout when its configured cutlass_dir has no checkout."""
    if _has_checkout(_cutlass_dir()):
        return {}
    directory = wheel_cutlass_dir()
    return {f"{_cutlass_section()}.cutlass_dir": directory} if directory else {}


def _cutlass_import_problem() -> str | None:
    """Ask inductor itself (it reads `cutlass_dir`/python, not an installed nvidia-cutlass):
    None when it imports CUTLASS, else why not.

    Importing CUTLASS's python package (cutlass_cppgen 4.x) opens a sqlite file named
    `compiled_cache.db` in the working directory: the import runs in gemmconf's cache instead, so
    that asking whether inductor can use CUTLASS leaves nothing in the user's folder."""
    quiet = cache_dir("inductor-cutlass")
    quiet.mkdir(parents=True, exist_ok=True)
    patch = _cutlass_dir_patch()
    if not patch and not os.path.isabs(_cutlass_dir()):  # a relative one names the user's folder
        patch = {f"{_cutlass_section()}.cutlass_dir": os.path.abspath(_cutlass_dir())}
    with _inductor_config().patch(patch), contextlib.chdir(quiet):
        for module in (
            "torch._inductor.codegen.cutlass.utils",  # torch 2.11-2.13
            "torch._inductor.codegen.cuda.cutlass_utils",  # older torch
        ):
            try:
                found = importlib.import_module(module).try_import_cutlass()
            except (ImportError, AttributeError):
                continue
            except AssertionError as exc:
                # It symlinks the CUTLASS packages into its cache dir and asserts that links left
                # there by another environment (another venv) point where it would point them.
                return (
                    f"inductor's try_import_cutlass failed: {exc} (set "
                    "TORCHINDUCTOR_CACHE_DIR per environment, or remove that link)"
                )
            return None if found else _no_checkout()
        return None if _has_checkout(_cutlass_dir()) else _no_checkout()


def _no_checkout() -> str:
    return (
        "inductor CUTLASS templates need a CUTLASS checkout: "
        f"torch._inductor.config.{_cutlass_section()}.cutlass_dir (TORCHINDUCTOR_CUTLASS_DIR) = "
        f"{_cutlass_dir()!r} has no importable python/cutlass_library, and the "
        "nvidia-cutlass wheel that could stand in is not installed (pip install -e "
        "'.[cutlass]')"
    )


def _nvcc_found() -> bool:
    cuda = getattr(_inductor_config(), "cuda", None)
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    candidates = [
        getattr(cuda, "cuda_cxx", None),
        os.environ.get("CUDACXX"),
        os.path.join(cuda_home, "bin", "nvcc"),
        "nvcc",
    ]
    return any(c and shutil.which(c) for c in candidates)


def _gpu_is_big_enough() -> bool:
    """Inductor uses GEMM templates only where `is_big_gpu` holds (68+ SMs on NVIDIA)."""
    try:
        from torch._inductor.utils import is_big_gpu

        return bool(is_big_gpu(0))
    except (ImportError, TypeError, AttributeError, AssertionError):
        return True


def _aten_reason() -> str | None:
    return None


def _cpp_reason() -> str | None:
    """inductor's CPP GEMM templates (C++ micro-kernels) lower only GEMMs on the CPU: where the
    items run on a GPU they offer no choice (with CPP alone, NoValidChoicesError each time).
    Where items run is the harness's choice (`capability.detect`: an NVIDIA GPU, else the CPU,
    so a ROCm or XPU machine's items run on its CPU), not whether torch sees a GPU."""
    if capability.detect().device != "cpu":
        return (
            "inductor's CPP GEMM templates compile for the CPU, and this machine's items run on "
            "its GPU, where they offer no choice"
        )
    return None


def _triton_reason() -> str | None:
    if not (torch.cuda.is_available() or _xpu_gpu()):
        return (
            "inductor's TRITON GEMM templates need a GPU (CUDA, ROCm or XPU; none found); "
            "on this CPU inductor silently falls back to ATen"
        )
    from torch.utils._triton import has_triton

    if not has_triton():
        return "inductor's TRITON GEMM templates need Triton, which is not importable here"
    if not _gpu_is_big_enough():
        return (
            "inductor's TRITON GEMM templates are off on this GPU (too few SMs for is_big_gpu); "
            "inductor silently falls back to ATen"
        )
    return None


def _cutlass_reason() -> str | None:
    if not _cuda_gpu():
        return "inductor CUTLASS templates need a CUDA GPU (none found)"
    problem = _cutlass_import_problem()
    if problem is not None:
        return problem
    if not _nvcc_found():
        return "inductor CUTLASS templates need nvcc (not in cuda_cxx, CUDACXX, CUDA_HOME or PATH)"
    return None


def _sm100_gpu() -> bool:
    return _cuda_gpu() and torch.cuda.get_device_capability()[0] == 10


# What a template needs, in order, each with the reason given when it is missing
Needs = tuple[tuple[Callable[[], bool], str], ...]

# The needs of the templates without a check of their own
_NEEDS: dict[str, Needs] = {
    "CUTEDSL": (
        (_sm100_gpu, "inductor CUTEDSL templates need an NVIDIA sm100-class GPU (none found)"),
        (
            lambda: _has_module("cutlass"),
            "inductor CUTEDSL templates need the CuTe DSL (nvidia-cutlass-dsl), not installed",
        ),
    ),
    "NVGEMM": (
        (_cuda_gpu, "inductor NVGEMM templates need a CUDA GPU (none found)"),
        (
            lambda: _has_module("cutlass_api"),
            "inductor NVGEMM templates need cutlass_api, which is not installed",
        ),
    ),
    "CK": ((_rocm_gpu, "inductor CK/CKTILE templates need an AMD ROCm GPU (none found)"),),
}


def _first_unmet(needs: Needs) -> Callable[[], str | None]:
    """The reason function of a template that needs `needs`: its first need not met, or None."""
    return lambda: next((reason for met, reason in needs if not met()), None)


# The names `max_autotune_gemm_backends` takes (torch 2.11 and 2.13 read all eight) and, for each,
# why its templates would give no choices here (None: usable). Inductor ignores unknown names.
_GEMM_BACKEND_REASONS: dict[str, Callable[[], str | None]] = {
    "ATEN": _aten_reason,
    "TRITON": _triton_reason,
    "CUTLASS": _cutlass_reason,
    "CUTEDSL": _first_unmet(_NEEDS["CUTEDSL"]),
    "NVGEMM": _first_unmet(_NEEDS["NVGEMM"]),
    "CK": _first_unmet(_NEEDS["CK"]),
    "CKTILE": _first_unmet(_NEEDS["CK"]),
    "CPP": _cpp_reason,
}
GEMM_BACKENDS: tuple[str, ...] = tuple(_GEMM_BACKEND_REASONS)


def parse_gemm_backends(option: str) -> tuple[str, ...]:
    """`"aten, triton"` -> `("ATEN", "TRITON")`; ValueError naming the valid names otherwise."""
    names = [part.strip().upper() for part in option.split(",")]
    valid = ", ".join(GEMM_BACKENDS)
    if not option.strip() or any(not name for name in names):
        raise ValueError(
            f"empty inductor GEMM backend in {option!r}: give a comma-separated list of {valid}"
        )
    unknown = [name for name in names if name not in _GEMM_BACKEND_REASONS]
    if unknown:
        raise ValueError(
            f"unknown inductor GEMM backend(s) {', '.join(unknown)} in {option!r}; valid: {valid}"
        )
    return tuple(dict.fromkeys(names))


class InductorCompiled:
    """One `torch.compile` of one function, with its own compile count and output code."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        dynamic: bool | None,
        inductor_patches: dict[str, Any],
        dynamo_config: Mapping[str, Any] | None = None,
        fusion_ir: bool = False,
    ) -> None:
        self._inductor_patches = dict(inductor_patches)
        self._fusion_ir: dict[str, list[str]] | None = {} if fusion_ir else None
        self._dynamo_patches = {**recompile_limit_patches(), **(dynamo_config or {})}
        self._compiles = 0
        self._modules: list[str] = []
        self._counted: dict[str, int] = {}
        with self._scope():
            self._compiled = torch.compile(
                isolated_entry(fn), backend=self._compile_graph, dynamic=dynamic
            )
        self._breaks = GraphBreaks()

    @contextlib.contextmanager
    def _scope(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            if self._inductor_patches:
                stack.enter_context(_inductor_config().patch(self._inductor_patches))
            stack.enter_context(_dynamo_config().patch(self._dynamo_patches))
            yield

    def _compile_graph(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        self._compiles += 1
        # Looked up per call so a test can observe exactly what inductor is handed.
        compile_fx = importlib.import_module("torch._inductor.compile_fx").compile_fx
        with contextlib.ExitStack() as stack:
            stack.enter_context(collecting_output_code(self._modules))
            if self._fusion_ir is not None:
                stack.enter_context(collecting_fusion_ir(self._fusion_ir))
            return compile_fx(gm, example_inputs, config_patches=dict(self._inductor_patches))

    def __call__(self, *args: Any) -> Any:
        with self._scope(), self._breaks.watching(), counting_inductor(self._counted):
            return self._compiled(*args)

    def uncaptured(self, *, broke: bool = False) -> str | None:
        """Why inductor never received the program, or None (`GraphBreaks.uncaptured`)."""
        return self._breaks.uncaptured(self._compiles, broke=broke)

    def artifacts(self) -> dict[str, str]:
        """`python`: every output module in compile order; `triton`/`cpp`/`cuda`: kernel sources;
        `counters`: inductor's counters this `Compiled` moved (`counters_artifact`)."""
        found = artifacts_of(self._modules)
        if not found:
            return found
        fusion_ir = fusion_ir_artifacts(self._fusion_ir or {})
        return {**found, "counters": counters_artifact(self._counted), **fusion_ir}

    def compiles(self) -> int:
        return self._compiles

    def user_callable(self) -> Callable[..., Any]:
        """The torch.compile'd function itself, as a user calls it (what benchmarks time)."""
        return self._compiled


class InductorBackend:
    """Inductor, optionally with max-autotune limited to some GEMM template families."""

    def __init__(
        self,
        name: str = "inductor",
        max_autotune: bool = False,
        gemm_backends: str | None = None,
        scenario_config: Mapping[str, Any] | None = None,
        dynamo_config: Mapping[str, Any] | None = None,
        fusion_ir: bool = False,
    ) -> None:
        if gemm_backends is not None and not max_autotune:
            raise ValueError(
                "inductor picks among GEMM backends only under max-autotune: "
                f"use inductor-max-autotune:{gemm_backends}"
            )
        self.name = name
        self.max_autotune = max_autotune
        self.gemm_backends = None if gemm_backends is None else parse_gemm_backends(gemm_backends)
        # the scenario's `inductor_config` (its seed's config patch), applied over this label's
        self.scenario_config = dict(scenario_config or {})
        # the scenario's `dynamo_config`, applied with the recompile limit (dynamo.py)
        self.dynamo_config = dict(dynamo_config or {})
        # the scheduler's IR before and after fusion as artifacts, for scenarios that check it
        self.fusion_ir = fusion_ir

    def for_instance(self, instance: Any) -> InductorBackend:
        """This backend for one item (base.py): under the scenario's `inductor_config`, the
        options its seed test patched, which win over the label's own (the seed's config decides
        what inductor builds), and its `dynamo_config`. Itself where the scenario has neither."""
        config = dict(getattr(instance, "inductor_config", ()) or ())
        dynamo = scenario_dynamo_config(instance)
        fusion_ir = reads_fusion_ir(instance)
        if not config and not dynamo and not fusion_ir:
            return self
        gemm_backends = None if self.gemm_backends is None else ",".join(self.gemm_backends)
        return InductorBackend(
            self.name,
            self.max_autotune,
            gemm_backends,
            scenario_config=config,
            dynamo_config=dynamo,
            fusion_ir=fusion_ir,
        )

    def inductor_patches(self) -> dict[str, Any]:
        """The inductor config this backend compiles under: the label's (empty for plain
        `inductor`), then the scenario's `inductor_config` over it."""
        # the scheduler runs only where the graph is compiled anew, not served by a cache
        uncached = {"force_disable_caches": True} if self.fusion_ir else {}
        return {**self._label_patches(), **uncached, **self.scenario_config}

    def _label_patches(self) -> dict[str, Any]:
        if not self.max_autotune:
            return {}
        from torch._inductor import list_mode_options

        patches = dict(list_mode_options("max-autotune-no-cudagraphs"))
        if self.gemm_backends is not None:
            patches["max_autotune_gemm_backends"] = ",".join(self.gemm_backends)
        if "CUTLASS" in (self.gemm_backends or ()):
            # Inductor compiles every CUTLASS candidate with nvcc (about a minute each); cap how
            # many it profiles per GEMM so an item finishes in minutes. 0: inductor's default.
            cap = int(os.environ.get(CUTLASS_CONFIGS_ENV, DEFAULT_CUTLASS_CONFIGS))
            if cap > 0:
                patches[f"{_cutlass_section()}.cutlass_max_profiling_configs"] = cap
            patches.update(_cutlass_dir_patch())
        return patches

    @property
    def autotunes(self) -> bool:
        """max-autotune times candidate kernels at a shape's first call (base.py)."""
        return self.max_autotune

    @property
    def compile_timeout_s(self) -> float:
        """Seconds one compile may need beyond the harness's default (base.py): CUTLASS
        candidates each take an nvcc run (items measured 40-230 s on an H200 with six workers);
        Triton autotuning compiles and times every config (items measured up to 93 s). A
        scenario's `inductor_config` that turns max-autotune on or picks the GEMM backends
        counts as the label's would."""
        label = ",".join(self.gemm_backends or ())
        backends = str(self.scenario_config.get("max_autotune_gemm_backends", label)).upper()
        if not self.scenario_config.get("max_autotune", self.max_autotune):
            return 0.0
        return CUTLASS_COMPILE_S if "CUTLASS" in backends.split(",") else AUTOTUNE_COMPILE_S

    def availability(self) -> str | None:
        for gemm_backend in self.gemm_backends or ():
            reason = _GEMM_BACKEND_REASONS[gemm_backend]()
            if reason is not None:
                return reason
        return None

    def compile(
        self, fn: Callable[..., Any], example_inputs: Sequence[Any], *, dynamic: bool | None
    ) -> InductorCompiled:
        return InductorCompiled(
            fn,
            dynamic=dynamic,
            inductor_patches=self.inductor_patches(),
            dynamo_config=self.dynamo_config,
            fusion_ir=self.fusion_ir,
        )


def make_inductor(option: str | None = None) -> InductorBackend:
    """Registry factory for `inductor` (no options)."""
    if option is not None:
        raise ValueError(
            f"backend 'inductor' takes no options, got 'inductor:{option}'; GEMM backends are "
            f"chosen with inductor-max-autotune:{option}"
        )
    return InductorBackend()


def make_inductor_max_autotune(option: str | None = None) -> InductorBackend:
    """Registry factory for `inductor-max-autotune[:BACKENDS]`, e.g. option `"ATEN,TRITON"`."""
    if option is None:
        return InductorBackend("inductor-max-autotune", max_autotune=True)
    backends = parse_gemm_backends(option)
    joined = ",".join(backends)
    return InductorBackend(
        f"inductor-max-autotune:{joined}", max_autotune=True, gemm_backends=joined
    )
