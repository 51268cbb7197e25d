"""Scaling recipes: which elements share a scale, how scales are made, how to recognise them.

A recipe says, for each operand of a scaled GEMM (a is (M, K), b is (K, N)), the block of
elements one scale covers: ``(1, WHOLE)`` is a scale per row, ``(128, 128)`` one per 128x128
block, ``(WHOLE, WHOLE)`` one for the tensor. Scale shapes, the divisibility the blocks impose,
quantization and the classifier (scale shapes -> recipe, as a backend sees them) all follow from
those blocks. Scales are what ``_scaled_mm`` takes: the factor that dequantizes (x = q * scale).

The amax recipes (tensorwise, rowwise, blockwise, blockwise_1x128, blockwise_128x128_1x128)
make fp32 scales amax / max(dtype). The microscaling recipes (`microscaling.py`) make their own:
``mx`` (power-of-two e8m0 scales per 1x32, fp8 elements), ``nvfp4`` (e4m3 scales per 1x16, fp4
elements, and a per-tensor fp32 global scale) and ``nvfp4_single`` (without it). `ops` says
which ops take a recipe: ``_scaled_mm`` knows the first three, ``F.scaled_mm`` (op
``scaled_mm_v2``) every one, the grouped scaled GEMM rowwise only. `scaling_types` are the
`F.ScalingType` names F.scaled_mm is called with, per operand.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from gemmconf.gemm import microscaling

WHOLE = 0  # a block extent spanning the whole dimension


class ScaleLike(Protocol):
    """A scale as a backend sees it: a tensor, a fake tensor or a graph node's meta value."""

    @property
    def shape(self) -> Sequence[Any]: ...

    @property
    def dtype(self) -> torch.dtype: ...


@dataclass(frozen=True)
class Scaled:
    """An operand's exact values kept as its quantized values and one fp32 scale per block,
    multiplied in fp64 only where they are used (`exact`): the fp64 reference's pieces, on the
    device (gemmconf.chunked). An 8192 x 57344 fp8 weight is 448 MiB of values and 3.5 GiB as
    an fp64 copy. The product is exact: an fp8 value's 4 significant bits (at most) times an
    fp32 scale's 24 fit in fp64's 53.

    It slices, transposes and expands as the reference's tensors do (`narrow`, `transpose`,
    `expand`): the values are sliced, and the scales along with them, block by block."""

    values: torch.Tensor  # the stored values [..., rows, cols] (any view of them)
    scale: torch.Tensor  # fp32, [..., row blocks, column blocks]; leading dims as values' or 1
    block: tuple[int, int]  # a block's rows and columns
    first: tuple[int, int] = (0, 0)  # where values' first row and column sit in scale's first block

    @property
    def shape(self) -> torch.Size:
        return self.values.shape

    def dim(self) -> int:
        return self.values.dim()

    def narrow(self, dim: int, start: int, length: int) -> Scaled:
        """`values.narrow(dim, start, length)`, with the scales of the blocks it touches."""
        dim %= self.dim()
        values = self.values.narrow(dim, start, length)
        axis = dim - (self.dim() - 2)  # 0: rows, 1: columns, negative: a leading dim
        if axis < 0:
            scale = self.scale
            if scale.shape[dim] > 1:  # a scale per batch, else one for every batch
                scale = scale.narrow(dim, start, length)
            return Scaled(values, scale, self.block, self.first)
        extent = self.block[axis]
        offset = self.first[axis] + start  # in the scale's blocks: rows (columns) from its first
        first_block = offset // extent
        scale = self.scale.narrow(dim, first_block, _cdiv(offset + length, extent) - first_block)
        first = (offset % extent, self.first[1]) if axis == 0 else (self.first[0], offset % extent)
        return Scaled(values, scale, self.block, first)

    def transpose(self, dim0: int, dim1: int) -> Scaled:
        """The last two dims swapped (a `t` operand's reference: inputs._reference_value)."""
        assert {dim0 % self.dim(), dim1 % self.dim()} == {self.dim() - 2, self.dim() - 1}
        return Scaled(
            self.values.transpose(-2, -1),
            self.scale.transpose(-2, -1),
            (self.block[1], self.block[0]),
            (self.first[1], self.first[0]),
        )

    def expand(self, shape: Sequence[int]) -> Scaled:
        """Leading (batch) dims expanded to `shape`'s, stride 0 (an `expand` layout)."""
        lead = list(shape[:-2])
        return Scaled(
            self.values.expand(*shape),
            self.scale.expand(*lead, *self.scale.shape[-2:]),
            self.block,
            self.first,
        )

    def exact(self, move: Callable[[torch.Tensor], torch.Tensor] | None = None) -> torch.Tensor:
        """values x scale in fp64, each element times its block's scale; `move` takes the values
        and the scales where the product is made first (a device: a piece's stored values cross,
        an eighth of its fp64 bytes)."""
        values = move(self.values) if move is not None else self.values
        scale = move(self.scale) if move is not None else self.scale
        product = values.to(torch.float64)
        scale = scale.to(device=product.device, dtype=torch.float64)
        for axis in (0, 1):  # each row's (column's) scale, where blocks differ along the dim
            dim = self.dim() - 2 + axis
            if scale.shape[dim] > 1:
                count, extent, first = product.shape[dim], self.block[axis], self.first[axis]
                rows = torch.arange(first, first + count, device=product.device) // extent
                scale = scale.index_select(dim, rows)
        return product.mul_(scale)


