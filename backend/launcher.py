"""Running one lowered GEMM: from the tensors of one call to one kernel launch.

A `GemmCall` is what the rewritten FX graph calls in place of a GEMM node and its fused epilogue.
Everything that depends on the tensors is decided here, per call, so one compiled graph serves
every shape set (dynamic shapes never recompile the graph):

- sizes and strides are read from the tensors and passed as runtime kernel arguments;
- zero-size outputs (M, N or batch 0) return an empty tensor without a launch; K = 0 launches
  (the K loop runs zero times, so the epilogue sees zeros: bias, beta * C, ...);
- the operand path: a tensor descriptor (TMA) for an operand when the target has TMA, K > 0,
  its base is 16-byte aligned, its leading and batch strides are 16-byte multiples and its last
  stride is 1 (row-major, or column-major read as the transpose); masked pointers otherwise;
- the tile config from `configs` for (arch class, dtype, size class), or autotuned on a GPU;
- the persistent kernel on a GPU when the problem has at least two tiles per SM;
- on sm90, medium and large bf16/fp16 GEMMs and fp8 ones with rowwise or tensorwise scales and
  no fast accumulation run `hopper_gemm_kernel` instead (a producer warp and two consumer
  warpgroups, hopper.py; `hopper_plan` says exactly when);
- TF32 for fp32 operands only when the run allows it and K >= TF32_MIN_K.

Specialisation rules (what makes Triton compile a new kernel variant, never a new graph):
constexpr flags (tiles, `A_DESC`/`B_DESC` path, `SCALING`, `DOT_UPCAST`, `INPUT_PRECISION`,
`FAST_ACCUM`, epilogue ops, `INDEX_64` when an offset may pass 2**31,
`BF16_RNE` in the interpreter) and Triton's own argument specialisation (16-divisibility of
pointers and ints, ints equal to 1; small problems launch `gemm_kernel_unaligned`, compiled
without the 16-divisibility, so their many size and stride patterns share a compile: see
`unaligned_suffices`). The graph itself is specialised only by what dynamo
guards on (dtypes, ranks, and sizes 0/1), by the TF32 flag, and by which nodes fuse.

The call path: everything above depends only on the call's *signature* (dtypes, sizes, strides,
16-byte alignment of each pointer, devices, the view shapes of the epilogue), never on values.
So the first call with a signature resolves a `CallPlan` (eager checks, problem, tile config,
grid, the kernel's whole argument list with the tensors left as slots, and Triton's compiled
kernel); every later call with that signature looks the plan up by a tuple of those facts,
allocates the output, fills the tensor slots and launches the compiled kernel directly
(`TritonLauncher`: no argument binding, specialisation or cache lookup by Triton's JIT per
call). With `BackendOptions.cudagraphs`, a plan also captures its launch in a CUDA graph per set
of input addresses once it has seen that set twice, and replays it while the output it handed
out last time is no longer referenced (the graph writes that same memory again).

Validation: eager's meta functions reject bad shapes and dtypes while dynamo traces. The few
checks eager makes only in its CUDA kernels are mirrored (`eager_checks`): the eager op is called
so that it raises its own exception.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import torch

from gemmconf.gemm.dtypes import FP8_TORCH
from gemmconf.gemm.ops import OPS, OpSpec
from gemmconf.gemm.scaling import classify
from gemmconf_reference import compat, compile_once, configs, eager_checks, kernels
from gemmconf_reference.crosscompile import CompileRequest, ParamSpec, specialize
from gemmconf_reference.epilogue import EpilogueStep
from gemmconf_reference.target import Target

INT32_LIMIT = 2**31
TF32_MIN_K = 16  # shorter K loops (under two TF32 MMA k-steps) stay IEEE fp32
# Problems within both limits launch `kernels.UNALIGNED` (compiled once for every alignment of
# their sizes, strides and offsets): 256^3 multiply-adds, and operands and output of at most 2**20
# elements (2-4 MiB). Their kernels take microseconds whatever their loads' vector width, and the
# limits keep out every decode and prefill shape of the benchmarks (16 x 4096 x 4096 is 2**28).
UNALIGNED_MAX_MACS = 2**24
UNALIGNED_MAX_ELEMENTS = 2**20
# options that pick a variant of the Triton kernels: set away from their defaults, they keep
# GEMMs there rather than on `hopper_gemm_kernel`
TRITON_KERNEL_OPTIONS = (
    "persistent",
    "warp_specialize",
    "autotune",
)


@dataclass(frozen=True)
class BackendOptions:
    """Knobs of the reference backend (the harness sets `target_arch`)."""

    target_arch: str | None = None  # codegen arch without a GPU; artifacts' arch
    persistent: str = "auto"  # "auto" (GPU, large problems), "always", "never"
    autotune: bool = False  # benchmark `configs.candidates` per kernel signature (GPU only)
    # CPU eager has no blockwise-scaled _scaled_mm and rejects it; True runs the interpreter's
    # blockwise kernel anyway (to test it without a GPU) instead of raising eager's error
    blockwise_on_cpu: bool = False
    # replay each call's launch from a CUDA graph per set of input addresses (GPU only; see the
    # module docstring for when a graph is captured and when it may be replayed)
    cudagraphs: bool = False
    # the persistent kernel's tile loop warp-specialized (Triton's automatic producer/consumer
    # split; sm90 and later): an option until timed faster
    warp_specialize: bool = False
    # K slices of `splitk_gemm_kernel`: "auto" (`split_count`: sm90 problems whose tiles leave
    # SMs idle and whose K loop is long), "never", a number (any target, the interpreter
    # too, wherever the kernel applies; capped at K's tiles), or "stream": stream-K, one program
    # per SM, each an equal share of all tiles' K steps (`stream_programs`; any target)
    split_k: str | int = "auto"

    def __post_init__(self) -> None:
        if self.split_k not in ("auto", "never", "stream") and not (
            isinstance(self.split_k, int) and self.split_k >= 1
        ):
            raise ValueError(
                f"split_k must be 'auto', 'never', 'stream' or a positive int: {self.split_k!r}"
            )


def picks_triton_variant(options: BackendOptions) -> bool:
    """Whether an option of TRITON_KERNEL_OPTIONS is away from its default (the kernels it asks
    for then run every GEMM they can: neither the Gluon kernel nor the decode tile applies)."""
    defaults = BackendOptions()
    return any(getattr(options, name) != getattr(defaults, name) for name in TRITON_KERNEL_OPTIONS)


@dataclass(frozen=True)
class GemmSpec:
    """What the lowering decided for one GEMM node, fixed for the graph's lifetime."""

    name: str
    op: str  # a name in gemmconf.gemm.OPS (lowering.LOWERED_OPS)
    dtype: torch.dtype  # of A (B has the same, or another fp8 type for _scaled_mm)
    steps: tuple[EpilogueStep, ...]
    gemm_dtype: torch.dtype  # the GEMM node's own result (`out_dtype` of _scaled_mm)
    out_dtype: torch.dtype  # after the fused epilogue
    has_bias: bool  # _scaled_mm's bias, then the epilogue's operand 0
    use_fast_accum: bool  # _scaled_mm's flag: chain fp8 MMAs (True) or promote per tile
    input_precision: str  # "ieee" or "tf32" (fp32 operands only)
    gemm_node: str
    fused_nodes: tuple[str, ...]
    operand_names: tuple[str, ...]  # FX names of the epilogue's tensor operands
    input_names: tuple[str, ...]  # FX names of A, B (and the fp8 scales)

    @property
    def gemm(self) -> OpSpec:
        return OPS[self.op]

    @property
    def batched(self) -> bool:
        return self.gemm.batched

    def epilogue_ops(self) -> tuple[str, ...]:
        ops = [step.op for step in self.steps]
        return tuple(ops + ["none"] * (kernels.MAX_EPILOGUE_STEPS - len(ops)))


