"""The reference backend's Triton kernels, one module per family, built from named pieces.

Every GEMM the backend lowers runs one of these kernels (`KERNELS`, by name):

- `dense.py`: mm, addmm, bmm, baddbmm, `_int_mm`, `_scaled_mm`: `gemm_kernel` (one program per
  output tile, 3-D grid: tile row, tile column, batch), `gemm_kernel_unaligned` (the same,
  compiled without alignment specialisation, for small problems) and `gemm_persistent_kernel`
  (a fixed number of programs walking all tiles, for large problems on a GPU). Each computes a
  tile with `gemm_tile`, composed of pieces picked by constexpr flags the way Triton tutorial 03
  plugs in its activation:
- `mainloop.py`: operand loads through masked pointers (`A_DESC == "none"`) or an in-kernel
  tensor descriptor (`"mk"`/`"km"` for A, `"kn"`/`"nk"` for B: the order of the descriptor's
  dimensions, the last one contiguous; the host decides per call whether a descriptor is legal:
  16-byte aligned base, 16-byte multiple leading strides, unit last stride); `dot_operand`
  (the interpreter multiplies bf16 bit patterns as integers, triton#11584, and converts fp8
  NaN/Inf to finite numbers, so there bf16 and fp8 operands are upcast to fp32 first,
  `DOT_UPCAST == "fp32"`; targets without fp8 MMA get fp16, exact for fp8); the K loop, in fp32
  (int32 when `INT_ACC`), fp32 inputs at `INPUT_PRECISION` ("ieee" unless the run allows TF32;
  TF32 inputs are rounded to nearest as cuBLAS does, where tensor cores would truncate). fp8
  without `FAST_ACCUM` promotes partial products into the fp32 accumulator every K tile
  (`FP8_ACCUM`: "mma", the dense kernels', leaves it to Triton's MMA lowering with
  `max_num_imprecise_acc=BLOCK_K`; "tile", the grouped kernel's, adds each K tile's fresh
  product), because Hopper's fp8 MMA accumulates with fewer bits than fp32 (cuBLAS promotes
  likewise unless `use_fast_accum`). fp8 scaling (`SCALING`): "tensorwise" (0-dim scales),
  "rowwise" ((M,1) and (1,N)), or "blockwise" (1x128 activation scales and 128x128 weight
  scales, applied to each 128-wide K slab, so BLOCK_K must divide 128).
- `epilogue.py`: up to `MAX_EPILOGUE_STEPS` slots, each an op name (`EPI0`..`EPI3`), two scalars
  and one optional tensor broadcast to the output tile (`x0`..`x3`, any strides, 0 for broadcast
  dims), applied by `gemm_tile` in a `tl.static_range` over the slots.
- `numerics.py`: conversions and the masked store, converting to the output's element type. The
  interpreter truncates fp32 to bf16 (`.to(tl.bfloat16)`), so there `BF16_RNE` rounds to nearest
  even on the bits first, as GPUs and eager do.
- `splitk.py`: `splitk_gemm_kernel`, the dense kernel with its K loop cut into slices, one
  program per (tile, slice), the slices' fp32 partials summed in slice order by the tile's last
  arriving program (sm90 decode; `launcher.split_count` says when); with `STREAM`, stream-K:
  one program per SM, each an equal share of all tiles' K steps, a tile's parts summed in
  program order (`launcher.stream_programs`).
- `grouped.py`: `grouped_gemm_kernel` (`torch._grouped_mm`, `_scaled_grouped_mm`).
- `blockscaled.py`: `blockscaled_gemm_kernel` (`F.scaled_mm` with MX, NVFP4 or fp32 blocks).
- `hopper.py` (beside this package, in Gluon): `hopper_gemm_kernel`, sm90's warp-specialized one.

Inside a family, arguments travel as tuples (an operand with its strides, an epilogue slot);
the kernels' own parameters stay flat, one per value: the launch ABI (`dense.py` says why).

This package imports only Triton: the cross-compiler imports it in a process without the
interpreter. Helpers from Triton's own standard library (`tl.zeros`, `tl.cdiv`, `tl.sigmoid`)
are not used, because they break in the interpreter when Triton was imported before
TRITON_INTERPRET was set; the few needed are written out in `numerics.py`.
"""

from __future__ import annotations

from typing import Any

