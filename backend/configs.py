"""Tile configurations: one documented table per (arch class, dtype class, size class).

Why these numbers:
- interpreter: the Triton interpreter's cost grows with programs x K iterations (Python per tile
  op) far more than with tile area (docs/measurements.md: 512^3 takes 6 s with 32-wide tiles,
  0.14 s with 128-wide). The table's 128-wide tiles are only the ceiling: `interpreter_tile`
  fits BLOCK_N and BLOCK_K to the problem, so a long K loop takes few iterations (K = 65536,
  M = N = 8: 4.5 s per call with 128x128x64 tiles, 0.8 s with 128x16x512). BLOCK_M stays 128
  whatever M is: tl.dot is NumPy's matmul there, whose result for a row depends on the block's
  shape on some BLAS builds, and a row must get the same bits whatever rows come with it
  (integrity/batch_invariant).
- sm80: mma.sync tiles of 128x128 with 4-stage cp.async pipelines (BLOCK_K 32 for 16-bit types,
  64 for 8-bit); fp32 in IEEE precision runs on FMA units, so smaller 64x64 tiles.
- sm90: warp-group MMA wants BLOCK_M 128 with 8 warps (two warp groups) for large problems and
  BLOCK_K 64 (128 for 8-bit types) with 3-4 stages within 228 KB of shared memory.
- sm100: tcgen05 MMA accumulates in tensor memory; 128x128/128x256 tiles, 3 stages.
- sm120 (consumer Blackwell): mma.sync like Ampere (fp8 too) and at most ~99 KB of shared memory
  per block, so sm80-sized tiles: 128x128 with BLOCK_K 32 (16-bit) or 64 (8-bit), 3 stages.
- size classes: "small" (at most 4 tiles of 128x128 per batch), "skinny" (M or N at most 128,
  decode-like), "large" (at least 32 M outputs in all) and "medium" in between; small and skinny
  problems use 64-row tiles on GPUs so more SMs get work.
- deep pipelines under one wave (`deepen`, sm90): a decode GEMM (M = 16) is a stream through
  its weight, and when its tiles do not fill the SMs (Llama-3 8B's o and down projections get
  64 tiles of 64x64 on an H100's 132 SMs) its speed is the bytes each SM keeps in flight. Those
  "small" and "skinny" problems take as many stages as fit 192 KB of shared memory, at most 8:
  on an H100 (2026-11-25, `tools/tune_sm90.py --decode`, device time) 8 stages instead of 3-4
  took the o and down projections from 0.57x / 0.52x of cuBLAS to 0.88x / 0.84x in bf16 and from
  0.80x / 0.75x to 1.10x / 1.21x in fp8; problems of a wave or more (gate_up, 224 tiles) gained
  nothing. Narrower tiles, to cover more SMs, measured slower (64x32: 0.48x on qkv). Stages
  change no summation order.
- sm90 decode tile and split-K (`DECODE`, `decode_tile`; `launcher.decode_plan` and
  `split_count`): a bf16/fp16 problem with one row of 64-row tiles (M <= 64), a "small" or
  "skinny" size class, K >= DECODE_MIN_K and under two waves of tiles runs 64x64x128 tiles with
  6 stages where those fit one wave of SMs, else 64x128x128 tiles with 4, its operands read
  through masked pointers (cp.async) rather than tensor descriptors, and where its tiles leave
  SMs idle the split-K kernel cuts its K loop into min(8, SMs // tiles, K tiles // 32) slices,
  each slice's fp32 partial summed in slice order. On an H200 (2026-11-29,
  `tools/tune_sm90.py --fill`: 17 tiles x 1-8 slices, each interleaved with cuBLAS) that picks
  qkv 96 tiles whole 1.016x, o 64 whole 1.017x, gate_up 224 of 64x128 whole 1.023x, down 64 in
  2 slices 0.990x, where the first rule's 64x128x128 tiles with min(8, SMs // tiles, K tiles //
  8) slices (qkv 2, o 4, down 4) ran 0.950x / 0.957x / 0.978x in the same sweep (0.96x,
  0.99x, 1.01x, 0.99x as bench items). More than one program per SM (2-3 stages, BLOCK_K 64)
  and more programs than SMs measured slower; 8 warps and 256-wide tiles too. The first rule
  came from `--split` (BLOCK_K 64 and tensor descriptors: 0.87-0.92x, gate_up 0.98x; BLOCK_K
  128 through descriptors 0.82-0.94x). Stream-K (`split_k="stream"`) measured slower for
  bf16 in `--stream` (2026-11-30, H200: best 0.949x / 0.937x / 0.988x / 0.948x against the
  plan's 0.993x on qkv, 1.016x on gate_up).
- sm90 fp8 decode, stream-K (`DECODE`'s fp8 row, DECODE_STREAM_PER_SM; `launcher.
  stream_programs`): an fp8 problem with tensorwise or rowwise scales, one row of 64-row tiles,
  a "small" or "skinny" size class and K >= DECODE_MIN_K runs 64x64x128 tiles with 6 stages
  (96 KB: two programs per SM) through pointer loads, as stream-K over two programs per SM,
  at any tile count. On an H200 (2026-11-30, `tools/tune_sm90.py --stream`, interleaved with
  cuBLAS) that tile as stream-K ran qkv 1.179x, o 1.088x, gate_up 1.157x, down 1.522x against
  the table tiles' 1.098x / 1.051x / 1.131x / 1.243x in the same sweep; one program per SM
  with 8 stages 1.147x / 1.107x / 1.025x / 1.506x. A 256-wide BLOCK_K was as fast (o 1.157x)
  but would promote the products every 256 instead of every 128. Split-K (2026-11-29) had
  taken down to 1.47-1.49x but o down to 1.00-1.06x.
- which calls sum a row in the same order (integrity/batch_invariant): a row's sum depends on
  BLOCK_K and on the slice count, not on BLOCK_N, the stages or how operands are loaded.
  Neither the decode tile nor the slice count depends on M within one row of 64-row tiles:
  every call with M = 1..64 of the same N, K, dtype and target sums a row in one order (1 and
  16 tokens of a decode step alike). Relative to a call with M > 64 (two tile rows or
  more, the table's BLOCK_K 64, unsplit) the same row's bits may differ, for K >= DECODE_MIN_K
  on sm90 in 16-bit and fp8 types only; the batch_invariant items (K <= 1024) never take this
  path, and no other target or dtype does unless `BackendOptions.split_k` forces a slice count
  (the same count for every M then) or "stream" (whose tile, from the table, can then depend
  on M's size class). Calls with different N can differ too (the slice count and stream-K's
  shares come from the tile count, which N and the SM count set; the decode tiles share
  BLOCK_K), as can calls on GPUs with other SM counts. Both hold for one-batch problems only:
  a linear on a 3-d input whose rows cannot be flattened into one matrix (the first row of
  each batch entry, `x[:, :1]`, say) is a batched GEMM, which takes the table's tiles unsplit,
  so its rows may differ from the same rows of a contiguous input's call that took the decode tile
  and split (found on an H200, 2026-11-29: `reference:split_k=3` fails
  integrity/batch_invariant[linear-fp32-*] there, at about 10 ulps, where `reference`
  passes).
- fp8 blockwise scaling applies one scale per 128-wide K slab, so BLOCK_K must divide 128: every
  entry here keeps BLOCK_K <= 128 and a power of two.

Autotuning (GPU only, `BackendOptions.autotune`) benchmarks `candidates()` once per kernel
signature (dtype, layouts, flags, size class) and caches the winner in `AutotuneCache`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch


@dataclass(frozen=True)
class TileConfig:
    block_m: int
    block_n: int
    block_k: int
    num_warps: int = 4
    num_stages: int = 3
    group_m: int = 8  # tile rows walked together by the persistent kernel (L2 reuse)

    def describe(self) -> str:
        return (
            f"BLOCK {self.block_m}x{self.block_n}x{self.block_k}, warps={self.num_warps}, "
            f"stages={self.num_stages}"
        )


def dtype_class(dtype: torch.dtype) -> str:
    if dtype == torch.float32:
        return "fp32"
    if dtype in (torch.float16, torch.bfloat16):
        return "16bit"
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return "fp8"
    if dtype == torch.int8:
        return "int8"
    raise ValueError(f"no tile configs for {dtype}")


def size_class(batch: int, m: int, n: int) -> str:
    outputs = batch * m * n
    if m * n <= 4 * 128 * 128 and outputs <= 16 * 128 * 128:
        return "small"
    if min(m, n) <= 128:
        return "skinny"
    if outputs >= 32 * 1024 * 1024:
        return "large"
    return "medium"


_T = TileConfig
TABLE: dict[tuple[str, str, str], TileConfig] = {
    # interpreter: one size fits all (see module docstring)
    ("interpreter", "fp32", "*"): _T(128, 128, 64),
    ("interpreter", "16bit", "*"): _T(128, 128, 64),
    ("interpreter", "fp8", "*"): _T(128, 128, 128),
    ("interpreter", "int8", "*"): _T(128, 128, 128),
    # Ampere / Ada
    ("sm80", "fp32", "small"): _T(64, 64, 32, 4, 3),
    ("sm80", "fp32", "*"): _T(64, 64, 32, 4, 3),
    ("sm80", "16bit", "small"): _T(64, 64, 32, 4, 4),
    ("sm80", "16bit", "*"): _T(128, 128, 32, 4, 4),
    ("sm80", "fp8", "small"): _T(64, 64, 64, 4, 4),
    ("sm80", "fp8", "*"): _T(128, 128, 64, 4, 4),
    ("sm80", "int8", "small"): _T(64, 64, 64, 4, 4),
    ("sm80", "int8", "*"): _T(128, 128, 64, 4, 4),
    # Hopper
    ("sm90", "fp32", "small"): _T(64, 64, 32, 4, 3),
    ("sm90", "fp32", "*"): _T(128, 128, 32, 8, 3),
    ("sm90", "16bit", "small"): _T(64, 64, 64, 4, 3),
    ("sm90", "16bit", "skinny"): _T(64, 128, 64, 4, 4),
    ("sm90", "16bit", "medium"): _T(128, 128, 64, 8, 4),
    ("sm90", "16bit", "large"): _T(128, 256, 64, 8, 3),
    ("sm90", "fp8", "small"): _T(64, 64, 128, 4, 3),
    ("sm90", "fp8", "skinny"): _T(64, 128, 128, 4, 4),
    ("sm90", "fp8", "medium"): _T(128, 128, 128, 8, 4),
    ("sm90", "fp8", "large"): _T(256, 128, 128, 8, 3),
    ("sm90", "int8", "small"): _T(64, 64, 128, 4, 3),
    ("sm90", "int8", "*"): _T(128, 128, 128, 8, 3),
    # Blackwell
    ("sm100", "fp32", "small"): _T(64, 64, 32, 4, 3),
    ("sm100", "fp32", "*"): _T(128, 128, 32, 4, 3),
    ("sm100", "16bit", "small"): _T(128, 64, 64, 4, 3),
    ("sm100", "16bit", "*"): _T(128, 256, 64, 8, 3),
    ("sm100", "fp8", "small"): _T(128, 64, 128, 4, 3),
    ("sm100", "fp8", "*"): _T(128, 256, 128, 8, 3),
    ("sm100", "int8", "small"): _T(128, 64, 128, 4, 3),
    ("sm100", "int8", "*"): _T(128, 128, 128, 4, 3),
    # consumer Blackwell
    ("sm120", "fp32", "*"): _T(64, 64, 32, 4, 3),
    ("sm120", "16bit", "small"): _T(64, 64, 64, 4, 3),
    ("sm120", "16bit", "*"): _T(128, 128, 32, 4, 3),
    ("sm120", "fp8", "small"): _T(64, 64, 64, 4, 3),
    ("sm120", "fp8", "*"): _T(128, 128, 64, 4, 3),
    ("sm120", "int8", "small"): _T(64, 64, 64, 4, 3),
    ("sm120", "int8", "*"): _T(128, 128, 64, 4, 3),
}


INTERPRETER_MAX_BLOCK_K = 512
# sm90 "medium" and "large" problems on `hopper_gemm_kernel` (a producer warp and two consumer
# warpgroups, hopper.py; `launcher.hopper_plan` says which), by dtype class. num_stages is the
# most slots its shared-memory ring gets (`hopper_stages` fits them beside the output buffers);
# num_warps the default partition's (one consumer warpgroup). Measured on H100s (BENCHMARKS.md):
# - fp8 128x128x128, 6 stages (68e21b2): each K tile's product is added while the next one's
#   wgmmas run. 1.00-1.13x cuBLAS on the anchor and the eight Llama-3 prefill shapes in
#   do_bench, where cb47966's 128x256 tiles, which add each product with the tensor cores
#   idle for that consumer, gave 0.94-1.15x (0.91-0.95x on 70B qkv and o on some H100s); 5
#   stages 1.00-1.16x, 4 stages 0.99-1.18x; all bitwise equal. 6 stages fit beside a 2-byte
#   output, 5 beside a 4-byte one. 128x256 tiles cannot overlap so: their accumulator and two
#   64x128 products in flight would need 256 registers a thread, of the consumers' 232.
# - bf16 128x256x64, 3 stages (4 do not fit 227 KB): 0.98-1.05x as benchmark items (964a600),
#   where 128x128x64 with 4 or 6 stages swept 0.69-0.94x. Chaining and storing each 128 columns
#   apart, which leaves room for a fourth stage, was bitwise equal but slower on every anchor and
#   projection: 3 stages 1-4%, 4 stages 2-7% (37e4543, BENCHMARKS.md).
HOPPER = {
    "fp8": TileConfig(128, 128, 128, num_warps=4, num_stages=6, group_m=8),
    "16bit": TileConfig(128, 256, 64, num_warps=4, num_stages=3, group_m=8),
}
SM90_SHARED_BYTES = 232_448  # the most shared memory one block may use on sm90 (227 KB)
SHARED_SLACK_BYTES = 1024  # mbarriers and what Triton itself allocates (measured: 232 bytes)


def hopper_stages(config: TileConfig, itemsize: int, out_itemsize: int) -> TileConfig:
    """`config` with as many of its stages as fit sm90's shared memory beside the two consumers'
    output buffers (64 x block_n elements of `out_itemsize` bytes each)."""
    stage_bytes = (config.block_m + config.block_n) * config.block_k * itemsize
    free = SM90_SHARED_BYTES - SHARED_SLACK_BYTES - 2 * 64 * config.block_n * out_itemsize
    return replace(config, num_stages=min(config.num_stages, free // stage_bytes))


# shared memory the pipeline of an under-a-wave problem may fill, and its most stages, per arch
DEEP_PIPELINE: dict[str, tuple[int, int]] = {"sm90": (192 * 1024, 8)}


def deepen(
    config: TileConfig, arch_class: str, size: str, tiles: int, num_sms: int, k: int, itemsize: int
) -> TileConfig:
    """More pipeline stages for a "small" or "skinny" problem whose `tiles` do not fill the SMs
    and whose K loop is long enough to keep them (see the module docstring)."""
    if arch_class not in DEEP_PIPELINE or size not in ("small", "skinny") or tiles >= num_sms:
        return config
    budget, most = DEEP_PIPELINE[arch_class]
    stage_bytes = (config.block_m + config.block_n) * config.block_k * itemsize
    stages = min(most, budget // stage_bytes, k // config.block_k)
    if stages <= config.num_stages:
        return config
    return replace(config, num_stages=stages)


# sm90 decode: a 16-bit problem with one row of 64-row output tiles (M <= 64) over a long K (at
# least DECODE_MIN_K) and under two waves of tiles reads its weight with the first of these tiles
# whose output tiles fit one wave of SMs (else the last), through masked pointer loads rather
# than tensor descriptors, and `launcher.split_count` cuts its K loop where its tiles leave SMs
# idle (module docstring: measured on an H200, 2026-11-29). One BLOCK_M and one BLOCK_K for
# all: which tile a problem gets changes no row's summation order, the slice count may. fp8
# (tensorwise or rowwise) runs one tile as stream-K, DECODE_STREAM_PER_SM programs per SM
# (`launcher.stream_programs`), at any tile count.
DECODE: dict[tuple[str, str], tuple[TileConfig, ...]] = {
    ("sm90", "16bit"): (_T(64, 64, 128, 4, 6), _T(64, 128, 128, 4, 4)),
    ("sm90", "fp8"): (_T(64, 64, 128, 4, 6),),
}
DECODE_MIN_K = 2048
DECODE_STREAM_PER_SM = 2  # two 96 KB programs share an SM's 228 KB of shared memory


def decode_tile(
    arch_class: str, dtype: torch.dtype, size: str, m: int, n: int, k: int, num_sms: int
) -> TileConfig | None:
    """The decode tile for a "small" or "skinny" problem of M rows, N columns and K on
    `arch_class` with `num_sms` SMs (None: the table's): the first of DECODE's whose tiles
    along N fit one wave, else its last. Only M's tile-row count matters, so every M up to
    BLOCK_M gets the same."""
    tiles = DECODE.get((arch_class, dtype_class(dtype)))
    if tiles is None or size not in ("small", "skinny") or m > tiles[0].block_m:
        return None
    if k < DECODE_MIN_K:
        return None
    return next((t for t in tiles if -(-n // t.block_n) <= num_sms), tiles[-1])


def interpreter_tile(dtype: torch.dtype, n: int, k: int) -> TileConfig:
    """The interpreter's tile for a problem with N columns and K: BLOCK_M the table's, BLOCK_N
    N rounded up to a power of two within [16, the table's], BLOCK_K K's within [the table's,
    512]. fp8 keeps the table's BLOCK_K (blockwise scales need BLOCK_K to divide 128; the
    promotion variants count K tiles)."""
    ceiling = lookup("interpreter", dtype, "*")
    block_k = ceiling.block_k
    if dtype_class(dtype) != "fp8":
        block_k = min(INTERPRETER_MAX_BLOCK_K, max(block_k, _pow2_at_least(k)))
    return TileConfig(ceiling.block_m, min(ceiling.block_n, max(16, _pow2_at_least(n))), block_k)


def _pow2_at_least(x: int) -> int:
    return 1 << max(0, x - 1).bit_length()


def lookup(arch_class: str, dtype: torch.dtype, size: str) -> TileConfig:
    """The table entry for an exact size class, else the arch/dtype's "*" row."""
    dclass = dtype_class(dtype)
    for key in ((arch_class, dclass, size), (arch_class, dclass, "*")):
        if key in TABLE:
            return TABLE[key]
    raise KeyError(f"no tile config for {(arch_class, dclass, size)}")


def candidates(arch_class: str, dtype: torch.dtype) -> tuple[TileConfig, ...]:
    """What autotuning tries: every table row for the arch and dtype class, deduplicated."""
    dclass = dtype_class(dtype)
    rows = [cfg for (arch, dc, _), cfg in TABLE.items() if arch == arch_class and dc == dclass]
    return tuple(dict.fromkeys(rows))


@dataclass
class AutotuneCache:
    """Best config per kernel signature, measured once on the GPU (`time_fn` -> ms)."""

    best: dict[tuple[object, ...], TileConfig] = field(default_factory=dict)

    def choose(
        self,
        key: tuple[object, ...],
        options: tuple[TileConfig, ...],
        time_fn: Callable[[TileConfig], float],
    ) -> TileConfig:
        if key not in self.best:
            timings = {}
            errors: list[Exception] = []
            for cfg in options:
                try:
                    timings[cfg] = time_fn(cfg)
                except Exception as exc:  # a candidate may not fit (shared memory)
                    errors.append(exc)
            if not timings:
                first = f"; the first: {type(errors[0]).__name__}: {errors[0]}" if errors else ""
                raise RuntimeError(
                    f"no tile config compiled for {key}: {len(errors)} candidates failed{first}"
                ) from (errors[0] if errors else None)
            self.best[key] = min(timings, key=timings.__getitem__)
        return self.best[key]