@dataclass(frozen=True)
class Quantized:
    """An operand quantized by a recipe."""

    values: torch.Tensor  # in the fp8 dtype (fp4: two values a byte along K)
    scale: torch.Tensor  # what the scaled GEMM takes for this operand
    exact: torch.Tensor | Scaled  # values * scale exactly: fp64, or kept apart (amax recipes)
    global_scale: torch.Tensor | None = None  # NVFP4's second, per-tensor level

    @property
    def dequantized(self) -> torch.Tensor:
        """The exact values in fp64, on the values' device."""
        return self.exact.exact() if isinstance(self.exact, Scaled) else self.exact


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Recipe:
    """One scaling recipe; `name` is the scenario's ``scaling:`` value."""

    name: str
    a_block: tuple[int, int]  # elements of a (M, K) one scale covers; WHOLE spans the dim
    b_block: tuple[int, int]  # elements of b (K, N) one scale covers
    scale_dtype: torch.dtype = torch.float32
    # CUDA eager takes blockwise scales column-major ("outer-dim-major")
    scales_column_major: bool = False
    kind: str = "amax"  # "amax" (scale = amax / max(dtype)), "mx" or "nvfp4" (microscaling.py)
    global_scale: bool = False  # a second, per-tensor fp32 scale per operand (NVFP4)
    ops: tuple[str, ...] = ("scaled_mm", "scaled_mm_v2")  # the ops that take this recipe
    scaling_types: tuple[str, str] = ("TensorWise", "TensorWise")  # F.ScalingType of a, b
    swizzle: str = "none"  # the scale layout CUDA eager wants: "none" or "32_4_4"
    element: str | None = None  # the one operand dtype the recipe makes (fp4); None: fp8 ones

    @property
    def microscaling(self) -> bool:
        return self.kind in ("mx", "nvfp4")

    @property
    def per_tensor(self) -> bool:
        return self.a_block == self.b_block == (WHOLE, WHOLE)

    def block(self, operand: str) -> tuple[int, int]:
        return {"a": self.a_block, "b": self.b_block}[operand]

    def scale_shape(self, operand: str, rows: int, cols: int) -> tuple[int, ...]:
        """The scale's shape for an operand of (rows, cols): 0-dim for a per-tensor scale."""
        if self.per_tensor:
            return ()
        block_rows, block_cols = self.block(operand)
        return (
            1 if block_rows == WHOLE else _cdiv(rows, block_rows),
            1 if block_cols == WHOLE else _cdiv(cols, block_cols),
        )

    def multiples(self) -> dict[str, int]:
        """What M, N and K must be multiples of so that blocks tile the operands (microscaling
        blocks may end part-way: their scales cover what is there)."""
        needed: dict[str, int] = {}
        if self.microscaling:
            return needed
        for dims, block in ((("M", "K"), self.a_block), (("K", "N"), self.b_block)):
            for dim, extent in zip(dims, block, strict=True):
                if extent not in (WHOLE, 1):
                    needed[dim] = max(needed.get(dim, 1), extent)
        return needed

    def shape_error(self, m: int, n: int, k: int) -> str | None:
        """Why blocks of this recipe do not tile an (M, K) x (K, N) problem; None if they do."""
        needed = self.multiples()
        sizes = {"M": m, "N": n, "K": k}
        if not any(sizes[dim] % multiple for dim, multiple in needed.items()):
            return None
        first = next(iter(needed.values()))
        if all(multiple == first for multiple in needed.values()):
            return f"{self.name} scaling needs {' and '.join(needed)} to be multiples of {first}"
        rules = ", ".join(f"{dim} % {multiple} == 0" for dim, multiple in needed.items())
        return f"{self.name} scaling needs {rules}"

    def matches(self, scale_a: ScaleLike, scale_b: ScaleLike, m: int, n: int, k: int) -> bool:
        """Whether these scales implement this recipe for an (M, K) x (K, N) GEMM."""
        if scale_a.dtype != self.scale_dtype or scale_b.dtype != self.scale_dtype:
            return False
        shape_a, shape_b = tuple(scale_a.shape), tuple(scale_b.shape)
        if self.per_tensor:  # one value, whatever its rank
            return math.prod(shape_a) == 1 and math.prod(shape_b) == 1
        return shape_a == self.scale_shape("a", m, k) and shape_b == self.scale_shape("b", k, n)

    def quantize(self, source: torch.Tensor, operand: str, dtype: torch.dtype) -> Quantized:
        """`source` in `dtype`, with scales `amax / max(dtype)` over this recipe's blocks.

        A per-tensor scale works on any rank; blocks apply to the last two dims. Microscaling
        recipes quantize b (K, N) along K, as its transpose; their scales come out as (rows, K
        blocks) with rows M for a and N for b, unswizzled.
        """
        if self.microscaling:
            return self._quantize_microscaled(source, operand, dtype)
        top = torch.finfo(dtype).max
        x = source.float()
        if self.per_tensor:
            amax = x.abs().amax() if x.numel() else torch.tensor(1.0)
            scale = _nonzero(amax) / top
            values = (x / scale).clamp(-top, top).to(dtype)
            exact = _whole(values, scale)
        else:
            rows, cols = x.shape[-2], x.shape[-1]
            block_rows, block_cols = self.block(operand)
            extent_rows = rows if block_rows == WHOLE else block_rows
            extent_cols = cols if block_cols == WHOLE else block_cols
            counts = self.scale_shape(operand, rows, cols)
            blocked_shape = (*x.shape[:-2], counts[0], extent_rows, counts[1], extent_cols)
            if extent_rows == 0 or extent_cols == 0:  # nothing to reduce: a neutral scale
                amax = torch.ones(*x.shape[:-2], *counts)
            else:
                amax = x.reshape(blocked_shape).abs().amax((-3, -1))
            scale = _nonzero(amax) / top
            # each block divided by its scale where it lies (broadcast, not a full-size copy of
            # the scales: two fewer operand-sized tensors, the same quotients bit for bit)
            per_block = scale[..., :, None, :, None]
            blocks = (x.reshape(blocked_shape) / per_block).clamp(-top, top).to(dtype)
            values = blocks.reshape(x.shape)
            exact = Scaled(values, scale.float(), (max(extent_rows, 1), max(extent_cols, 1)))
        scale = scale.to(self.scale_dtype).contiguous()
        if self.scales_column_major:
            scale = scale.t().contiguous().t()
        return Quantized(values, scale, exact)

    def _quantize_microscaled(
        self, source: torch.Tensor, operand: str, dtype: torch.dtype
    ) -> Quantized:
        x = source if operand == "a" else source.transpose(-2, -1)
        if self.kind == "mx":
            q = microscaling.quantize_mx(x, dtype)
        else:
            q = microscaling.quantize_nvfp4(x, global_scale=self.global_scale)
        values, deq = q.values, q.dequantized
        if operand != "a":
            values, deq = values.transpose(-2, -1), deq.transpose(-2, -1)
        return Quantized(values, q.scale, deq, q.global_scale)