from gemmconf_reference import compat
from gemmconf_reference.kernels.blockscaled import (
    blockscaled_gemm_kernel,
    e2m1_to_fp32,
    e8m0_to_fp32,
    load_block_scales,
    load_quantized,
    scale_tile,
    to_dot_dtype,
)
from gemmconf_reference.kernels.dense import (
    UNALIGNED,
    UNALIGNED_PARAMETERS,
    finish_tile,
    gemm_kernel,
    gemm_kernel_unaligned,
    gemm_persistent_kernel,
    gemm_tile,
    parameters,
)
from gemmconf_reference.kernels.epilogue import (
    EPILOGUE_OPS,
    MAX_EPILOGUE_STEPS,
    epilogue_step,
)
from gemmconf_reference.kernels.grouped import group_extent, grouped_gemm_kernel
from gemmconf_reference.kernels.mainloop import (
    apply_scaling,
    dot_operand,
    load_a,
    load_b,
    load_operands,
    load_row_scale,
    mainloop,
)
from gemmconf_reference.kernels.numerics import (
    cdiv,
    fp8_to_fp32,
    round_to_bf16,
    round_to_fp8,
    round_to_tf32,
    sigmoid,
    store_tile,
    tanh,
)
from gemmconf_reference.kernels.splitk import (
    SPLITK,
    arrive_and_finish,
    share_start,
    splitk_gemm_kernel,
    splitk_tile,
    stream_owner,
    streamk_tiles,
)

if compat.interpreting():  # before any launch: the interpreter's own speed-ups, and a fix
    compat.index_scalars_as_numpy_allows()
    compat.memoize_interpreter_patching()
    compat.skip_nested_interpreter_patching()
    compat.memoize_interpreter_types()

# per kernel: the runtime parameters compiled without alignment specialisation
ALIGNMENT_FREE: dict[str, frozenset[str]] = {UNALIGNED: UNALIGNED_PARAMETERS}

KERNELS = {
    "gemm_kernel": gemm_kernel,
    UNALIGNED: gemm_kernel_unaligned,
    "gemm_persistent_kernel": gemm_persistent_kernel,
    SPLITK: splitk_gemm_kernel,
    "grouped_gemm_kernel": grouped_gemm_kernel,
    "blockscaled_gemm_kernel": blockscaled_gemm_kernel,
}
# the sm90 kernel with a producer warp and two consumer warpgroups, in Gluon
# (triton.experimental.gluon; hopper.py): absent where this Triton has no Gluon
HOPPER = "hopper_gemm_kernel"
HOPPER_PIECES: tuple[Any, ...] = ()
try:
    from gemmconf_reference import hopper
except ImportError:  # pragma: no cover - every supported Triton (3.6+) has Gluon
    pass
else:
    KERNELS[HOPPER] = hopper.hopper_gemm_kernel
    HOPPER_PIECES = (
        hopper._tile_of,
        hopper._loader,
        hopper._consumer,
        hopper._issue_product,
        hopper._promoted_k_loop,
        hopper._add_product,
        hopper._chained_k_loop,
        hopper._store,
        hopper.hopper_gemm_kernel,
    )

# every @triton.jit piece, by family, in source order: what the "triton" artifact shows
PIECES = (
    cdiv,
    tanh,
    sigmoid,
    round_to_bf16,
    round_to_tf32,
    fp8_to_fp32,
    round_to_fp8,
    store_tile,
    load_a,
    load_b,
    dot_operand,
    load_row_scale,
    load_operands,
    mainloop,
    apply_scaling,
    epilogue_step,
    gemm_tile,
    finish_tile,
    gemm_kernel,
    gemm_persistent_kernel,
    splitk_tile,
    arrive_and_finish,
    share_start,
    stream_owner,
    streamk_tiles,
    splitk_gemm_kernel,
    group_extent,
    grouped_gemm_kernel,
    e8m0_to_fp32,
    to_dot_dtype,
    e2m1_to_fp32,
    load_quantized,
    load_block_scales,
    scale_tile,
    blockscaled_gemm_kernel,
)

if not compat.interpreting():  # one order of hashing for every process (settle_cache_keys)
    compat.settle_cache_keys((*PIECES, *KERNELS.values()))

__all__ = [
    "ALIGNMENT_FREE",
    "EPILOGUE_OPS",
    "HOPPER",
    "HOPPER_PIECES",
    "KERNELS",
    "MAX_EPILOGUE_STEPS",
    "PIECES",
    "SPLITK",
    "UNALIGNED",
    "UNALIGNED_PARAMETERS",
    "apply_scaling",
    "arrive_and_finish",
    "blockscaled_gemm_kernel",
    "cdiv",
    "dot_operand",
    "e2m1_to_fp32",
    "e8m0_to_fp32",
    "epilogue_step",
    "finish_tile",
    "fp8_to_fp32",
    "gemm_kernel",
    "gemm_kernel_unaligned",
    "gemm_persistent_kernel",
    "gemm_tile",
    "group_extent",
    "grouped_gemm_kernel",
    "load_a",
    "load_b",
    "load_block_scales",
    "load_operands",
    "load_quantized",
    "load_row_scale",
    "mainloop",
    "parameters",
    "round_to_bf16",
    "round_to_fp8",
    "round_to_tf32",
    "scale_tile",
    "share_start",
    "sigmoid",
    "splitk_gemm_kernel",
    "splitk_tile",
    "store_tile",
    "stream_owner",
    "streamk_tiles",
    "tanh",
    "to_dot_dtype",
]
