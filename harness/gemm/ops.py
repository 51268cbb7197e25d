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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from gemmconf.gemm.dtypes import DTYPES, tensor_name

# Where an operand's values come from: drawn from the seed ("input"), the scenario's `bias:`
# shape ("addend": C or a bias), or quantizing another operand ("scale").
ROLES = ("input", "addend", "scale")


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

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"operand {self.name!r}: role {self.role!r} is not one of {ROLES}")


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

    def parameters(self, *, has_bias: bool) -> tuple[str, ...]:
        """The program's parameter names for a scenario with or without `bias:`."""
        return tuple(o.name for o in self.operands if has_bias or not o.optional)

    def result_dtype_for(self, dtype: str, out_dtype: str | None = None) -> str:
        """The dtype name of the op's result for operands of `dtype`."""
        if self.out_dtype is not None:
            return out_dtype or self.out_dtype
        return self.result_dtype or tensor_name(dtype)

    def k_of_b(self, b: Sequence[int]) -> int:
        return b[-1] if self.b_layout == "nk" else b[-2]

    def out_shape(self, a: Sequence[int], b: Sequence[int]) -> list[int]:
        n = b[-2] if self.b_layout == "nk" else b[-1]
        return [*a[:-1], n]

    def shape_error(self, a: list[int], b: list[int]) -> str | None:
        """Why eager rejects operands of shapes a and b; None if it accepts them."""
        k = self.k_of_b(b)
        if a[-1] != k:
            return f"inner dimensions differ: a is {a}, b is {b} (K {a[-1]} != {k})"
        if self.same_batch and a[0] != b[0]:
            return f"batch sizes differ: a is {a}, b is {b}"
        if a[-1] % self.k_multiple and a[-1] != 0:
            return f"{self.name} needs K % {self.k_multiple} == 0 (K = {a[-1]})"
        return None


_A = OperandSpec("a", "input", ("M", "K"), param="self")
_B = OperandSpec("b", "input", ("K", "N"), param="mat2")
_C = OperandSpec("c", "addend", param="self")
_MATMUL_MAGNITUDE = "{abs_alpha} * torch.matmul(a.abs(), b.abs())"

OPS: dict[str, OpSpec] = {
    op.name: op
    for op in (
        OpSpec(
            "mm",
            aten="mm",
            operands=(_A, _B),
            call="torch.mm(a, b)",
            magnitude=_MATMUL_MAGNITUDE,
            marker="mm",
            doc="(M, K) @ (K, N)",
        ),
        OpSpec(
            "addmm",
            aten="addmm",
            operands=(_C, OperandSpec("a", "input", ("M", "K"), param="mat1"), _B),
            call="torch.addmm(c, a, b, beta={beta}, alpha={alpha})",
            magnitude=_MATMUL_MAGNITUDE,
            alpha_beta=True,
            marker="addmm",
            doc="beta * C + alpha * (A @ B)",
        ),
        OpSpec(
            "bmm",
            aten="bmm",
            operands=(
                OperandSpec("a", "input", ("B", "M", "K"), param="self"),
                OperandSpec("b", "input", ("B", "K", "N"), param="mat2"),
            ),
            call="torch.bmm(a, b)",
            magnitude=_MATMUL_MAGNITUDE,
            same_batch=True,
            marker="bmm",
            doc="(B, M, K) @ (B, K, N)",
        ),
        OpSpec(
            "baddbmm",
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
            marker="baddbmm",
            doc="beta * C + alpha * (A @ B), batched",
        ),
        OpSpec(
            "linear",
            aten="linear",
            operands=(
                OperandSpec("a", "input", ("M", "K"), param="input", batch_prefix=True),
                OperandSpec("b", "input", ("N", "K"), param="weight"),
                OperandSpec("bias", "addend", param="bias", optional=True),
            ),
            call="F.linear(a, b, {bias})",
            magnitude="F.linear(a.abs(), b.abs())",
            b_layout="nk",
            marker="linear",
            doc="A @ W.T (+ bias); A may carry a leading batch",
        ),
        OpSpec(
            "matmul",
            aten="matmul",
            operands=(
                OperandSpec("a", "input", ("M", "K"), param="self", batch_prefix=True),
                OperandSpec("b", "input", ("K", "N"), param="other"),
            ),
            call="torch.matmul(a, b)",
            magnitude=_MATMUL_MAGNITUDE,
            marker="matmul",
            doc="A @ B with broadcasting",
        ),
        OpSpec(
            "scaled_mm",
            aten="_scaled_mm",
            operands=(
                _A,
                _B,
                OperandSpec("scale_a", "scale", param="scale_a", of="a"),
                OperandSpec("scale_b", "scale", param="scale_b", of="b"),
                OperandSpec("bias", "addend", param="bias", optional=True),
            ),
            call=(
                "torch._scaled_mm(a, b, scale_a, scale_b, bias={bias}, out_dtype={out_dtype}, "
                "use_fast_accum={use_fast_accum})"
            ),
            # operands arrive dequantized with their scales folded in (`Recipe.quantize`)
            reference="a @ b{bias_term}",
            default_dtype="e4m3fn",
            scaled=True,
            fast_accum=True,
            out_dtype="bf16",
            k_multiple=16,
            marker="scaled_mm",
            doc="fp8 (M, K) @ (K, N) with per-operand scales (`scaling:` names the recipe)",
        ),
        OpSpec(
            "int_mm",
            aten="_int_mm",
            operands=(_A, _B),
            call="torch._int_mm(a, b)",
            exact=True,
            default_dtype="int8",
            result_dtype="int32",
            marker="int_mm",
            doc="int8 (M, K) @ (K, N) -> int32",
        ),
    )
}


def ops_where(predicate: Callable[[OpSpec], bool]) -> tuple[str, ...]:
    """The names of the ops `predicate` holds for, in registry order."""
    return tuple(name for name, op in OPS.items() if predicate(op))