def _whole(values: torch.Tensor, scale: torch.Tensor) -> torch.Tensor | Scaled:
    """The exact values of a tensor quantized with one scale: kept apart where it is a matrix or
    a batch of them (the reference's operands), multiplied out otherwise."""
    if values.dim() < 2:
        return values.to(torch.float64) * scale.to(torch.float64)
    rows, cols = values.shape[-2], values.shape[-1]
    one = scale.float().reshape((1,) * values.dim())
    return Scaled(values, one, (max(rows, 1), max(cols, 1)))


def _nonzero(amax: torch.Tensor) -> torch.Tensor:
    """An all-zero block keeps scale 1 (any scale represents it; 0 would divide by zero)."""
    return torch.where(amax > 0, amax, torch.ones_like(amax))


BLOCK = 128  # blockwise: 1x128 activation scales, 128x128 weight scales

_V2 = ("scaled_mm_v2",)


def _microscaled(name: str, block: int, scale_dtype: torch.dtype, **rules: Any) -> Recipe:
    """A microscaling recipe (`F.scaled_mm` only): a `scale_dtype` scale per `block` elements
    along K of both operands (`BlockWise1x<block>`), swizzled 32_4_4 as CUDA eager wants them."""
    scaling_type = f"BlockWise1x{block}"
    return Recipe(
        name,
        a_block=(1, block),
        b_block=(block, 1),
        scale_dtype=scale_dtype,
        ops=_V2,
        scaling_types=(scaling_type, scaling_type),
        swizzle="32_4_4",
        **rules,
    )