@dataclass(frozen=True)
class OperandLayout:
    """How a (batch, rows, cols) operand sits in memory, as the kernel paths care."""

    major: str  # "row" (cols contiguous), "col" (rows contiguous) or "strided"
    tma_ok: bool  # a tensor descriptor may read it (alignment rules in the module docstring)

    @staticmethod
    def of(t: torch.Tensor, batch_stride: int) -> OperandLayout:
        """`t` is (batch, rows, cols); `batch_stride` is what the kernel steps between batches."""
        _, row_stride, col_stride = t.stride()
        size = t.element_size()
        base_ok = t.data_ptr() % 16 == 0 and (batch_stride * size) % 16 == 0
        if col_stride == 1 and row_stride > 0:
            return OperandLayout("row", base_ok and (row_stride * size) % 16 == 0)
        if row_stride == 1 and col_stride > 0:
            return OperandLayout("col", base_ok and (col_stride * size) % 16 == 0)
        return OperandLayout("strided", False)


@dataclass(frozen=True)
class Problem:
    """The facts about one call that decide the kernel variant (no tensor references)."""

    dtype: torch.dtype  # A and B element type
    batch: int
    m: int
    n: int
    k: int
    a: OperandLayout
    b: OperandLayout
    scaling: str  # "none", "tensorwise", "rowwise", "blockwise"
    int_acc: bool
    input_precision: str
    fast_accum: bool  # chain the MMA accumulator (False for fp8 without use_fast_accum)
    epilogue: tuple[str, ...]
    index_64: bool
    out_dtype: torch.dtype | None = None  # the output's element type; None: not known

    @property
    def sizes(self) -> str:
        return f"B={self.batch} M={self.m} N={self.n} K={self.k}"


@dataclass(frozen=True)
class LaunchPlan:
    kernel: str  # a name in kernels.KERNELS
    config: configs.TileConfig
    constexprs: tuple[tuple[str, Any], ...]
    grid: tuple[int, ...]
    # `splitk_gemm_kernel`'s workspace: (fp32 partial-sum elements, arrival counters)
    workspace: tuple[int, int] | None = None

    def flags(self) -> dict[str, Any]:
        return dict(self.constexprs)

    def describe(self, sizes: str) -> str:
        """This launch's line in a call's plan text: kernel, grid, the problem's `sizes`, and
        the constexprs."""
        flags = ", ".join(f"{k}={v}" for k, v in self.constexprs)
        return f"  launch {self.kernel}[grid={self.grid}] {sizes}: {flags}"

    @property
    def tma(self) -> bool:
        """Whether the kernel makes tensor descriptors in-kernel (Triton's allocator then)."""
        flags = self.flags()
        paths = (flags.get("A_DESC", "none"), flags.get("B_DESC", "none"))
        return self.kernel == kernels.HOPPER or paths != ("none", "none")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def descriptor_paths(problem: Problem, target: Target) -> tuple[str, str]:
    """(A_DESC, B_DESC): which operands a tensor descriptor reads, on this target."""
    if (
        not (target.has_tma and compat.has_tensor_descriptors())
        or problem.k == 0
        or problem.index_64
    ):
        return "none", "none"
    a_desc = {"row": "mk", "col": "km"}.get(problem.a.major, "none") if problem.a.tma_ok else "none"
    b_desc = {"row": "kn", "col": "nk"}.get(problem.b.major, "none") if problem.b.tma_ok else "none"
    return a_desc, b_desc


def dot_upcast(problem: Problem, target: Target) -> str:
    fp8 = problem.dtype in FP8_TORCH
    if target.interpreter and (problem.dtype == torch.bfloat16 or fp8):
        # the interpreter's bf16 tl.dot is wrong (triton#11584); its fp8 conversion loses NaN
        return "fp32"
    if fp8 and not target.has_fp8_mma:
        return "fp16"  # exact for fp8 values; pre-sm89 has no fp8 MMA
    return "none"


def input_precision(problem: Problem, target: Target) -> str:
    """TF32 where the run allows it, the K loop is long enough to gain, and a GPU runs it."""
    if target.interpreter:
        return "ieee"  # eager on the CPU has no TF32 (and the interpreter ignores it)
    if problem.k < TF32_MIN_K:
        return "ieee"  # memory-bound anyway; cuBLAS also keeps such short reductions in fp32
    return problem.input_precision


def output_tiles(problem: Problem, config: configs.TileConfig) -> int:
    """Output tiles of `config` over the problem, every batch entry included."""
    return problem.batch * _cdiv(problem.m, config.block_m) * _cdiv(problem.n, config.block_n)


def use_persistent(
    problem: Problem, config: configs.TileConfig, target: Target, options: BackendOptions
) -> bool:
    tiles = output_tiles(problem, config)
    if options.persistent == "always":
        return True
    if options.persistent == "never" or target.interpreter:
        return False
    # CUDA limits grid y/z to 65535: larger batches or column counts need the persistent walk
    too_big = problem.batch > 65535 or _cdiv(problem.n, config.block_n) > 65535
    return too_big or tiles >= 2 * target.num_sms


def hopper_plan(problem: Problem, target: Target, options: BackendOptions) -> LaunchPlan | None:
    """`hopper_gemm_kernel`'s plan where it applies, else None: an sm90 GPU (or artifacts for
    one); bf16 or fp16, or fp8 with rowwise or tensorwise scales and without fast accumulation;
    one batch, no fused epilogue; A row-major and B column-major (fp8) or either (16-bit),
    both through tensor descriptors; N a multiple of 16 (the output's TMA store); a "medium" or
    "large" problem with tiles for at least half the SMs (with fewer, one program per SM leaves
    most of the GPU idle: a 512x4096x4096 bf16 linear measured 0.61x cuBLAS here against the
    Triton kernel's 0.80x); and the options that pick Triton-kernel variants at their defaults.
    The ring has as many of the tile's stages as fit beside the output's buffers
    (`configs.hopper_stages`: fp8 with a 4-byte output gets 5 of 6)."""
    fp8 = problem.dtype in FP8_TORCH
    paths = descriptor_paths(problem, target)
    readable = {("mk", "nk")} if fp8 else {("mk", "nk"), ("mk", "kn")}  # fp8 wgmma: K-major B
    if (
        kernels.HOPPER not in kernels.KERNELS
        or target.interpreter
        or target.arch_class != "sm90"
        or picks_triton_variant(options)
        or problem.dtype not in (*FP8_TORCH, torch.bfloat16, torch.float16)
        or (fp8 and (problem.scaling not in ("rowwise", "tensorwise") or problem.fast_accum))
        or problem.batch != 1
        or any(op != "none" for op in problem.epilogue)
        or problem.n % 16
        or paths not in readable
        or configs.size_class(problem.batch, problem.m, problem.n) not in ("medium", "large")
    ):
        return None
    config = configs.HOPPER["fp8" if fp8 else "16bit"]
    tiles = output_tiles(problem, config)
    if 2 * tiles < target.num_sms:
        return None
    out_itemsize = 4 if problem.out_dtype is None else problem.out_dtype.itemsize  # what fits
    config = configs.hopper_stages(config, problem.dtype.itemsize, out_itemsize)
    flags = {
        "BLOCK_N": config.block_n,
        "BLOCK_K": config.block_k,
        "STAGES": config.num_stages,
        "GROUP_M": config.group_m,
        "NUM_PROGRAMS": min(target.num_sms, tiles),
        "B_KN": paths[1] == "kn",
        "PROMOTE": fp8,
        "SCALING": problem.scaling,
    }
    return LaunchPlan(kernels.HOPPER, config, tuple(flags.items()), (flags["NUM_PROGRAMS"],))


