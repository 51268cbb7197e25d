"""The GEMM ops of the suite: one `OpSpec` each, in `OPS`.

An entry says what a scenario of the op may give (operands and their default shapes, a bias or
input C, alpha/beta, a scaling recipe, out_dtype), how eager PyTorch calls it, what the fp64
reference computes, its FLOP count and the shape rule eager enforces. The scenario schema, the
program under test, inputs, markers and the reference backend read it from here; adding an op is
one entry (docs/adding-an-op.md).

Expressions are Python source templates over the program's parameters (the operands' names)
and these terms, filled in per scenario instance:

- ``{alpha}``, ``{beta}``: the scalars as literals; ``{abs_alpha}``: |alpha| (1.0 without alpha)
- ``{bias}``: ``bias`` when the scenario gives one, else ``None``; ``{bias_term}``: `` + bias``
  or nothing
- ``{out_dtype}``: the torch dtype, e.g. ``torch.bfloat16``; ``{use_fast_accum}``: True/False
- ``{offs}``: ``offs`` for a grouped GEMM with a jagged operand, ``None`` for 3-D x 3-D
- ``{scale_a_arg}``, ``{scale_b_arg}``: ``scale_a``, or ``[scale_a, global_a]`` for a recipe with
  a global scale; ``{recipe_a}``, ``{recipe_b}``: the `F.ScalingType` (list) of each operand;
  ``{swizzle}``: the `F.SwizzleType` of the scales

Grouped GEMMs (`grouped`) take B groups: their 3-D operands' leading dim is B, and a 2-D operand
is cut along its jagged dim by `offs` (M for 2-D a x 3-D b, N for 3-D a x 2-D b, K for 2-D x 2-D;
the scenario's `group_sizes`). `out=` variants (`writes`) take the output as a parameter and
return it; their reference ignores it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from gemmconf.gemm import microscaling
from gemmconf.gemm.dtypes import DTYPES, tensor_name
from gemmconf.gemm.scaling import Recipe

# Where an operand's values come from: drawn from the seed ("input"), the scenario's `bias:`
# shape ("addend": C or a bias), quantizing another operand ("scale"), the scenario's group sizes
# ("offsets": int32 ends of each group), or a target the op writes ("output": `out=`, NaN-filled).
ROLES = ("input", "addend", "scale", "offsets", "output")
# Conditions under which an operand is a parameter at all (`OperandSpec.when`).
WHEN = ("jagged", "global_scale")


@dataclass(frozen=True)
class OperandSpec:
    """One parameter of the program: its name there, role, default shape and aten name."""

    name: str
    role: str
    shape: tuple[str, ...] = ()  # over B, M, N, K; inputs only (an addend's comes from `bias:`)
    param: str = ""  # the aten schema's argument name (what a backend binds in an FX node)
    optional: bool = False  # an addend present only when the scenario gives `bias:`
    batch_prefix: bool = False  # gains a leading B when the scenario's shapes have one
    of: str | None = None  # a scale: the operand it dequantizes
    level: int = 0  # a scale: 0 the recipe's scale, 1 its second, per-tensor level (NVFP4)
    when: str | None = None  # a parameter only under this condition (`WHEN`)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"operand {self.name!r}: role {self.role!r} is not one of {ROLES}")
        if self.when is not None and self.when not in WHEN:
            raise ValueError(f"operand {self.name!r}: when {self.when!r} is not one of {WHEN}")


def gemm_flops(dims: Mapping[str, int]) -> int:
    """2 * B * M * N * K: a multiply and an add per term (epilogues are free, as in cuBLAS's)."""
    return 2 * dims.get("B", 1) * dims.get("M", 1) * dims.get("N", 1) * dims.get("K", 1)


@dataclass(frozen=True)
class OpSpec:
    """One GEMM op: its scenario fields, its eager call, its reference and its rules."""

    name: str  # as suite files write `op:`
    aten: str  # the torch.ops.aten packet eager dispatches to (after composite ops decompose)
    operands: tuple[OperandSpec, ...]  # the program's parameters, in order
    call: str  # how the eager program calls it (template: module docstring)
    marker: str
    doc: str
    reference: str | None = None  # the fp64 expression; None: `call` on fp64 inputs
    exact: bool = False  # integer results: judged bit for bit against eager, no fp64 reference
    # per element, |alpha| * (|A| @ |B|): what rounding the GEMM's inputs can cost (TF32 runs);
    # None where the op is not such a float GEMM
    magnitude: str | None = None
    default_dtype: str = "fp32"
    result_dtype: str | None = None  # fixed result dtype; None: the operands' (or out_dtype)
    alpha_beta: bool = False
    scaled: bool = False  # takes a scaling recipe (`scaling:`) and scales per operand
    fast_accum: bool = False  # takes `use_fast_accum`
    out_dtype: str | None = None  # the default `out_dtype`; None: the op takes none
    b_layout: str = "kn"  # b is (K, N); "nk" for linear's (N, K) weight
    same_batch: bool = False  # a and b carry the same leading batch size
    k_multiple: int = 1  # eager rejects K that is not a multiple (K = 0 aside)
    flops: Callable[[Mapping[str, int]], int] = gemm_flops
    out_dtype_optional: bool = False  # takes `out_dtype` with no default (the operands' dtype)
    grouped: bool = False  # B groups, a 2-D operand cut by `offs` (module docstring)
    # the scale tensors as the op takes them, from a recipe's (see `ScaleLayout`)
    scale_layout: ScaleLayout | None = None
    writes: tuple[str, ...] = ()  # parameters the op writes into (`out=`): not inputs to guard
    # eager has kernels for it on some devices only; where it has none, a stand-in computes
    # eager's result from the dequantized inputs and items are judged against fp64 alone
    emulated_where_missing: bool = False
    differentiable: bool = False  # its gradients are GEMMs: `backward: true` scenarios
    # its rows may be sliced off (batch invariance): not so where offsets or scale layouts tie
    # rows together, nor for out= targets
    row_sliceable: bool = True
    # eager returns its result row-major contiguous and the op's contract fixes that layout: a
    # backend's result must carry eager's strides (a layout failure otherwise)
    row_major: bool = False
    # a seed program: the GEMM with what surrounds it in a PyTorch test (cats, a second GEMM,
    # views, autocast); `out_shape` and the loader's shape rules do not describe its result
    composite: bool = False

    def operand(self, name: str) -> OperandSpec:
        for operand in self.operands:
            if operand.name == name:
                return operand
        raise KeyError(f"{self.name} has no operand {name!r}")

    def param(self, name: str) -> str:
        """The aten argument name of an operand."""
        return self.operand(name).param

    @property
    def inputs(self) -> tuple[OperandSpec, ...]:
        """The operands drawn from the seed, with the scenario's shapes, dtypes and layouts."""
        return tuple(o for o in self.operands if o.role == "input")

    @property
    def laid_out(self) -> tuple[OperandSpec, ...]:
        """Operands a scenario shapes and lays out: the inputs and any `out=` target."""
        return tuple(o for o in self.operands if o.role in ("input", "output"))

    @property
    def addend(self) -> OperandSpec | None:
        """The operand the scenario's `bias:` shape gives (C of addmm, a bias), if any."""
        return next((o for o in self.operands if o.role == "addend"), None)

    @property
    def scales(self) -> tuple[OperandSpec, ...]:
        return tuple(o for o in self.operands if o.role == "scale")

    @property
    def operand_kind(self) -> str:
        """The dtype kind its operands have: "float", "fp8" or "int"."""
        return DTYPES[self.default_dtype].kind

    @property
    def batched(self) -> bool:
        """Its operands carry a batch dim of their own (bmm), not a broadcast one (matmul)."""
        return any("B" in o.shape for o in self.inputs)

    def parameters(
        self, *, has_bias: bool, present: frozenset[str] = frozenset()
    ) -> tuple[str, ...]:
        """The program's parameter names for a scenario with or without `bias:`, with the
        conditions in `present` (`WHEN`) holding."""
        return tuple(
            o.name
            for o in self.operands
            if (has_bias or not o.optional) and (o.when is None or o.when in present)
        )

    def result_dtype_for(self, dtype: str, out_dtype: str | None = None) -> str:
        """The dtype name of the op's result for operands of `dtype`."""
        if self.out_dtype is not None:
            return out_dtype or self.out_dtype
        if self.out_dtype_optional and out_dtype:
            return out_dtype
        return self.result_dtype or tensor_name(dtype)

    def k_of_b(self, b: Sequence[int]) -> int:
        if len(b) == 1:  # matmul with a 1-D b
            return b[0]
        return b[-1] if self.b_layout == "nk" else b[-2]

    def out_shape(self, a: Sequence[int], b: Sequence[int], groups: int = 1) -> list[int]:
        if self.grouped:
            return grouped_out_shape(a, b, groups)
        if len(b) == 1:  # matmul with a 1-D b: a vector result
            return [*a[:-1]]
        n = b[-2] if self.b_layout == "nk" else b[-1]
        if len(a) == 1:  # matmul with a 1-D a
            return [*b[:-2], n]
        if len(b) > 2:  # matmul broadcasts the batch dims
            batch = _broadcast(list(a[:-2]), list(b[:-2]))
            return [*(batch or []), a[-2], n]
        return [*a[:-1], n]

    def shape_error(self, a: list[int], b: list[int]) -> str | None:
        """Why eager rejects operands of shapes a and b; None if it accepts them."""
        k = self.k_of_b(b)
        if a[-1] != k:
            return f"inner dimensions differ: a is {a}, b is {b} (K {a[-1]} != {k})"
        if (self.same_batch or (self.grouped and len(a) == len(b) == 3)) and a[0] != b[0]:
            return f"batch sizes differ: a is {a}, b is {b}"
        if len(a) > 2 and len(b) > 2 and _broadcast(list(a[:-2]), list(b[:-2])) is None:
            return f"batch dims do not broadcast: a is {a}, b is {b}"
        if a[-1] % self.k_multiple and a[-1] != 0:
            return f"{self.name} needs K % {self.k_multiple} == 0 (K = {a[-1]})"
        return None


def _broadcast(x: list[int], y: list[int]) -> list[int] | None:
    """The broadcast of two batch shapes; None where they do not broadcast."""
    out = []
    for i in range(1, max(len(x), len(y)) + 1):
        p = x[-i] if i <= len(x) else 1
        q = y[-i] if i <= len(y) else 1
        if p != q and 1 not in (p, q):
            return None
        out.append(max(p, q) if 0 not in (p, q) else 0)
    return out[::-1]


def grouped_out_shape(a: Sequence[int], b: Sequence[int], groups: int) -> list[int]:
    """The output of a grouped GEMM: (G, M, N) for 2-D x 2-D and 3-D x 3-D, else 2-D."""
    if len(a) == 2 and len(b) == 2:
        return [groups, a[0], b[1]]
    if len(a) == 2:
        return [a[0], b[-1]]
    if len(b) == 2:
        return [a[1], b[1]]
    return [a[0], a[1], b[-1]]


def jagged_dim(a_rank: int, b_rank: int) -> str | None:
    """The dim a grouped GEMM's offsets cut: M, N or K; None for 3-D x 3-D."""
    return {(2, 3): "M", (3, 2): "N", (2, 2): "K"}.get((a_rank, b_rank))


class ScaleLayout(Protocol):
    """How an op takes a recipe's scale for one operand (`Recipe.quantize` makes it (rows,
    blocks)-shaped, or the block-shape of the operand's last two dims)."""

    def __call__(
        self,
        recipe: Recipe,
        operand: str,
        scale: torch.Tensor,
        *,
        ranks: tuple[int, int],
        groups: int,
        swizzle: str,
    ) -> torch.Tensor: ...


def grouped_scale_layout(
    recipe: Recipe,
    operand: str,
    scale: torch.Tensor,
    *,
    ranks: tuple[int, int],
    groups: int,
    swizzle: str,
) -> torch.Tensor:
    """`_scaled_grouped_mm`'s rowwise scales: 1-D for a 2-D operand, (G, rows) for a 3-D one;
    2-D x 2-D takes M (N) scales per group, which its operands' quantization made group by
    group (`gemmconf.inputs`), each group's after the last."""
    del recipe, swizzle, ranks, groups
    flat = scale.squeeze(-1) if operand == "a" else scale.squeeze(-2)
    return flat.contiguous()


def scaled_mm_v2_scale_layout(
    recipe: Recipe,
    operand: str,
    scale: torch.Tensor,
    *,
    ranks: tuple[int, int],
    groups: int,
    swizzle: str,
) -> torch.Tensor:
    """`F.scaled_mm`'s scale layouts, as its meta function states them: 1x128 scales are
    (rows, K/128) column-major; 128x128 scales are (K/128 padded to a multiple of 4, rows/128)
    column-major; MX and NVFP4 scales (rows, K blocks), swizzled when `swizzle` says so."""
    del ranks, groups
    if recipe.microscaling:
        return microscaling.swizzle(scale) if swizzle == "32_4_4" else scale
    block = recipe.block(operand)
    if block == (1, 128):  # a: (M, K/128)
        return scale.t().contiguous().t()
    if block == (128, 1):  # b: (K/128, N) -> (N, K/128), stride (1, N)
        return scale.contiguous().t()
    if block == (128, 128):  # a: (M/128, K/128), b: (K/128, N/128) -> (K/128 padded, rows/128)
        by_k = scale.t() if operand == "a" else scale
        padded = torch.zeros(-(-by_k.shape[0] // 4) * 4, by_k.shape[1], dtype=scale.dtype)
        padded[: by_k.shape[0]] = by_k
        return padded.t().contiguous().t()
    return scale


_A = OperandSpec("a", "input", ("M", "K"), param="self")
_B = OperandSpec("b", "input", ("K", "N"), param="mat2")
_B3 = OperandSpec("b", "input", ("B", "K", "N"), param="mat2")  # bmm's batch, grouped ops' groups
_BIAS = OperandSpec("bias", "addend", param="bias", optional=True)
# F.linear's operands: the input (a leading batch allowed), the weight stored [N, K], the bias
_LINEAR_OPERANDS = (
    OperandSpec("a", "input", ("M", "K"), param="input", batch_prefix=True),
    OperandSpec("b", "input", ("N", "K"), param="weight"),
    _BIAS,
)
_C = OperandSpec("c", "addend", param="self")
_OFFS = OperandSpec("offs", "offsets", param="offs", when="jagged")
_SCALES = (
    OperandSpec("scale_a", "scale", param="scale_a", of="a"),
    OperandSpec("scale_b", "scale", param="scale_b", of="b"),
)
# the rules of the fp8 scaled ops: e4m3fn operands unless a scenario says otherwise, a bf16
# result by default, `use_fast_accum`, and K a multiple of 16 (eager rejects any other)
_FP8_SCALED: dict[str, Any] = {
    "default_dtype": "e4m3fn",
    "scaled": True,
    "fast_accum": True,
    "out_dtype": "bf16",
    "k_multiple": 16,
}
# the operands of the ops that have an out= variant, in their parameter order
OPERANDS_OF: dict[str, tuple[OperandSpec, ...]] = {
    "mm": (_A, _B),
    "addmm": (_C, OperandSpec("a", "input", ("M", "K"), param="mat1"), _B),
    "bmm": (
        OperandSpec("a", "input", ("B", "M", "K"), param="self"),
        OperandSpec("b", "input", ("B", "K", "N"), param="mat2"),
    ),
    "baddbmm": (
        _C,
        OperandSpec("a", "input", ("B", "M", "K"), param="batch1"),
        OperandSpec("b", "input", ("B", "K", "N"), param="batch2"),
    ),
    "matmul": (
        OperandSpec("a", "input", ("M", "K"), param="self", batch_prefix=True),
        OperandSpec("b", "input", ("K", "N"), param="other"),
    ),
}
_MATMUL_MAGNITUDE = "{abs_alpha} * torch.matmul(a.abs(), b.abs())"


def _seed_program(
    name: str,
    call: str,
    doc: str,
    *,
    operands: tuple[OperandSpec, ...] = (_A, _B),
    aten: str = "mm",
    marker: str | None = None,
    row_sliceable: bool = False,
    **rules: Any,
) -> OpSpec:
    """A seed program (`composite`): a GEMM with what surrounds it in a PyTorch test. Marked as
    its aten op unless `marker` says otherwise; its rows are not sliced off (what surrounds the
    GEMM ties them) unless `row_sliceable`."""
    return OpSpec(
        name,
        aten=aten,
        operands=operands,
        call=call,
        marker=marker or aten,
        doc=doc,
        row_sliceable=row_sliceable,
        composite=True,
        **rules,
    )


OPS: dict[str, OpSpec] = {
    op.name: op
    for op in (
        OpSpec(
            "mm",
            row_major=True,
            aten="mm",
            operands=(_A, _B),
            call="torch.mm(a, b)",
            magnitude=_MATMUL_MAGNITUDE,
            differentiable=True,
            marker="mm",
            doc="(M, K) @ (K, N)",
        ),
        OpSpec(
            "addmm",
            row_major=True,
            aten="addmm",
            operands=(_C, OperandSpec("a", "input", ("M", "K"), param="mat1"), _B),
            call="torch.addmm(c, a, b, beta={beta}, alpha={alpha})",
            magnitude=_MATMUL_MAGNITUDE,
            alpha_beta=True,
            differentiable=True,
            marker="addmm",
            doc="beta * C + alpha * (A @ B)",
        ),
        OpSpec(
            "bmm",
            row_major=True,
            aten="bmm",
            operands=(OperandSpec("a", "input", ("B", "M", "K"), param="self"), _B3),
            call="torch.bmm(a, b)",
            magnitude=_MATMUL_MAGNITUDE,
            same_batch=True,
            differentiable=True,
            marker="bmm",
            doc="(B, M, K) @ (B, K, N)",
        ),
        OpSpec(
            "baddbmm",
            row_major=True,
            aten="baddbmm",
            operands=(
                _C,
                OperandSpec("a", "input", ("B", "M", "K"), param="batch1"),
                OperandSpec("b", "input", ("B", "K", "N"), param="batch2"),
            ),
            call="torch.baddbmm(c, a, b, beta={beta}, alpha={alpha})",
            magnitude=_MATMUL_MAGNITUDE,
            alpha_beta=True,
            same_batch=True,
            differentiable=True,
            marker="baddbmm",
            doc="beta * C + alpha * (A @ B), batched",
        ),
        OpSpec(
            "linear",
            row_major=True,
            aten="linear",
            operands=_LINEAR_OPERANDS,
            call="F.linear(a, b, {bias})",
            magnitude="F.linear(a.abs(), b.abs())",
            b_layout="nk",
            differentiable=True,
            marker="linear",
            doc="A @ W.T (+ bias); A may carry a leading batch",
        ),
        OpSpec(
            "matmul",
            row_major=True,
            aten="matmul",
            operands=(
                OperandSpec("a", "input", ("M", "K"), param="self", batch_prefix=True),
                OperandSpec("b", "input", ("K", "N"), param="other"),
            ),
            call="torch.matmul(a, b)",
            magnitude=_MATMUL_MAGNITUDE,
            differentiable=True,
            marker="matmul",
            doc="A @ B with broadcasting",
        ),
        OpSpec(
            "scaled_mm",
            row_major=True,
            aten="_scaled_mm",
            operands=(_A, _B, *_SCALES, _BIAS),
            call=(
                "torch._scaled_mm(a, b, scale_a, scale_b, bias={bias}, out_dtype={out_dtype}, "
                "use_fast_accum={use_fast_accum})"
            ),
            # operands arrive dequantized with their scales folded in (`Recipe.quantize`)
            reference="a @ b{bias_term}",
            **_FP8_SCALED,
            marker="scaled_mm",
            doc="fp8 (M, K) @ (K, N) with per-operand scales (`scaling:` names the recipe)",
        ),
        OpSpec(
            "int_mm",
            row_major=True,
            aten="_int_mm",
            operands=(_A, _B),
            call="torch._int_mm(a, b)",
            exact=True,
            default_dtype="int8",
            result_dtype="int32",
            marker="int_mm",
            doc="int8 (M, K) @ (K, N) -> int32",
        ),
        OpSpec(
            "grouped_mm",
            aten="_grouped_mm",
            operands=(_A, _B3, _OFFS, _BIAS),
            call="F.grouped_mm(a, b, offs={offs}, bias={bias}, out_dtype={out_dtype})",
            reference="per_group_mm(a, b, {offs}){bias_term}",
            default_dtype="bf16",
            out_dtype_optional=True,
            grouped=True,
            differentiable=True,
            row_sliceable=False,
            marker="grouped_mm",
            doc="B GEMMs in one call; a 2-D operand cut into groups by offs (MoE experts)",
        ),
        OpSpec(
            "scaled_grouped_mm",
            aten="_scaled_grouped_mm",
            operands=(_A, _B3, *_SCALES, _OFFS),
            call=(
                "torch._scaled_grouped_mm(a, b, scale_a, scale_b, offs={offs}, "
                "out_dtype={out_dtype}, use_fast_accum={use_fast_accum})"
            ),
            reference="per_group_mm(a, b, {offs})",
            **_FP8_SCALED,
            grouped=True,
            scale_layout=grouped_scale_layout,
            emulated_where_missing=True,
            row_sliceable=False,
            marker="scaled_grouped_mm",
            doc="grouped_mm of fp8 operands with rowwise scales per group",
        ),
        OpSpec(
            "scaled_mm_v2",
            aten="_scaled_mm_v2",
            operands=(
                _A,
                _B,
                *_SCALES,
                OperandSpec("global_a", "scale", of="a", level=1, when="global_scale"),
                OperandSpec("global_b", "scale", of="b", level=1, when="global_scale"),
                _BIAS,
            ),
            call=(
                "F.scaled_mm(a, b, {scale_a_arg}, {recipe_a}, {scale_b_arg}, {recipe_b}, "
                "swizzle_a={swizzle}, swizzle_b={swizzle}, bias={bias}, output_dtype={out_dtype}, "
                "use_fast_accum={use_fast_accum})"
            ),
            reference="a @ b{bias_term}",
            **_FP8_SCALED,
            scale_layout=scaled_mm_v2_scale_layout,
            emulated_where_missing=True,
            row_sliceable=False,
            marker="scaled_mm",
            doc="F.scaled_mm: fp8/fp4 operands with any ScalingType pair (MX, NVFP4, blockwise)",
        ),
        *(
            OpSpec(
                f"{base}_out",
                aten=base if base != "matmul" else "mm",
                operands=(
                    *OPERANDS_OF[base],
                    OperandSpec(
                        "out", "output", out_shape, param="out", batch_prefix=base == "matmul"
                    ),
                ),
                call=call[:-1] + ", out=out)",
                reference=call,
                magnitude=_MATMUL_MAGNITUDE,
                alpha_beta=base in ("addmm", "baddbmm"),
                same_batch=base in ("bmm", "baddbmm"),
                writes=("out",),
                row_sliceable=False,
                marker=base,
                doc=f"{base} writing into a given out= tensor",
            )
            for base, call, out_shape in (
                ("mm", "torch.mm(a, b)", ("M", "N")),
                ("addmm", "torch.addmm(c, a, b, beta={beta}, alpha={alpha})", ("M", "N")),
                ("bmm", "torch.bmm(a, b)", ("B", "M", "N")),
                ("baddbmm", "torch.baddbmm(c, a, b, beta={beta}, alpha={alpha})", ("B", "M", "N")),
                ("matmul", "torch.matmul(a, b)", ("M", "N")),
            )
        ),
        # Seed programs: GEMMs with what surrounds them in a PyTorch test (test names in docs)
        _seed_program(
            "mm_plus_mm",
            "torch.mm(a, b) + torch.mm(c, d)",
            "a @ b + c @ d (inductor's mm_plus_mm template)",
            operands=(
                _A,
                _B,
                OperandSpec("c", "input", ("M", "K")),
                OperandSpec("d", "input", ("K", "N")),
            ),
        ),
        _seed_program(
            "cat_mm",
            "torch.cat([torch.mm(a, a), torch.cos(b)])",
            "x @ x written into a cat with cos(y) (square x)",
            operands=(_A, OperandSpec("b", "input", ("M", "K"))),
        ),
        _seed_program(
            "cat_mm_add",
            "(torch.cat([(x := torch.mm(a, a)), torch.cos(b)]), x + 1)",
            "x @ x written into a cat with cos(y) and read by an add (square x)",
            operands=(_A, OperandSpec("b", "input", ("M", "K"))),
        ),
        _seed_program(
            "cat_mm_pair",
            "(torch.cat([(x := torch.mm(a, a)), (y := torch.cos(b))]), torch.cat([y, x]), x + 1)",
            "x @ x read by two cats and an add (square x)",
            operands=(_A, OperandSpec("b", "input", ("M", "K"))),
        ),
        _seed_program(
            "cat_addmm",
            "torch.cat([torch.addmm(c, a, b), torch.addmm(b, c, a)], 1)",
            "two addmm of three square matrices, concatenated",
            operands=(_A, _B, OperandSpec("c", "input", ("M", "N"))),
            aten="addmm",
        ),
        _seed_program(
            "linear_autocast",
            "autocast_linear(a, b, {bias})",
            "F.linear under torch.autocast (bf16 on a CPU, fp16 on CUDA)",
            operands=_LINEAR_OPERANDS,
            reference="F.linear(a, b, {bias})",
            b_layout="nk",
            marker="linear",
            row_sliceable=True,
        ),
        _seed_program(
            "mm_pair",
            "(torch.mm(a, b), torch.mm(a, c))",
            "a @ b and a @ c: two GEMMs of one a (c may have another N)",
            operands=(_A, _B, OperandSpec("c", "input", ("K", "N"))),
        ),
        _seed_program(
            "mixed_mm",
            "torch.mm(a, b.to(a.dtype))",
            "a @ b with b in another dtype (int8 weights), converted to a's first",
        ),
        _seed_program(
            "mm_prologue",
            "torch.mm(cexpr_prologue(a), b)",
            "reshape, slice, contiguous and as_strided views of a before a @ b (M even)",
        ),
        _seed_program(
            "tiled_mm",
            "torch.mm(tiled(a), tiled(b))",
            "a and b each repeated 8 x 8 inside the program, then multiplied: (8M, 8K) @ (8K, "
            "8N); a column-major operand is repeated as stored and transposed after",
            row_major=True,
        ),
        _seed_program(
            "nonzero_mm",
            "torch.mm(nonzero_rows(a), b)",
            "a's rows but its last two, picked by torch.nonzero, times b: an (M - 2, N) product "
            "whose M is data-dependent (unbacked under dynamo_config "
            "capture_dynamic_output_shape_ops); M = 2 multiplies no row",
        ),
        _seed_program(
            "diagonal_writes_mm",
            "diagonal_writes_mm(a, c, b, d)",
            "(a * c) with d written into its diagonal in place, times b, then 1 added to the "
            "product's diagonal in place; returns that diagonal (square a, c)",
            operands=(
                _A,
                _B,
                OperandSpec("c", "input", ("M", "K")),
                OperandSpec("d", "input", ("M",)),
            ),
        ),
        _seed_program(
            "sin_mm",
            "torch.mm(torch.sin(a), b)",
            "sin(a) @ b: a pointwise prologue on a",
            row_major=True,
        ),
        _seed_program(
            "sin_mm_cos",
            "torch.cos(torch.mm(torch.sin(a), b))",
            "cos(sin(a) @ b): the GEMM between two pointwise ops, only the last returned",
        ),
        _seed_program(
            "cat_self_mm",
            "torch.mm((d := 1 + torch.cat([2 * a, 2 * b], dim=-1)), d)[:, : a.shape[1]] + 2 * a",
            "d @ d of d = 1 + cat([2a, 2b], -1) (square), its first columns plus 2a",
            operands=(_A, OperandSpec("b", "input", ("M", "K"))),
            b_layout="nk",  # b is cut along K as a is: its last dim is a's
        ),
        _seed_program(
            "act_mm_plus_mm",
            "torch.sigmoid(torch.relu(torch.mm(torch.sin(a), torch.cos(b)))) + torch.mm(a, b)",
            "sigmoid(relu(sin(a) @ cos(b))) + a @ b: two GEMMs of the same operands",
        ),
        _seed_program(
            "linear_offset_addend",
            "c + F.linear(a, b[: c.shape[1]]) + b[b.shape[0] - c.shape[0] :]",
            "c + F.linear(a, w[:N]) + w[-M:]: the weight and an addend are views of one w "
            "(the addend at a storage offset)",
            operands=(
                OperandSpec("c", "input", ("M", "N")),
                OperandSpec("a", "input", ("M", "K")),
                OperandSpec("b", "input", ("N", "K")),
            ),
            b_layout="nk",
            marker="linear",
        ),
    )
}


def ops_where(predicate: Callable[[OpSpec], bool]) -> tuple[str, ...]:
    """The names of the ops `predicate` holds for, in registry order."""
    return tuple(name for name, op in OPS.items() if predicate(op))