RECIPES: dict[str, Recipe] = {
    recipe.name: recipe
    for recipe in (
        Recipe(
            "tensorwise",
            a_block=(WHOLE, WHOLE),
            b_block=(WHOLE, WHOLE),
            ops=("scaled_mm", "scaled_mm_v2"),
        ),
        Recipe(
            "rowwise",
            a_block=(1, WHOLE),
            b_block=(WHOLE, 1),
            ops=("scaled_mm", "scaled_mm_v2", "scaled_grouped_mm"),
            scaling_types=("RowWise", "RowWise"),
        ),
        Recipe(
            "blockwise",
            a_block=(1, BLOCK),
            b_block=(BLOCK, BLOCK),
            scales_column_major=True,
            scaling_types=("BlockWise1x128", "BlockWise128x128"),
        ),
        Recipe(
            "blockwise_1x128",
            a_block=(1, BLOCK),
            b_block=(BLOCK, 1),
            ops=_V2,
            scaling_types=("BlockWise1x128", "BlockWise1x128"),
        ),
        Recipe(
            "blockwise_128x128_1x128",
            a_block=(BLOCK, BLOCK),
            b_block=(BLOCK, 1),
            ops=_V2,
            scaling_types=("BlockWise128x128", "BlockWise1x128"),
        ),
        _microscaled("mx", microscaling.MX_BLOCK, torch.float8_e8m0fnu, kind="mx"),
        _microscaled(
            "nvfp4",
            microscaling.NVFP4_BLOCK,
            torch.float8_e4m3fn,
            kind="nvfp4",
            global_scale=True,
            element="fp4",
        ),
        _microscaled(
            "nvfp4_single",
            microscaling.NVFP4_BLOCK,
            torch.float8_e4m3fn,
            kind="nvfp4",
            element="fp4",
        ),
    )
}
SWIZZLES = ("none", "32_4_4")


def classify(
    scale_a: ScaleLike, scale_b: ScaleLike, m: int, n: int, k: int, *, op: str = "scaled_mm"
) -> Recipe | None:
    """The recipe these scales implement for an (M, K) x (K, N) GEMM of `op`; None for any other.

    The first match in `RECIPES` order wins (one-element scales read as tensorwise).
    """
    for recipe in RECIPES.values():
        if op in recipe.ops and recipe.matches(scale_a, scale_b, m, n, k):
            return recipe
    return None
