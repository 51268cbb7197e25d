"""CUTLASS 3.x sm90 GEMM kernels for the `cutlass` backend: render, compile, cache.

Nothing here needs torch or a GPU. A `KernelSpec` names one kernel: operand dtypes and majorness,
output dtype, accumulation mode and epilogue. `render` turns it into one self-contained `.cu`
file:

1. the kernel type, emitted by `cutlass_library` (its `GemmOperation` and 3.x instance emitter)
   from an explicit, pinned tile description (the library's default choice depends on
   PYTHONHASHSEED), with an epilogue visitor tree (EVT) built here as the fusion;
2. a C shim (`extern "C"`): `gemmconf_run(const gemmconf_cutlass_args*)` and
   `gemmconf_workspace_size(...)`, which build the CUTLASS arguments from raw pointers and
   strides and launch on the caller's stream. The struct layout is `ABI_VERSION`; the Python
   launcher (`launch.py`) mirrors it with ctypes.

The epilogue computes, in fp32:  D = cast(scale(acc) + beta * source), where
  scale(acc) = alpha * acc                        ("alpha": mm/bmm/addmm/baddbmm)
             | scale_a * scale_b * acc            ("tensorwise" fp8: two device scalars)
             | scale_a[m] * (scale_b[n] * acc)     ("rowwise" fp8: (M,1) and (1,N) vectors)
  source    = none | C[l,m,n] (TMA-loaded matrix) | c[l,n] (row vector) | c[l,m] (column vector)
`beta` is a runtime scalar (1 for a `_scaled_mm` bias); `source="none"` never reads C, which is
what addmm with beta=0 requires (NaN in C must not reach D).

`build` compiles a rendered source with nvcc for `sm_90a` (`-gencode arch=compute_90a,code=sm_90a`:
wgmma needs the `a` target) into a cache directory keyed by the hash of source and flags:
`$GEMMCONF_CACHE/cutlass/` or `~/.cache/gemmconf/cutlass/`. Each entry holds `kernel.cu`,
`kernel.ptx`, `kernel.cubin`, `kernel.sass` (when a `cuobjdump` is found) and, for launching,
`libkernel.so`. An entry found in the cache is used as is, so a cache directory built on a machine
with nvcc can be carried to one without (`build` then needs no compiler). Concurrent builds of one
entry (pytest-xdist workers) are serialised by a file lock.

`python -m gemmconf_cutlass.codegen --help` renders or builds kernels from the shell.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gemmconf.backends.cache import cache_dir

ABI_VERSION = 1
ARCH = "sm_90a"
GENCODE = "-gencode=arch=compute_90a,code=sm_90a"
NVCC_FLAGS = (
    "-std=c++17",
    "-O3",
    "-DNDEBUG",
    "--expt-relaxed-constexpr",
    "-DCUTLASS_DEBUG_TRACE_LEVEL=0",
    "-Xcompiler=-fPIC",
    "-Xcompiler=-Wno-psabi",
    GENCODE,
)
# The launchable library links the CUDA runtime dynamically: in a torch process it is the runtime
# torch already loaded (one current device and stream state), and the library stays small enough
# to carry a cache of them to a machine without nvcc.
SO_FLAGS = ("-shared", "-cudart=shared")
# What a build can produce; "so" is the launchable shared library, the rest are artifacts.
OUTPUTS = ("ptx", "cubin", "sass", "so")
_FILES = {"ptx": "kernel.ptx", "cubin": "kernel.cubin", "sass": "kernel.sass", "so": "libkernel.so"}

# gemmconf dtype name -> (cutlass_library DataType name, bits)
DTYPES: dict[str, tuple[str, int]] = {
    "fp16": ("f16", 16),
    "bf16": ("bf16", 16),
    "fp32": ("f32", 32),
    "e4m3fn": ("e4m3", 8),
    "e5m2": ("e5m2", 8),
}
FP8 = ("e4m3fn", "e5m2")
SCALINGS = ("alpha", "tensorwise", "rowwise")
SOURCES = ("none", "matrix", "row", "col")


class CodegenError(ValueError):
    """A KernelSpec this generator does not produce."""


class BuildError(RuntimeError):
    """nvcc (or the toolchain lookup) failed; the message carries the command and its output."""


@dataclass(frozen=True)
class CutlassTileConfig:
    """The pinned CUTLASS configuration of a kernel (never the library's hash-dependent pick)."""

    tile: tuple[int, int, int]
    cluster: tuple[int, int, int] = (1, 1, 1)
    stages: int = 0  # 0: the collective builder fits as many as shared memory allows

    def describe(self) -> str:
        return (
            f"tile {'x'.join(map(str, self.tile))}, cluster "
            f"{'x'.join(map(str, self.cluster))}, stages {self.stages or 'auto'}"
        )


# Cooperative (two consumer warpgroups, 128-row tiles) with a TMA epilogue; K tile of 128 bytes.
TILE_16BIT = CutlassTileConfig((128, 128, 64))
TILE_8BIT = CutlassTileConfig((128, 128, 128))


@dataclass(frozen=True)
class KernelSpec:
    """One kernel. Majorness is torch's view: `a` is (M, K), `b` is (K, N).

    a_major: "k" (row-major a, K contiguous) or "m" (column-major a).
    b_major: "k" (column-major b, K contiguous: `w.t()` of a row-major (N, K) weight) or "n".
    D is always row-major (the launcher allocates it).
    """

    a_dtype: str
    b_dtype: str
    out_dtype: str
    a_major: str = "k"
    b_major: str = "k"
    scaling: str = "alpha"
    source: str = "none"
    source_dtype: str | None = None
    fast_accum: bool = False
    tiles: CutlassTileConfig | None = None  # None: TILE_16BIT or TILE_8BIT by operand width

    def __post_init__(self) -> None:
        problems = list(self._problems())
        if problems:
            raise CodegenError(f"unsupported CUTLASS kernel {self}: {'; '.join(problems)}")

    def _problems(self) -> Iterator[str]:
        for field in ("a_dtype", "b_dtype"):
            if getattr(self, field) not in ("fp16", "bf16", *FP8):
                yield f"{field} {getattr(self, field)!r} is not fp16, bf16, e4m3fn or e5m2"
        fp8 = self.a_dtype in FP8
        if (self.b_dtype in FP8) != fp8 or (not fp8 and self.a_dtype != self.b_dtype):
            yield f"operand dtypes {self.a_dtype} x {self.b_dtype} do not pair"
        if self.out_dtype not in ("fp16", "bf16", "fp32"):
            yield f"out_dtype {self.out_dtype!r} is not fp16, bf16 or fp32"
        if self.a_major not in ("k", "m") or self.b_major not in ("k", "n"):
            yield f"majorness a={self.a_major!r} b={self.b_major!r}"
        if fp8 and (self.a_major, self.b_major) != ("k", "k"):
            yield "fp8 wgmma reads both operands K-major (row-major a, column-major b)"
        if self.scaling not in SCALINGS:
            yield f"scaling {self.scaling!r} is not one of {', '.join(SCALINGS)}"
        if (self.scaling != "alpha") != fp8:
            yield "tensorwise/rowwise scaling is for fp8 operands, alpha for 16-bit ones"
        if self.fast_accum and not fp8:
            yield "fast_accum is an fp8 mode"
        if self.source not in SOURCES:
            yield f"source {self.source!r} is not one of {', '.join(SOURCES)}"
        if (self.source == "none") != (self.source_dtype is None):
            yield "source_dtype goes with a source, and only with one"
        if self.source_dtype is not None and self.source_dtype not in ("fp16", "bf16", "fp32"):
            yield f"source_dtype {self.source_dtype!r} is not fp16, bf16 or fp32"

    @property
    def fp8(self) -> bool:
        return self.a_dtype in FP8

    @property
    def tile_config(self) -> CutlassTileConfig:
        return self.tiles or (TILE_8BIT if self.fp8 else TILE_16BIT)

    @property
    def layout_name(self) -> str:
        """CUTLASS's letters for A, B, D: t = row-major, n = column-major (B is K x N)."""
        return ("t" if self.a_major == "k" else "n") + ("n" if self.b_major == "k" else "t") + "t"

    def suffix(self) -> str:
        """The epilogue's part of the kernel name."""
        source = self.source if self.source == "none" else f"{self.source}{self.source_dtype}"
        return f"gemmconf_{self.scaling}_{source}"

    def describe(self) -> str:
        accum = ", fast accumulation" if self.fast_accum else ""
        source = "" if self.source == "none" else f" + beta * {self.source} {self.source_dtype}"
        return (
            f"{self.a_dtype} x {self.b_dtype} -> {self.out_dtype}, a {self.a_major}-major, "
            f"b {self.b_major}-major, D = {self.scaling}(acc){source}{accum}; "
            f"{self.tile_config.describe()}"
        )


@dataclass(frozen=True)
class _Evt:
    """One EVT node: its C++ type and the brace initializer of its Arguments (reads `p`)."""

    type: str
    args: str


_NS = "cutlass::epilogue::fusion::"
_ROUND = "cutlass::FloatRoundStyle::round_to_nearest"


def _compute(fn: str, out: str, *children: _Evt) -> _Evt:
    node = f"{_NS}Sm90Compute<{fn}, {out}, float, {_ROUND}>"
    kids = ",\n    ".join(c.type for c in children)
    return _Evt(
        f"{_NS}Sm90EVT<{node},\n    {kids}>",
        "{" + ", ".join([*(c.args for c in children), "{}"]) + "}",
    )


def _fusion(spec: KernelSpec, out_tag: str) -> _Evt:
    """The EVT of `spec`: leaves read the launch arguments `p` of the shim."""
    acc = _Evt(f"{_NS}Sm90AccFetch", "{}")
    scalar = f"{_NS}Sm90ScalarBroadcast<float, cute::Stride<cute::_0, cute::_0, int64_t>"
    tile = "cute::Shape<cute::_{}, cute::_{}, cute::_{}>".format(*spec.tile_config.tile)
    last = "float" if spec.source != "none" else out_tag
    if spec.scaling == "alpha":
        alpha = _Evt(f"{scalar}>", "{{p.alpha}, {nullptr}, {}}")
        scaled = _compute("cutlass::multiplies", last, alpha, acc)
    elif spec.scaling == "tensorwise":  # the two scalars multiply (BroadcastCount 2)
        scales = _Evt(f"{scalar}, 2>", "{{1.0f, 1.0f}, {p.scale_a, p.scale_b}, {}}")
        scaled = _compute("cutlass::multiplies", last, scales, acc)
    else:
        row = _Evt(
            f"{_NS}Sm90RowBroadcast<0, {tile}, float, float, "
            "cute::Stride<cute::_0, cute::_1, int64_t>, 1>",
            "{p.scale_b, 0.0f, {cute::_0{}, cute::_1{}, int64_t(0)}}",
        )
        col = _Evt(
            f"{_NS}Sm90ColBroadcast<0, {tile}, float, float, "
            "cute::Stride<cute::_1, cute::_0, int64_t>, 1>",
            "{p.scale_a, 0.0f, {cute::_1{}, cute::_0{}, int64_t(0)}}",
        )
        scaled = _compute(
            "cutlass::multiplies", last, col, _compute("cutlass::multiplies", "float", row, acc)
        )
    if spec.source == "none":
        return scaled
    beta = _Evt(f"{scalar}>", "{{p.beta}, {nullptr}, {}}")
    element = _tag(spec.source_dtype)
    if spec.source == "matrix":
        source = _Evt(f"{_NS}Sm90SrcFetch<{element}>", "{}")
    elif spec.source == "row":
        source = _Evt(
            f"{_NS}Sm90RowBroadcast<0, {tile}, {element}, float, "
            "cute::Stride<cute::_0, cute::_1, int64_t>, 1>",
            f"{{static_cast<{element} const*>(p.c), {element}(0), "
            "{cute::_0{}, cute::_1{}, int64_t(p.c_stride_l)}}",
        )
    else:
        source = _Evt(
            f"{_NS}Sm90ColBroadcast<0, {tile}, {element}, float, "
            "cute::Stride<cute::_1, cute::_0, int64_t>, 1>",
            f"{{static_cast<{element} const*>(p.c), {element}(0), "
            "{cute::_1{}, cute::_0{}, int64_t(p.c_stride_l)}}",
        )
    return _compute("cutlass::homogeneous_multiply_add", out_tag, beta, source, scaled)


@functools.cache
def _library() -> tuple[object, object]:
    try:
        from cutlass_library import gemm_operation, library
    except ImportError as exc:
        raise CodegenError(
            "the cutlass backend needs cutlass_library: pip install 'nvidia-cutlass==4.2.0.0' "
            f"(the project's `cutlass` extra): {exc}"
        ) from exc
    return library, gemm_operation


def _tag(dtype: str | None) -> str:
    library, _ = _library()
    if dtype is None:
        return "void"
    return library.DataTypeTag[getattr(library.DataType, DTYPES[dtype][0])]


def _operation(spec: KernelSpec) -> object:
    """The cutlass_library GemmOperation of `spec` (names, tags, tile description)."""
    lib, gemm_operation = _library()
    dt = {name: getattr(lib.DataType, code) for name, (code, _) in DTYPES.items()}
    tiles = spec.tile_config
    bits = DTYPES[spec.a_dtype][1]
    instruction = (64, tiles.tile[1], 256 // bits)
    math = lib.MathInstruction(
        list(instruction),
        dt[spec.a_dtype],
        dt[spec.b_dtype],
        dt["fp32"],
        lib.OpcodeClass.TensorOp,
        lib.MathOperation.multiply_add,
    )
    description = lib.TileDescription(
        list(tiles.tile), tiles.stages, [4, 1, 1], math, 90, 90, list(tiles.cluster)
    )
    row, col = lib.LayoutType.RowMajor, lib.LayoutType.ColumnMajor
    a = lib.TensorDescription(dt[spec.a_dtype], row if spec.a_major == "k" else col, 128 // bits)
    b = lib.TensorDescription(dt[spec.b_dtype], col if spec.b_major == "k" else row, 128 // bits)
    c_type = dt[spec.source_dtype] if spec.source == "matrix" else lib.DataType.void
    c = lib.TensorDescription(c_type, row, lib.get_tma_alignment(c_type))
    d = lib.TensorDescription(dt[spec.out_dtype], row, lib.get_tma_alignment(dt[spec.out_dtype]))
    schedule = lib.KernelScheduleType.TmaWarpSpecializedCooperative
    if spec.fast_accum:
        schedule = lib.KernelScheduleType.TmaWarpSpecializedCooperativeFP8FastAccum

    class Operation(gemm_operation.GemmOperation):
        def procedural_name(self) -> str:
            return f"{super().procedural_name()}_{spec.suffix()}"

    return Operation(
        lib.GemmKind.Universal3x,
        90,
        description,
        a,
        b,
        c,
        dt["fp32"],
        epilogue_functor=_Declared(""),
        D=d,
        kernel_schedule=schedule,
        epilogue_schedule=lib.EpilogueScheduleType.TmaWarpSpecializedCooperative,
        tile_scheduler=lib.TileSchedulerType.Default,
    )


class _Declared:
    """An epilogue functor the emitter writes as a type name (the fusion's `using`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def emit_declaration(self) -> str:
        return self.name


@functools.cache
def kernel_name(spec: KernelSpec) -> str:
    return _operation(spec).procedural_name()


_INCLUDES = """\
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/numeric_types.h"
#include "cutlass/gemm/gemm.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
"""

# The launch arguments; launch.py mirrors this struct with ctypes. CUTLASS's B
# is (N, K, L): b_stride_n / b_stride_k are torch's b.stride(1) / b.stride(0).
_ARGS_STRUCT = """\
struct gemmconf_cutlass_args {
  int32_t abi;          // ABI_VERSION
  int32_t device;       // CUDA device ordinal of the pointers and stream
  int32_t m, n, k, l;   // problem size; l = batch count
  const void* a; int64_t a_stride_m, a_stride_k, a_stride_l;
  const void* b; int64_t b_stride_n, b_stride_k, b_stride_l;
  const void* c; int64_t c_stride_m, c_stride_l;   // source (matrix, row or column vector)
  void* d;       int64_t d_stride_m, d_stride_l;   // row-major output
  const float* scale_a; const float* scale_b;      // fp8 scales (tensorwise: 0-dim)
  float alpha, beta;
  void* workspace; uint64_t workspace_bytes;
  void* stream;         // cudaStream_t
};
"""

_SHIM = """
namespace gemmconf {
namespace {  // internal linkage: every kernel library defines these

using Gemm = cutlass::gemm::device::GemmUniversalAdapter<${name}>;
using Kernel = typename Gemm::GemmKernel;
using StrideA = typename Kernel::StrideA;
using StrideB = typename Kernel::StrideB;
using StrideC = typename Kernel::StrideC;
using StrideD = typename Kernel::StrideD;
using ElementA = typename Gemm::ElementA;
using ElementB = typename Gemm::ElementB;
using ElementC = typename Kernel::ElementC;
using ElementD = typename Kernel::ElementD;

thread_local char last_error[1024] = "";

int fail(int code, const char* what, const char* detail) {
  std::snprintf(last_error, sizeof(last_error), "%s: %s", what, detail);
  return code;
}

int sm_count(int device) {
  static int counts[64] = {0};
  if (device < 0 || device >= 64) return 0;
  if (counts[device] == 0) {
    cudaDeviceGetAttribute(&counts[device], cudaDevAttrMultiProcessorCount, device);
  }
  return counts[device];
}

typename Gemm::Arguments arguments(gemmconf_cutlass_args const& p) {
  StrideA stride_a{};
  ${stride_a}
  cute::get<2>(stride_a) = p.a_stride_l;
  StrideB stride_b{};
  ${stride_b}
  cute::get<2>(stride_b) = p.b_stride_l;
  StrideC stride_c{};
  cute::get<0>(stride_c) = p.c_stride_m;
  cute::get<2>(stride_c) = p.c_stride_l;
  StrideD stride_d{};
  cute::get<0>(stride_d) = p.d_stride_m;
  cute::get<2>(stride_d) = p.d_stride_l;
  typename Gemm::Arguments args{
    p.l > 1 ? cutlass::gemm::GemmUniversalMode::kBatched : cutlass::gemm::GemmUniversalMode::kGemm,
    {p.m, p.n, p.k, p.l},
    {static_cast<ElementA const*>(p.a), stride_a, static_cast<ElementB const*>(p.b), stride_b},
    {${fusion_args},
     ${c_pointer}, stride_c, static_cast<ElementD*>(p.d), stride_d}
  };
  args.hw_info.device_id = p.device;
  args.hw_info.sm_count = sm_count(p.device);
  return args;
}

// Makes the arguments' device current for the call and restores the caller's (torch's) device.
struct DeviceGuard {
  int previous = -1;
  cudaError_t error = cudaGetDevice(&previous);
  cudaError_t set(int device) { return device == previous ? cudaSuccess : cudaSetDevice(device); }
  ~DeviceGuard() {
    int current = -1;
    if (error == cudaSuccess && cudaGetDevice(&current) == cudaSuccess && current != previous) {
      cudaSetDevice(previous);
    }
  }
};

int check_abi(gemmconf_cutlass_args const* p) {
  if (p == nullptr || p->abi != ${abi}) {
    return fail(10, "gemmconf_cutlass_args", "ABI version mismatch (expected ${abi})");
  }
  return 0;
}

}  // namespace
}  // namespace gemmconf

extern "C" {

int gemmconf_abi_version() { return ${abi}; }

const char* gemmconf_kernel_name() { return "${name}"; }

const char* gemmconf_last_error() { return gemmconf::last_error; }

int gemmconf_workspace_size(gemmconf_cutlass_args const* p, uint64_t* bytes) {
  if (int bad = gemmconf::check_abi(p)) return bad;
  *bytes = gemmconf::Gemm::get_workspace_size(gemmconf::arguments(*p));
  return 0;
}

int gemmconf_run(gemmconf_cutlass_args const* p) {
  if (int bad = gemmconf::check_abi(p)) return bad;
  gemmconf::DeviceGuard guard;
  if (guard.error != cudaSuccess) {
    return gemmconf::fail(4, "cudaGetDevice", cudaGetErrorString(guard.error));
  }
  cudaError_t err = guard.set(p->device);
  if (err != cudaSuccess) return gemmconf::fail(4, "cudaSetDevice", cudaGetErrorString(err));
  auto args = gemmconf::arguments(*p);
  gemmconf::Gemm gemm;
  cutlass::Status status = gemm.can_implement(args);
  if (status != cutlass::Status::kSuccess) {
    return gemmconf::fail(1, "can_implement", cutlassGetStatusString(status));
  }
  if (gemmconf::Gemm::get_workspace_size(args) > p->workspace_bytes) {
    return gemmconf::fail(2, "initialize", "workspace too small");
  }
  auto stream = static_cast<cudaStream_t>(p->stream);
  status = gemm.initialize(args, p->workspace, stream);
  if (status != cutlass::Status::kSuccess) {
    return gemmconf::fail(2, "initialize", cutlassGetStatusString(status));
  }
  status = gemm.run(stream);
  err = cudaGetLastError();
  if (status != cutlass::Status::kSuccess) {
    return gemmconf::fail(3, "run", cutlassGetStatusString(status));
  }
  if (err != cudaSuccess) return gemmconf::fail(4, "launch", cudaGetErrorString(err));
  return 0;
}

}  // extern "C"
"""

# The dynamic (non-unit) stride of A / B per majorness; the unit mode stays cute::_1.
_STRIDE_A = {
    "k": "cute::get<0>(stride_a) = p.a_stride_m;",
    "m": "cute::get<1>(stride_a) = p.a_stride_k;",
}
_STRIDE_B = {
    "k": "cute::get<0>(stride_b) = p.b_stride_n;",
    "n": "cute::get<1>(stride_b) = p.b_stride_k;",
}


@functools.cache
def render(spec: KernelSpec) -> str:
    """The complete `.cu` source of `spec`'s kernel and its C launch shim."""
    lib, gemm_operation = _library()
    operation = _operation(spec)
    name = operation.procedural_name()
    fusion = _fusion(spec, _tag(spec.out_dtype))
    emitter = gemm_operation.EmitGemmUniversal3xInstance()
    # cutlass_library 4.2 reads a non-enum epilogue functor off the emitter, not the operation.
    emitter.epilogue_functor = _Declared(f"{name}_fusion")
    kernel = emitter.emit(operation)
    c_pointer = "static_cast<ElementC const*>(p.c)" if spec.source == "matrix" else "nullptr"
    shim = lib.SubstituteTemplate(
        _SHIM,
        {
            "name": name,
            "abi": str(ABI_VERSION),
            "stride_a": _STRIDE_A[spec.a_major],
            "stride_b": _STRIDE_B[spec.b_major],
            "fusion_args": fusion.args,
            "c_pointer": c_pointer,
        },
    )
    header = (
        f"// gemmconf cutlass backend: {name}\n// {spec.describe()}\n"
        f"// spec: {json.dumps(dataclasses.asdict(spec), sort_keys=True)}\n"
        f"// generated by gemmconf_cutlass/codegen.py (cutlass_library "
        f"{_cutlass_version()}); compile: nvcc {' '.join(NVCC_FLAGS)}\n"
    )
    fusion_decl = (
        f"\n// The epilogue (EVT): {spec.suffix()}\nusing {name}_fusion =\n  {fusion.type};\n"
    )
    return header + _INCLUDES + "\n" + _ARGS_STRUCT + fusion_decl + kernel + shim


@functools.cache
def _cutlass_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("nvidia-cutlass")
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def include_dirs() -> tuple[str, ...]:
    """CUTLASS headers: the copy the nvidia-cutlass wheel ships under cutlass_library/source."""
    library, _ = _library()
    source = Path(library.__file__).resolve().parent / "source"
    dirs = (source / "include", source / "tools" / "util" / "include")
    if not (dirs[0] / "cutlass" / "cutlass.h").is_file():
        raise BuildError(f"no CUTLASS headers at {dirs[0]} (the nvidia-cutlass wheel ships them)")
    return tuple(str(d) for d in dirs)


def find_nvcc() -> str | None:
    """nvcc from $CUDACXX, $CUDA_HOME/bin, PATH, then /usr/local/cuda/bin."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    candidates = [
        os.environ.get("CUDACXX"),
        home and os.path.join(home, "bin", "nvcc"),
        "nvcc",
        "/usr/local/cuda/bin/nvcc",
    ]
    for candidate in candidates:
        found = candidate and shutil.which(candidate)
        if found:
            return found
    return None


def find_cuobjdump() -> str | None:
    """cuobjdump beside nvcc, on PATH, or the copy Triton's wheel bundles."""
    nvcc = find_nvcc()
    candidates = [
        nvcc and os.path.join(os.path.dirname(nvcc), "cuobjdump"),
        "cuobjdump",
        "/usr/local/cuda/bin/cuobjdump",
    ]
    with contextlib.suppress(ImportError):
        import triton

        candidates.append(
            os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
        )
    for candidate in candidates:
        found = candidate and shutil.which(candidate)
        if found:
            return found
    return None


@functools.cache
def nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout
    release = [line for line in out.splitlines() if "release" in line]
    return release[-1].strip() if release else out.strip()


def cache_root() -> Path:
    return cache_dir("cutlass")


@dataclass(frozen=True)
class Built:
    """One cache entry: the source and whatever outputs were asked for."""

    directory: Path
    name: str
    source: str

    def path(self, output: str) -> Path:
        return self.directory / _FILES[output]

    def has(self, output: str) -> bool:
        return self.path(output).is_file()

    def text(self, output: str) -> str:
        return self.path(output).read_text()

    def record(self) -> dict[str, object]:
        path = self.directory / "build.json"
        return json.loads(path.read_text()) if path.is_file() else {}


def source_key(source: str) -> str:
    flags = "\n".join((*NVCC_FLAGS, *SO_FLAGS))
    return hashlib.sha256(f"abi {ABI_VERSION}\n{flags}\n{source}".encode()).hexdigest()


def entry_for(source: str, name: str, root: Path | None = None) -> Built:
    directory = (root or cache_root()) / f"{name[:80]}-{source_key(source)[:20]}"
    return Built(directory, name, source)


def build(
    source: str,
    name: str,
    outputs: Sequence[str] = ("ptx", "cubin", "sass"),
    *,
    root: Path | None = None,
    timeout_s: float = 900,
) -> Built:
    """Compile `source` (unless the cache has it) and return its cache entry.

    `outputs` ⊆ OUTPUTS. "ptx"/"cubin" come from a device-only compile (`-ptx` then ptxas);
    "so" is the shared library for launching (with `--keep`, so its PTX and cubin are kept too).
    "sass" needs a cuobjdump; without one it is left out silently (see `find_cuobjdump`).
    """
    unknown = set(outputs) - set(OUTPUTS)
    if unknown:
        raise ValueError(f"unknown build outputs {sorted(unknown)}; choose from {OUTPUTS}")
    entry = entry_for(source, name, root)
    wanted = [o for o in outputs if not (o == "sass" and find_cuobjdump() is None)]
    missing = [o for o in wanted if not entry.has(o)]
    if not missing:
        return entry
    if missing == ["sass"] and entry.has("cubin"):  # a carried entry: no compiler needed
        with _locked(entry.directory / ".lock"):
            _disassemble(entry)
        return entry
    if find_nvcc() is None:
        raise BuildError(
            f"kernel {name} is not in the cache ({entry.directory}) and no nvcc was found "
            "(CUDACXX, CUDA_HOME, PATH, /usr/local/cuda/bin): install the CUDA toolkit or carry "
            "a cache built elsewhere ($GEMMCONF_CACHE)"
        )
    entry.directory.mkdir(parents=True, exist_ok=True)
    with _locked(entry.directory / ".lock"):
        missing = [o for o in wanted if not entry.has(o)]
        if missing:
            _compile(entry, missing, timeout_s)
    return entry


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _compile(entry: Built, missing: list[str], timeout_s: float) -> None:
    nvcc = find_nvcc()
    assert nvcc is not None  # build() checked
    (entry.directory / "kernel.cu").write_text(entry.source)
    includes = [f"-I{d}" for d in include_dirs()]
    record = entry.record()
    record.update({"name": entry.name, "nvcc": nvcc_version(nvcc), "flags": list(NVCC_FLAGS)})
    with tempfile.TemporaryDirectory(dir=entry.directory, prefix="build-") as scratch:
        work = Path(scratch)
        steps = record.setdefault("steps", {})
        if "so" in missing:
            rpaths = [f"-Xlinker=-rpath={d}" for d in _runtime_dirs(nvcc)]
            command = [
                nvcc,
                *NVCC_FLAGS,
                *includes,
                *SO_FLAGS,
                *rpaths,
                "--keep",
                f"--keep-dir={work}",
                "-o",
                str(work / _FILES["so"]),
                "kernel.cu",
            ]
            steps["so"] = _run(command, entry, timeout_s)
            kept = {"ptx": sorted(work.glob("*.ptx")), "cubin": sorted(work.glob("*.cubin"))}
            for kind, paths in kept.items():
                if paths and not entry.has(kind):
                    os.replace(paths[0], work / _FILES[kind])
        elif {"ptx", "cubin"} & set(missing) or ("sass" in missing and not entry.has("cubin")):
            ptx = work / _FILES["ptx"]
            command = [nvcc, *NVCC_FLAGS, *includes, "-ptx", "-o", str(ptx), "kernel.cu"]
            steps["ptx"] = _run(command, entry, timeout_s)
            ptxas = os.path.join(os.path.dirname(nvcc), "ptxas")
            command = [
                ptxas if shutil.which(ptxas) else "ptxas",
                f"-arch={ARCH}",
                "-O3",
                "-o",
                str(work / _FILES["cubin"]),
                str(ptx),
            ]
            steps["cubin"] = _run(command, entry, timeout_s)
        for kind in ("ptx", "cubin", "so"):
            if (work / _FILES[kind]).is_file() and not entry.has(kind):
                os.replace(work / _FILES[kind], entry.path(kind))
    (entry.directory / "build.json").write_text(json.dumps(record, indent=1) + "\n")
    if "sass" in missing:
        _disassemble(entry)


def _runtime_dirs(nvcc: str) -> list[str]:
    """Toolkit library folders holding libcudart, for the library's rpath (used when no torch
    process has loaded a CUDA runtime first, e.g. loading it on a machine without a GPU)."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    bins = {os.path.dirname(nvcc), os.path.dirname(os.path.realpath(nvcc))}
    candidates = [
        *(os.path.join(b, "..", "lib64") for b in sorted(bins)),
        home and os.path.join(home, "lib64"),
        "/usr/local/cuda/lib64",
    ]
    found: list[str] = []
    for candidate in candidates:
        if candidate and os.path.isfile(os.path.join(candidate, "libcudart.so")):
            path = os.path.realpath(candidate)
            if path not in found:
                found.append(path)
    return found


def _disassemble(entry: Built) -> None:
    """kernel.sass from kernel.cubin, when a cuobjdump is found."""
    cuobjdump = find_cuobjdump()
    if cuobjdump is None or not entry.has("cubin") or entry.has("sass"):
        return
    dump = subprocess.run(
        [cuobjdump, "-sass", str(entry.path("cubin"))], capture_output=True, text=True, check=False
    )
    if dump.returncode != 0:
        raise BuildError(f"cuobjdump -sass failed on {entry.path('cubin')}:\n{dump.stderr}")
    entry.path("sass").write_text(dump.stdout)


def _run(command: list[str], entry: Built, timeout_s: float) -> dict[str, object]:
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command,
            cwd=entry.directory,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise BuildError(
            f"{command[0]} timed out after {timeout_s:.0f} s building {entry.name}"
        ) from exc
    seconds = round(time.perf_counter() - start, 2)
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()
        errors = [line for line in output.splitlines() if "error" in line]
        head = "\n".join(errors[:20]) or output[-4000:]
        raise BuildError(
            f"building CUTLASS kernel {entry.name} failed (exit "
            f"{done.returncode}):\n$ {' '.join(command)}\n{head}\n"
            f"(source: {entry.directory / 'kernel.cu'})"
        )
    return {"command": command, "seconds": seconds}


def _spec_from_args(args: argparse.Namespace) -> KernelSpec:
    return KernelSpec(
        a_dtype=args.dtype,
        b_dtype=args.b_dtype or args.dtype,
        out_dtype=args.out_dtype or ("bf16" if args.dtype in FP8 else args.dtype),
        a_major=args.a_major,
        b_major=args.b_major,
        scaling=args.scaling or ("tensorwise" if args.dtype in FP8 else "alpha"),
        source=args.source,
        source_dtype=args.source_dtype,
        fast_accum=args.fast_accum,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gemmconf_cutlass.codegen",
        description="Render or build one CUTLASS sm90 GEMM kernel of the cutlass backend.",
    )
    parser.add_argument("action", choices=("render", "build"))
    parser.add_argument("--dtype", default="fp16", choices=("fp16", "bf16", *FP8))
    parser.add_argument("--b-dtype", choices=("fp16", "bf16", *FP8))
    parser.add_argument("--out-dtype", choices=("fp16", "bf16", "fp32"))
    parser.add_argument("--a-major", default="k", choices=("k", "m"))
    parser.add_argument("--b-major", default="k", choices=("k", "n"))
    parser.add_argument("--scaling", choices=SCALINGS)
    parser.add_argument("--source", default="none", choices=SOURCES)
    parser.add_argument("--source-dtype", choices=("fp16", "bf16", "fp32"))
    parser.add_argument("--fast-accum", action="store_true")
    parser.add_argument(
        "--outputs",
        default="ptx,cubin,sass",
        help=f"comma list of {', '.join(OUTPUTS)} (build only)",
    )
    args = parser.parse_args(argv)
    spec = _spec_from_args(args)
    source = render(spec)
    if args.action == "render":
        sys.stdout.write(source)
        return 0
    entry = build(source, kernel_name(spec), [o for o in args.outputs.split(",") if o])
    print(entry.directory)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