# split-K (kernels/splitk.py), "auto": problems on the sm90 decode tile (configs.decode_tile),
# each K slice at least SPLIT_MIN_K_TILES K tiles long, as many slices as keep tiles x slices
# within one wave of programs, at most SPLIT_MAX. 32 K tiles (4096 of K at BLOCK_K 128): on an
# H200 (2026-11-29, tune_sm90.py --fill) the o projection's 64 tiles of 64x64 ran 1.017x cuBLAS
# whole and 1.001x in 2 slices of 16 K tiles, down's (K 14336) 0.891x whole and 0.990x in 2
SPLIT_MIN_K_TILES = 32
SPLIT_MAX = 8


def splittable(problem: Problem) -> bool:
    """Whether `splitk_gemm_kernel` computes `problem`: one batch, 32-bit offsets, a
    floating-point accumulator, no fp8 scale applied inside the K loop (blockwise), K > 0."""
    return (
        problem.batch == 1
        and not problem.int_acc
        and not problem.index_64
        and problem.scaling in ("none", "tensorwise", "rowwise")
        and problem.k > 0
    )


def split_count(
    problem: Problem,
    config: configs.TileConfig,
    target: Target,
    options: BackendOptions,
    decode: bool = False,
) -> int:
    """How many K slices `splitk_gemm_kernel` cuts `problem` into; 1: the dense kernels.
    "auto" splits problems on the decode tile (`decode`: `decode_plan` chose it, so sm90
    compiled, 16-bit, M within one tile row, a long K) whose tiles leave SMs idle: as many
    slices as fit the SMs beside the tiles, each at least SPLIT_MIN_K_TILES K tiles long. The
    count depends on the tile count and K, never on M within the tile row: configs.py's
    docstring says which calls sum in which order."""
    if options.split_k in ("never", "stream") or not splittable(problem):
        return 1
    tiles = output_tiles(problem, config)
    k_tiles = _cdiv(problem.k, config.block_k)
    if isinstance(options.split_k, int):
        splits = min(options.split_k, k_tiles)
    elif decode:
        splits = min(SPLIT_MAX, target.num_sms // tiles, k_tiles // SPLIT_MIN_K_TILES)
    else:
        return 1
    if splits < 2 or split_workspace(problem, config, splits, 0)[0] >= INT32_LIMIT:
        return 1
    return splits


def split_workspace(
    problem: Problem, config: configs.TileConfig, splits: int, programs: int
) -> tuple[int, int]:
    """`splitk_gemm_kernel`'s workspace (fp32 partial-sum elements, arrival counters): a partial
    per (slice, tile), or stream-K's two per program (`programs` not 0); a counter per tile."""
    tiles = output_tiles(problem, config)
    block = config.block_m * config.block_n
    return (programs * 2 if programs else splits * tiles) * block, tiles


def stream_programs(
    problem: Problem,
    config: configs.TileConfig,
    target: Target,
    options: BackendOptions,
    decode: bool = False,
) -> int:
    """How many programs stream-K (`splitk_gemm_kernel` with STREAM) shares `problem`'s (tile,
    K tile) steps among; 0: not stream-K. "auto": fp8 problems on the decode tile (`decode`),
    configs.DECODE_STREAM_PER_SM programs per SM; "stream": one per SM, wherever the kernel
    applies and a tile has two K tiles or more. Never more programs than steps (every program's
    share holds one at least: the kernel counts a tile's parts by their owners)."""
    k_tiles = _cdiv(problem.k, config.block_k)
    if not splittable(problem) or k_tiles < 2:
        return 0
    if options.split_k == "stream":
        programs = target.num_sms
    elif options.split_k == "auto" and decode and configs.dtype_class(problem.dtype) == "fp8":
        programs = configs.DECODE_STREAM_PER_SM * target.num_sms
    else:
        return 0
    programs = min(programs, output_tiles(problem, config) * k_tiles)
    if split_workspace(problem, config, 1, programs)[0] >= INT32_LIMIT:
        return 0
    return programs


def split_plan(
    problem: Problem,
    config: configs.TileConfig,
    flags: dict[str, Any],
    splits: int,
    programs: int,
) -> LaunchPlan:
    """`splitk_gemm_kernel`'s launch: `splits` K slices per tile, or stream-K over `programs`
    (when not 0), with the workspace each needs."""
    constexprs = {name for name, constexpr in KERNEL_SIGNATURES[kernels.SPLITK] if constexpr}
    split_flags = tuple((k, v) for k, v in flags.items() if k in constexprs)
    tiles_m, tiles_n = _cdiv(problem.m, config.block_m), _cdiv(problem.n, config.block_n)
    grid = (programs,) if programs else (tiles_m, tiles_n, splits)
    stream = (("STREAM", bool(programs)),)
    workspace = split_workspace(problem, config, splits, programs)
    return LaunchPlan(kernels.SPLITK, config, split_flags + stream, grid, workspace)


def decode_plan(
    problem: Problem, target: Target, options: BackendOptions
) -> configs.TileConfig | None:
    """The sm90 decode tile (`configs.decode_tile`) where it applies: compiled (not the
    interpreter), one batch, the options that pick Triton-kernel variants at their defaults,
    and 16-bit: fewer tiles than two waves (no persistent walk); fp8: any tile count (it runs
    stream-K, `stream_programs`), tensorwise or rowwise scales (what `splittable` takes)."""
    size = configs.size_class(problem.batch, problem.m, problem.n)
    config = configs.decode_tile(
        target.arch_class, problem.dtype, size, problem.m, problem.n, problem.k, target.num_sms
    )
    if (
        config is None
        or target.interpreter
        or problem.batch != 1
        or picks_triton_variant(options)
        or (
            output_tiles(problem, config) >= 2 * target.num_sms
            if configs.dtype_class(problem.dtype) != "fp8"
            else not splittable(problem)
        )
    ):
        return None
    return config


def plan_launch(
    problem: Problem,
    target: Target,
    options: BackendOptions,
    config: configs.TileConfig | None = None,
) -> LaunchPlan:
    """The kernel, constexprs and grid for `problem` on `target` (pure: artifacts reuse it)."""
    decode = None
    if config is None:
        hopper = hopper_plan(problem, target, options)
        if hopper is not None:
            return hopper
        decode = config = decode_plan(problem, target, options)
    if config is None and target.interpreter:
        config = configs.interpreter_tile(problem.dtype, problem.n, problem.k)
    elif config is None:
        size = configs.size_class(problem.batch, problem.m, problem.n)
        config = configs.lookup(target.arch_class, problem.dtype, size)
        config = configs.deepen(
            config,
            target.arch_class,
            size,
            output_tiles(problem, config),
            target.num_sms,
            problem.k,
            problem.dtype.itemsize,
        )
    programs = stream_programs(problem, config, target, options, decode is not None)
    splits = 1 if programs else split_count(problem, config, target, options, decode is not None)
    # the decode tile reads through pointers: faster there than tensor descriptors (configs.py)
    a_desc, b_desc = ("none", "none") if decode else descriptor_paths(problem, target)
    flags: dict[str, Any] = {
        "BLOCK_M": config.block_m,
        "BLOCK_N": config.block_n,
        "BLOCK_K": config.block_k,
        "A_DESC": a_desc,
        "B_DESC": b_desc,
        "SCALING": problem.scaling,
        "INT_ACC": problem.int_acc,
        "DOT_UPCAST": dot_upcast(problem, target),
        "INPUT_PRECISION": input_precision(problem, target),
        "FAST_ACCUM": problem.fast_accum,
        **{f"EPI{i}": op for i, op in enumerate(problem.epilogue)},
        "INDEX_64": problem.index_64,
        "BF16_RNE": target.interpreter,  # the interpreter truncates fp32 -> bf16
    }
    if splits > 1 or programs:
        return split_plan(problem, config, flags, splits, programs)
    if use_persistent(problem, config, target, options):
        flags["GROUP_M"] = config.group_m
        flags["NUM_PROGRAMS"] = target.num_sms
        flags["WARP_SPECIALIZE"] = options.warp_specialize and target.has_tma
        return LaunchPlan("gemm_persistent_kernel", config, tuple(flags.items()), (target.num_sms,))
    grid = (_cdiv(problem.m, config.block_m), _cdiv(problem.n, config.block_n), problem.batch)
    kernel = kernels.UNALIGNED if unaligned_suffices(problem) else "gemm_kernel"
    return LaunchPlan(kernel, config, tuple(flags.items()), grid)


def unaligned_suffices(problem: Problem) -> bool:
    """Whether `problem` is small enough for `kernels.UNALIGNED` (UNALIGNED_MAX_MACS)."""
    b, m, n, k = problem.batch, problem.m, problem.n, problem.k
    macs, elements = b * m * n * k, b * (m * k + k * n + m * n)
    return macs <= UNALIGNED_MAX_MACS and elements <= UNALIGNED_MAX_ELEMENTS


# (name, is_constexpr) for each parameter of each kernel
KERNEL_SIGNATURES = {name: kernels.parameters(fn) for name, fn in kernels.KERNELS.items()}


@dataclass(frozen=True)
class LaunchRecord:
    """One distinct launch, as data: enough to cross-compile it again for any arch."""

    gemm: str
    problem: Any  # Problem, or a grouped / block-scaled problem with its own `plan`
    # every runtime argument, specialised by Triton's default rules (`request` drops the
    # divisibility a kernel compiled without alignment specialisation does not see)
    runtime_params: tuple[ParamSpec, ...]
    plan: LaunchPlan

    def replan(self, target: Target, options: BackendOptions) -> LaunchPlan:
        """This launch's plan for another target (grouped and block-scaled problems plan
        themselves; the dense family goes through `plan_launch`)."""
        own = getattr(self.problem, "plan", None)
        if own is not None:
            return own(target, options)
        return plan_launch(self.problem, target, options)

    def request(self, plan: LaunchPlan) -> CompileRequest:
        """The compile request for `plan` (this call's plan re-derived for another target)."""
        flags = plan.flags()
        unaligned = kernels.ALIGNMENT_FREE.get(plan.kernel, frozenset())
        runtime = {
            p.name: replace(p, divisible_16=False) if p.name in unaligned else p
            for p in (*SPLIT_WORKSPACE_PARAMS, *self.runtime_params)
        }
        params = tuple(
            ParamSpec(name, "constexpr", value=flags[name]) if is_constexpr else runtime[name]
            for name, is_constexpr in KERNEL_SIGNATURES[plan.kernel]
        )
        return CompileRequest(plan.kernel, params, plan.config.num_warps, plan.config.num_stages)


# `splitk_gemm_kernel`'s workspace parameters as a launch specialises them (torch's allocations
# are 16-byte aligned): what a launch replanned onto that kernel for artifacts gets
SPLIT_WORKSPACE_PARAMS = (ParamSpec("ws_ptr", "*fp32", True), ParamSpec("count_ptr", "*i32", True))

Launch = Callable[[Sequence[Any]], None]  # launches one kernel on a full argument list


class TritonLauncher:
    """The first launch of a plan goes through Triton's JIT (which compiles, or loads from its
    caches, and returns the compiled kernel); later launches call the compiled kernel's launcher
    directly with the same positional arguments Triton's JIT passes it (triton 3.6 and 3.7:
    `kernel.run(grid x3, stream, function, packed_metadata, launch_metadata, enter_hook,
    exit_hook, *all_params)`, constexprs included).

    A process's first launch of a kernel signature holds the signature's compile lock, so that
    one process of a run compiles it and the others load it from Triton's disk cache
    (compile_once.py).

    `compiles` counts the compiled kernels this process had not launched before: what a
    signature cost (a compile, or a load from Triton's on-disk cache) beyond a lookup;
    `compile_s` what their first launches took, lock waits included. Of those, `builds` were
    compiled and `loads` loaded from the disk cache, as Triton's compilation listener told
    (both None where this Triton has none), and `wait_s` went to waiting for the lock."""

    # ids of the compiled kernels launched in this process (Triton's cache keeps them alive)
    seen: ClassVar[set[int]] = set()
    # signature ids this process has launched: their JIT launches need no lock
    launched: ClassVar[set[str]] = set()

    def __init__(
        self, *, stream_of: Callable[[int], int] | None = None, device: int | None = None
    ) -> None:
        self.compiles = 0
        self.compile_s = 0.0  # what those first launches took (compile or load, then launch)
        self.builds: int | None = 0
        self.loads: int | None = 0
        self.wait_s = 0.0
        self.built: list[str] = []  # Triton's hashes of the kernels compiled, and loaded
        self.loaded: list[str] = []
        self.build_stages: Counter[str] = Counter()  # the compiles' seconds by Triton's stage
        self._stream_of, self._device = stream_of, device  # default: Triton's active driver's

    def first(
        self,
        fn: Any,
        grid: tuple[int, ...],
        args: Sequence[Any],
        config: Any,
        signature: str | None = None,
    ) -> Launch:
        """The first launch of a plan, through Triton's JIT; the direct launch for later ones.
        `signature`: the kernel's signature id (`CompileRequest.signature_id`), its lock's name."""
        compiled = self.jit(
            fn,
            lambda: fn[grid](*args, num_warps=config.num_warps, num_stages=config.num_stages),
            signature,
        )
        return direct_launch(compiled, grid, stream_of=self._stream_of, device=self._device)

    def jit(self, fn: Any, launch: Callable[[], Any], signature: str | None = None) -> Any:
        """What `launch()` returns (a launch of `fn` through Triton's JIT: the compiled kernel).
        The first time this process meets `signature` it launches under the signature's compile
        lock and counts what the launch compiled or loaded."""
        if signature is not None and signature in TritonLauncher.launched:
            return launch()  # compiled in this process already: Triton's in-memory cache
        start = time.perf_counter()
        with (
            compile_once.signature_lock(signature) as lock,
            compile_once.counting_builds(fn) as count,
        ):
            try:
                compiled = launch()
            finally:  # a compile whose launch then raised was a compile all the same
                self._heard(count, lock.seconds)
        if signature is not None:
            TritonLauncher.launched.add(signature)
        if id(compiled) not in TritonLauncher.seen:
            TritonLauncher.seen.add(id(compiled))
            self.compiles += 1
            self.compile_s += time.perf_counter() - start
        return compiled

    def _heard(self, count: compile_once.BuildCount, waited_s: float) -> None:
        self.wait_s += waited_s
        if not count.known:
            self.builds = self.loads = None
        elif self.builds is not None and self.loads is not None:
            self.builds += count.builds
            self.loads += count.loads
            self.built += count.built
            self.loaded += count.loaded
            self.build_stages.update(count.stages)


def direct_launch(
    compiled: Any,
    grid: tuple[int, ...],
    *,
    stream_of: Callable[[int], int] | None = None,
    device: int | None = None,
) -> Launch:
    """A launch of `compiled` (a Triton CompiledKernel) on the current stream, bypassing the JIT
    (`stream_of` and `device` default to Triton's active driver's). Where Triton's launcher has
    a form `compat.c_launch` knows, its C launch is called directly with the scratch
    `compat.launch_scratch` keeps; otherwise, and while a profiler listens, through `run`."""
    from triton import knobs

    runtime = knobs.runtime
    if stream_of is None or device is None:
        from triton.runtime.driver import driver

        stream_of = stream_of or driver.active.get_current_stream
        device = driver.active.get_current_device() if device is None else device
    g0, g1, g2 = (*grid, 1, 1)[:3]
    run, function, packed = compiled.run, compiled.function, compiled.packed_metadata
    direct = compat.c_launch(run)
    c_run, scratch_bytes = direct if direct is not None else (None, 0)
    scratch_bytes *= g0 * g1 * g2
    allocates = getattr(run, "global_scratch_size", 0) > 0  # through `run`: Triton's allocator

    def launch(args: Sequence[Any]) -> None:
        stream = stream_of(device)
        enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook
        hooked = _hooked(enter) or _hooked(leave)  # a profiler listens: give it what the JIT gives
        if c_run is not None and not hooked:
            scratch = (
                compat.launch_scratch(scratch_bytes, device, stream) if scratch_bytes else None
            )
            c_run(g0, g1, g2, stream, function, packed, scratch, args)
            return
        if allocates:
            compat.set_tma_allocator()
        if hooked:
            metadata = compiled.launch_metadata(grid, stream, *args)
            run(g0, g1, g2, stream, function, packed, metadata, enter, leave, *args)
        else:  # Triton's JIT would build launch metadata and call two empty hook chains
            run(g0, g1, g2, stream, function, packed, None, None, None, *args)

    return launch


def _hooked(hook: Any) -> bool:
    """A launch hook that would do something (triton 3.6+ keeps a `HookChain`, empty unless a
    profiler added to it; older versions keep a callable or None)."""
    return hook is not None and bool(getattr(hook, "calls", True))


class InterpreterLauncher:
    """In the Triton interpreter every launch goes through the interpreted function."""

    compiles = 0
    compile_s = 0.0
    builds = loads = 0  # the interpreter compiles nothing
    wait_s = 0.0
    built: tuple[str, ...] = ()
    loaded: tuple[str, ...] = ()

    def first(self, fn: Any, grid: tuple, args: Sequence[Any], config: Any, *_: object) -> Launch:
        """The interpreted launch (a signature, TritonLauncher's lock name, is of no use here)."""

        def launch(call_args: Sequence[Any]) -> None:
            with compat.interpreted_as_compiled():
                fn[grid](*call_args, num_warps=config.num_warps, num_stages=config.num_stages)

        launch(args)
        return launch


class SplitBuffers:
    """`splitk_gemm_kernel`'s workspace, one per (device, stream): fp32 partial sums, and the
    tiles' arrival counters, zeroed once and left at zero by every launch. The launches of one
    stream run one after another, so every split GEMM on it can share them; another stream
    (a CUDA graph's capture stream too) gets its own. Each grows to the largest launch seen."""

    def __init__(self) -> None:
        self.by_stream: dict[tuple[Any, int], tuple[torch.Tensor, torch.Tensor]] = {}

    def get(
        self, device: torch.device, partials: int, tiles: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(workspace, counters) for a launch on `device`'s current stream."""
        stream = torch._C._cuda_getCurrentRawStream(device.index) if device.type == "cuda" else 0
        key = (device, stream)
        found = self.by_stream.get(key)
        workspace, counters = found if found is not None else (None, None)
        if workspace is None or workspace.numel() < partials:
            workspace = torch.empty(partials, dtype=torch.float32, device=device)
        if counters is None or counters.numel() < tiles:
            counters = torch.zeros(tiles, dtype=torch.int32, device=device)
        self.by_stream[key] = (workspace, counters)
        return workspace, counters


@dataclass
class Runtime:
    """State shared by the GemmCalls of one backend instance: target, options, tuning cache,
    split-K's workspace, and the launcher (Triton's compiled kernels on a GPU, the interpreter
    on a CPU; tools measuring the host path put a stub here)."""

    target: Target
    options: BackendOptions
    autotune_cache: configs.AutotuneCache = field(default_factory=configs.AutotuneCache)
    launcher: TritonLauncher | InterpreterLauncher | Any = None
    split_buffers: SplitBuffers = field(default_factory=SplitBuffers)

    def __post_init__(self) -> None:
        if self.launcher is None:
            self.launcher = InterpreterLauncher() if self.target.interpreter else TritonLauncher()


def _as_batched(t: torch.Tensor) -> torch.Tensor:
    return t if t.dim() == 3 else t.unsqueeze(0)


def _batch_stride(t: torch.Tensor) -> int:
    """The step between batches of a (batch, rows, cols) tensor; 0 when there is one batch."""
    return t.stride(0) if t.shape[0] > 1 else 0


def _resolve_shape(shape: list[int], numel: int) -> tuple[int, ...]:
    """A view's size list with its -1 (if any) resolved."""
    sizes = [int(s) for s in shape]
    if -1 in sizes:
        known = 1
        for s in sizes:
            if s != -1:
                known *= s
        sizes[sizes.index(-1)] = numel // known if known else 0
    return tuple(sizes)


def scaling_kind(scale_a: torch.Tensor, scale_b: torch.Tensor, m: int, n: int, k: int) -> str:
    """The fp8 recipe these scales implement ("other": one the kernels do not)."""
    recipe = classify(scale_a, scale_b, m, n, k)
    return recipe.name if recipe is not None else "other"


def _tensor_key(t: torch.Tensor) -> tuple[Any, ...]:
    return (t.dtype, t.shape, t.stride(), t.data_ptr() % 16 == 0, t.device)


def signature_key(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor | None,
    scale_b: torch.Tensor | None,
    operands: list[torch.Tensor],
    stage_shapes: list[list[int]],
) -> tuple[Any, ...]:
    """Everything about one call's arguments that its plan depends on (no values)."""
    return (
        _tensor_key(a),
        _tensor_key(b),
        None if scale_a is None else _tensor_key(scale_a),
        None if scale_b is None else _tensor_key(scale_b),
        tuple(_tensor_key(x) for x in operands),
        tuple(tuple(shape) for shape in stage_shapes),
    )


@dataclass
class CallPlan:
    """One signature's call, resolved once: what to allocate and what to launch."""

    out_shape: tuple[int, ...]  # the call's result (the kernel writes it as (batch, M, N))
    out_dtype: torch.dtype
    launch: Launch | None  # None: nothing to launch (an empty output)
    stage_shapes: tuple[tuple[int, ...], ...] = ()  # the call's view shapes, as it got them
    args: tuple[Any, ...] = ()  # the kernel's whole argument list; tensor slots refilled per call
    a_slot: int = 0
    b_slot: int = 1
    c_slot: int = 2
    scale_slots: tuple[int, int] | None = None  # a_scale_ptr, b_scale_ptr
    reshape_scales: bool = False  # tensorwise: 0-dim scales are passed as 1-element vectors
    # epilogue tensors: (argument slot, index into the call's operands, stage shape, (B, M, N))
    operand_slots: tuple[tuple[int, int, tuple[int, ...], tuple[int, int, int]], ...] = ()
    graphs: LaunchGraphs | None = None
    # split-K and stream-K: (workspace slot, counters slot, LaunchPlan.workspace)
    split: tuple[int, int, tuple[int, int]] | None = None


class CudaGraphs:
    """What `LaunchGraphs` needs of torch.cuda (a stand-in replaces it in CPU tests)."""

    def __init__(self) -> None:
        self.pool: Any = None

    def capturing(self) -> bool:
        return torch.cuda.is_current_stream_capturing()

    def capture(
        self, launch: Callable[[], torch.Tensor]
    ) -> tuple[Callable[[], None], torch.Tensor]:
        """The graph's replay and the output its launch wrote (captured, not yet run)."""
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            out = launch()
        return graph.replay, out


def _use_count(t: torch.Tensor) -> int:
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata)


class LaunchGraphs:
    """One plan's launch captured in CUDA graphs, one per set of input addresses.

    A set is captured the second time it is seen (a one-off call never pays a capture), at most
    `MAX_GRAPHS` per plan (least recently used dropped; once `MAX_GRAPHS` were dropped the plan
    captures no more, since its callers rotate through more address sets than it keeps). A
    graph writes the same output memory on every replay, so it is replayed only while nobody
    holds what it returned last time: each replay hands out a new alias of the graph's output
    (`detach`), and the storage's use count tells whether any alias, or a view of one, is still
    alive. Otherwise, and while another capture is under way, the call launches normally into a
    fresh output."""

    MAX_GRAPHS = 16
    MAX_SIGHTINGS = 1024

    def __init__(self, api: Any = None) -> None:
        self.api = api or CudaGraphs()
        # addresses -> (replay, output, the output's storage use count when nobody holds it)
        self.graphs: OrderedDict[tuple[int, ...], tuple[Callable[[], None], torch.Tensor, int]]
        self.graphs = OrderedDict()
        self.sightings: dict[tuple[int, ...], int] = {}
        self.replays = 0
        self.captures = 0
        self.dropped = 0

    def __call__(
        self, addresses: tuple[int, ...], launch: Callable[[], torch.Tensor]
    ) -> torch.Tensor:
        """The call's output: replayed from a graph where one may run, else launched."""
        found = self.graphs.get(addresses)
        if found is not None:
            replay, out, free = found
            if _use_count(out) <= free and not self.api.capturing():
                replay()
                self.graphs.move_to_end(addresses)
                self.replays += 1
                return out.detach()
            return launch()
        if self.api.capturing() or self.dropped >= self.MAX_GRAPHS:
            return launch()
        if len(self.sightings) >= self.MAX_SIGHTINGS:
            self.sightings.clear()
        self.sightings[addresses] = self.sightings.get(addresses, 0) + 1
        if self.sightings[addresses] < 2:
            return launch()
        replay, out = self.api.capture(launch)
        del self.sightings[addresses]
        self.captures += 1
        self.graphs[addresses] = (replay, out, _use_count(out))
        while len(self.graphs) > self.MAX_GRAPHS:
            self.graphs.popitem(last=False)
            self.dropped += 1
        replay()  # a capture records the launch without running it
        self.replays += 1
        return out.detach()


def graphs_supported() -> str | None:
    """Why CUDA-graph replay cannot be used here (None: it can)."""
    if not torch.cuda.is_available():
        return "no CUDA device"
    if not hasattr(torch._C, "_storage_Use_Count"):
        return f"torch {torch.__version__} has no _storage_Use_Count (is an output still held?)"
    return None


class KernelCall:
    """What every call node of a rewritten graph shares: its launches, as records to
    cross-compile again, and the launch of a planned kernel with named arguments."""

    def __init__(self, name: str, runtime: Runtime) -> None:
        self.name = name
        self.runtime = runtime
        self.launches: dict[tuple[Any, ...], LaunchRecord] = {}
        # launches whose record is up to date, and their kernel signature ids
        self._recorded: dict[tuple[Any, ...], str] = {}
        self.calls = 0
        # FX names the call after these when it prints the graph's code
        self.__name__ = self.__qualname__ = name
        self.__module__ = "reference"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"

    def describe(self, *, launches: bool = True) -> str:
        """The plan text: what this call computes (`what`), and the kernels it has launched,
        each with its problem's sizes (`launch_sizes`)."""
        lines = self.what()
        for record in self.launches.values() if launches else ():
            lines.append(record.plan.describe(self.launch_sizes(record)))
        return "\n".join(lines)

    def what(self) -> list[str]:
        """The plan text's first lines: the GEMM this call computes, and what it fuses."""
        raise NotImplementedError

    def launch_sizes(self, record: LaunchRecord) -> str:
        return record.problem.sizes

    def _launch(self, plan: LaunchPlan, args: dict[str, Any], signature: str | None) -> None:
        """One launch through Triton's JIT (or the interpreter); `signature` names the kernel's
        compile lock for the launcher (`TritonLauncher.jit`)."""
        flags = plan.flags()
        if plan.tma and not self.runtime.target.interpreter:
            compat.set_tma_allocator()
        kernel = kernels.KERNELS[plan.kernel]
        call_args = {
            name: args[name]
            for name, is_constexpr in KERNEL_SIGNATURES[plan.kernel]
            if not is_constexpr
        }

        def launch() -> Any:
            return kernel[plan.grid](
                **call_args,
                **flags,
                num_warps=plan.config.num_warps,
                num_stages=plan.config.num_stages,
            )

        if self.runtime.target.interpreter:
            with compat.interpreted_as_compiled():
                launch()
            return
        jit = getattr(self.runtime.launcher, "jit", None)  # stand-ins may have none
        if jit is None:
            launch()
        else:
            jit(kernel, launch, signature)

    def _record(self, problem: Any, plan: LaunchPlan, args: dict[str, Any]) -> str:
        """Records the launch (once per specialisation); its kernel signature id."""
        # Specialising every argument cost two thirds of a call's host time (~200 us of 300 on a
        # CPU): a repeated launch, same plan and problem with the same integers and pointer
        # alignments, has the same specialisation, so it is recorded once.
        seen = (
            plan.kernel,
            plan.constexprs,
            problem,
            tuple(
                (v.dtype, v.data_ptr() % 16 == 0) if isinstance(v, torch.Tensor) else v
                for v in args.values()
            ),
        )
        signature = self._recorded.get(seen)
        if signature is not None:
            return signature
        params = tuple(specialize(name, value) for name, value in args.items())
        key = (plan.kernel, plan.constexprs, params)
        record = LaunchRecord(self.name, problem, params, plan)
        self.launches[key] = record
        signature = self._recorded[seen] = record.request(plan).signature_id()
        return signature


class GemmCall(KernelCall):
    """The callable a rewritten graph uses in place of one GEMM and its fused epilogue."""

    def __init__(self, spec: GemmSpec, runtime: Runtime) -> None:
        super().__init__(spec.name, runtime)
        self.spec = spec
        self.plans: dict[tuple[Any, ...], CallPlan] = {}  # by signature_key: see the module doc

    def what(self) -> list[str]:
        spec = self.spec
        inputs = ", ".join(spec.input_names)
        fused = ", ".join(spec.fused_nodes) or "nothing"
        dtypes = f"{_short(spec.dtype)} -> {_short(spec.out_dtype)}"
        lines = [
            f"{spec.name} <- aten.{spec.op} {spec.gemm_node}({inputs}): {dtypes}",
            f"  fused after it: {fused}",
        ]
        for i, step in enumerate(spec.steps):
            lines.append(f"  EPI{i} = {step.describe(list(spec.operand_names))}")
        if spec.dtype == torch.float32:
            lines.append(f"  fp32 input precision: {spec.input_precision}")
        return lines

    def launch_sizes(self, record: LaunchRecord) -> str:
        config = record.plan.config
        return f"{record.problem.sizes} warps={config.num_warps} stages={config.num_stages}"

    def __call__(
        self,
        a: torch.Tensor,
        b: torch.Tensor,
        scale_a: torch.Tensor | None,
        scale_b: torch.Tensor | None,
        operands: list[torch.Tensor],
        stage_shapes: list[list[int]],
    ) -> torch.Tensor:
        self.calls += 1
        key = signature_key(a, b, scale_a, scale_b, operands, stage_shapes)
        plan = self.plans.get(key)
        if plan is None:
            plan, out = self._resolve(a, b, scale_a, scale_b, operands, stage_shapes)
            self.plans[key] = plan
            return out
        if plan.launch is None:
            return torch.empty(plan.out_shape, dtype=plan.out_dtype, device=a.device)
        if plan.graphs is None:
            return self._launch_planned(plan, a, b, scale_a, scale_b, operands)
        addresses = (
            a.data_ptr(),
            b.data_ptr(),
            *(t.data_ptr() for t in (scale_a, scale_b) if t is not None),
            *(x.data_ptr() for x in operands),
        )
        return plan.graphs(
            addresses, lambda: self._launch_planned(plan, a, b, scale_a, scale_b, operands)
        )

    def _launch_planned(
        self,
        plan: CallPlan,
        a: torch.Tensor,
        b: torch.Tensor,
        scale_a: torch.Tensor | None,
        scale_b: torch.Tensor | None,
        operands: list[torch.Tensor],
    ) -> torch.Tensor:
        """A call whose plan is known: allocate, fill the tensor slots, launch."""
        assert plan.launch is not None
        out = a.new_empty(plan.out_shape, dtype=plan.out_dtype)  # 0.8 µs less than torch.empty
        if out.data_ptr() % 16:  # the plan's kernel assumed an aligned output: plan this one anew
            stage_shapes = [list(shape) for shape in plan.stage_shapes]
            return self._resolve(a, b, scale_a, scale_b, operands, stage_shapes)[1]
        args = list(plan.args)
        args[plan.a_slot], args[plan.b_slot], args[plan.c_slot] = a, b, out
        if plan.scale_slots is not None:
            assert scale_a is not None and scale_b is not None
            if plan.reshape_scales:
                scale_a, scale_b = scale_a.reshape(-1), scale_b.reshape(-1)
            args[plan.scale_slots[0]], args[plan.scale_slots[1]] = scale_a, scale_b
        for slot, index, stage, bmn in plan.operand_slots:
            args[slot] = self._broadcast_operand(operands[index], stage, bmn, a.device)
        if plan.split is not None:
            ws_slot, count_slot, sizes = plan.split
            args[ws_slot], args[count_slot] = self.runtime.split_buffers.get(a.device, *sizes)
        plan.launch(args)
        return out

    def _resolve(
        self,
        a: torch.Tensor,
        b: torch.Tensor,
        scale_a: torch.Tensor | None,
        scale_b: torch.Tensor | None,
        operands: list[torch.Tensor],
        stage_shapes: list[list[int]],
    ) -> tuple[CallPlan, torch.Tensor]:
        """The first call with a signature: checks, plans and launches; the plan for the next."""
        spec = self.spec
        a3, b3 = _as_batched(a), _as_batched(b)
        batch = max(a3.shape[0], b3.shape[0])
        m, k, n = a3.shape[1], a3.shape[2], b3.shape[2]
        scaling = self._check_like_eager(a, b, scale_a, scale_b, operands, m, n, k)
        gemm_shape = (batch, m, n) if spec.batched else (m, n)
        shapes = [gemm_shape] + [_resolve_shape(s, batch * m * n) for s in stage_shapes]
        if batch == 0 or m == 0 or n == 0:
            empty = CallPlan(tuple(shapes[-1]), spec.out_dtype, None)  # no launch, ever
            return empty, torch.empty(shapes[-1], dtype=spec.out_dtype, device=a.device)

        out = torch.empty((batch, m, n), dtype=spec.out_dtype, device=a.device)
        steps = self._operand_steps(operands)
        xs = [
            self._broadcast_operand(x, shapes[step.stage], (batch, m, n), a.device)
            for x, step in steps
        ]
        problem = self._problem(a3, b3, out, xs, scaling)
        args = self._runtime_args(a3, b3, out, scale_a, scale_b, xs, problem, batch)
        plan = self._plan(problem, args)
        if plan.workspace is not None:
            buffers = self.runtime.split_buffers.get(a.device, *plan.workspace)
            args["ws_ptr"], args["count_ptr"] = buffers
        signature = self._record(problem, plan, args)
        flags = plan.flags()
        positional = [
            flags[name] if constexpr else args[name]
            for name, constexpr in KERNEL_SIGNATURES[plan.kernel]
        ]
        if plan.tma and not self.runtime.target.interpreter:
            compat.set_tma_allocator()  # the first launch goes through Triton's JIT
        launch = self.runtime.launcher.first(
            kernels.KERNELS[plan.kernel], plan.grid, positional, plan.config, signature
        )
        call_plan = self._call_plan(problem, plan, launch, positional, shapes, stage_shapes)
        return call_plan, out.view(shapes[-1])

    def _check_like_eager(
        self,
        a: torch.Tensor,
        b: torch.Tensor,
        scale_a: torch.Tensor | None,
        scale_b: torch.Tensor | None,
        operands: list[torch.Tensor],
        m: int,
        n: int,
        k: int,
    ) -> str:
        """Raise where eager raises (and on scales no kernel here takes); the scaling kind."""
        spec = self.spec
        if spec.op == "int_mm" and a.is_cuda and eager_checks.int_mm_rejected(m, k, n):
            eager_checks.raise_like_eager(lambda: torch._int_mm(a, b))
        if not spec.gemm.scaled:
            return "none"
        assert scale_a is not None and scale_b is not None
        scaling = scaling_kind(scale_a, scale_b, m, n, k)
        self._check_scaled_mm(a, b, scale_a, scale_b, operands, scaling)
        if scaling == "other":
            raise RuntimeError(
                f"reference backend: unsupported _scaled_mm scales "
                f"{tuple(scale_a.shape)} and {tuple(scale_b.shape)} for "
                f"M={m}, N={n}, K={k}"
            )
        return scaling

    def _problem(
        self,
        a3: torch.Tensor,
        b3: torch.Tensor,
        out: torch.Tensor,
        xs: list[torch.Tensor],
        scaling: str,
    ) -> Problem:
        """What the planner decides from: the batched operands, the output and epilogue tensors."""
        spec = self.spec
        return Problem(
            dtype=a3.dtype,
            batch=out.shape[0],
            m=out.shape[1],
            n=out.shape[2],
            k=a3.shape[2],
            a=OperandLayout.of(a3, _batch_stride(a3)),
            b=OperandLayout.of(b3, _batch_stride(b3)),
            scaling=scaling,
            int_acc=spec.gemm.exact,
            input_precision=spec.input_precision,
            # blockwise scaling already adds each K tile's product into the fp32 accumulator
            fast_accum=not spec.gemm.scaled or spec.use_fast_accum or scaling == "blockwise",
            epilogue=spec.epilogue_ops(),
            index_64=any(_max_offset(t) >= INT32_LIMIT for t in (a3, b3, out, *xs)),
            out_dtype=spec.out_dtype,
        )

    def _call_plan(
        self,
        problem: Problem,
        plan: LaunchPlan,
        launch: Launch,
        positional: list[Any],
        shapes: list[Sequence[int]],
        stage_shapes: list[list[int]],
    ) -> CallPlan:
        """The plan the next calls with this signature follow: the first call's arguments with
        its tensors left out, and the slots each call's tensors go in."""
        spec = self.spec
        slot = {name: i for i, (name, _) in enumerate(KERNEL_SIGNATURES[plan.kernel])}
        graphs = None
        if self.runtime.options.cudagraphs and not self.runtime.target.interpreter:
            graphs = LaunchGraphs() if graphs_supported() is None else None
        bmn = (problem.batch, problem.m, problem.n)
        return CallPlan(
            out_shape=tuple(shapes[-1]),
            out_dtype=spec.out_dtype,
            launch=launch,
            stage_shapes=tuple(tuple(shape) for shape in stage_shapes),
            args=tuple(None if isinstance(v, torch.Tensor) else v for v in positional),
            a_slot=slot["a_ptr"],
            b_slot=slot["b_ptr"],
            c_slot=slot["c_ptr"],
            scale_slots=None
            if problem.scaling == "none"
            else (slot["a_scale_ptr"], slot["b_scale_ptr"]),
            reshape_scales=problem.scaling == "tensorwise",
            operand_slots=tuple(
                (slot[f"x{i}_ptr"], step.operand, shapes[step.stage], bmn)
                for i, step in enumerate(spec.steps)
                if step.operand is not None
            ),
            graphs=graphs,
            split=(slot["ws_ptr"], slot["count_ptr"], plan.workspace)
            if plan.workspace is not None
            else None,
        )

    def _check_scaled_mm(
        self,
        a: torch.Tensor,
        b: torch.Tensor,
        scale_a: torch.Tensor,
        scale_b: torch.Tensor,
        operands: list[torch.Tensor],
        scaling: str,
    ) -> None:
        spec = self.spec
        bias = operands[0] if spec.has_bias else None
        if eager_checks.scaled_mm_rejected(
            a,
            b,
            scale_a,
            scale_b,
            bias,
            spec.gemm_dtype,
            scaling,
            spec.use_fast_accum,
            self.runtime.target.capability,
            blockwise_on_cpu=self.runtime.options.blockwise_on_cpu,
        ):
            eager_checks.raise_like_eager(
                lambda: torch._scaled_mm(
                    a,
                    b,
                    scale_a,
                    scale_b,
                    bias=bias,
                    out_dtype=spec.gemm_dtype,
                    use_fast_accum=spec.use_fast_accum,
                )
            )

    def _operand_steps(
        self, operands: list[torch.Tensor]
    ) -> list[tuple[torch.Tensor, EpilogueStep]]:
        by_index = {s.operand: s for s in self.spec.steps if s.operand is not None}
        return [(x, by_index[i]) for i, x in enumerate(operands)]

    @staticmethod
    def _broadcast_operand(
        x: torch.Tensor,
        stage_shape: tuple[int, ...],
        bmn: tuple[int, int, int],
        device: torch.device,
    ) -> torch.Tensor:
        """The operand as (batch, M, N) strides over the kernel's output (0 where broadcast)."""
        if x.device != device:
            x = x.to(device)  # a 0-dim CPU scalar tensor, which eager accepts
        return x.expand(stage_shape).reshape(bmn)  # a view where strides allow, else a copy

    def _runtime_args(
        self,
        a3: torch.Tensor,
        b3: torch.Tensor,
        out: torch.Tensor,
        scale_a: torch.Tensor | None,
        scale_b: torch.Tensor | None,
        xs: list[torch.Tensor],
        problem: Problem,
        batch: int,
    ) -> dict[str, Any]:
        """Every runtime argument of both kernels, by parameter name."""
        args: dict[str, Any] = {
            "a_ptr": a3,
            "b_ptr": b3,
            "c_ptr": out,
            "a_scale_ptr": None,
            "b_scale_ptr": None,
            "M": problem.m,
            "N": problem.n,
            "K": problem.k,
            "BATCH": batch,
            "stride_ab": _batch_stride(a3),
            "stride_am": a3.stride(1),
            "stride_ak": a3.stride(2),
            "stride_bb": _batch_stride(b3),
            "stride_bk": b3.stride(1),
            "stride_bn": b3.stride(2),
            "stride_cb": out.stride(0),
            "stride_cm": out.stride(1),
            "stride_cn": out.stride(2),
            "stride_sam": 0,
            "stride_sak": 0,
            "stride_sbk": 0,
            "stride_sbn": 0,
        }
        if problem.scaling != "none":
            assert scale_a is not None and scale_b is not None
            sa = scale_a.reshape(-1) if problem.scaling == "tensorwise" else scale_a
            sb = scale_b.reshape(-1) if problem.scaling == "tensorwise" else scale_b
            args["a_scale_ptr"], args["b_scale_ptr"] = sa, sb
            if problem.scaling in ("rowwise", "blockwise"):
                args["stride_sam"], args["stride_sak"] = scale_a.stride()
                args["stride_sbk"], args["stride_sbn"] = scale_b.stride()
        for i in range(kernels.MAX_EPILOGUE_STEPS):
            step = self.spec.steps[i] if i < len(self.spec.steps) else None
            x = xs[step.operand] if step is not None and step.operand is not None else None
            args[f"x{i}_ptr"] = x
            _, sm, sn = x.stride() if x is not None else (0, 0, 0)
            args[f"stride_x{i}b"] = _batch_stride(x) if x is not None else 0
            args[f"stride_x{i}m"], args[f"stride_x{i}n"] = sm, sn
            args[f"e{i}s0"] = step.s0 if step is not None else 0
            args[f"e{i}s1"] = step.s1 if step is not None else 0
        return args

    def _plan(self, problem: Problem, args: dict[str, Any]) -> LaunchPlan:
        runtime = self.runtime
        if not (runtime.options.autotune and not runtime.target.interpreter):
            return plan_launch(problem, runtime.target, runtime.options)
        key = (
            problem.dtype,
            problem.a,
            problem.b,
            problem.scaling,
            problem.epilogue,
            problem.input_precision,
            problem.fast_accum,
            configs.size_class(problem.batch, problem.m, problem.n),
        )

        def time_config(config: configs.TileConfig) -> float:
            import triton.testing

            plan = plan_launch(problem, runtime.target, runtime.options, config)
            # no signature: each candidate compiles unlocked (only the chosen one is recorded)
            return float(triton.testing.do_bench(lambda: self._launch(plan, args, None)))

        options = configs.candidates(runtime.target.arch_class, problem.dtype)
        best = runtime.autotune_cache.choose(key, options, time_config)
        return plan_launch(problem, runtime.target, runtime.options, best)


def _short(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _max_offset(t: torch.Tensor) -> int:
    """The largest element offset a kernel may form for `t` (strides times sizes)."""
    return (
        sum(
            abs(stride) * max(size - 1, 0) for stride, size in zip(t.stride(), t.shape, strict=True)
        )
        + 1
    )
