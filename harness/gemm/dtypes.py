"""GEMM dtypes by the names suite files give them: the one table of what each name means.

A row says which torch dtype holds the values, the numeric kind (``float``, ``fp8``, ``fp4``
(``float4_e2m1fn_x2``: two e2m1 values a byte, K halved in storage), ``int``, or
``scale`` for the 8-bit exponent-only block scales of MX formats), whether a scenario's operands
may take it and whether it may be a scaled GEMM's ``out_dtype``. ``tf32`` is fp32 storage with
TF32 matrix math allowed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class DType:
    """One dtype as suite files name it."""

    name: str
    torch_dtype: torch.dtype
    kind: str  # "float", "fp8", "fp4", "int", "scale"
    operand: bool = True  # a scenario's operands may take it
    out: bool = False  # a scaled GEMM may write it (`out_dtype`)
    tf32: bool = False  # fp32 storage with TF32 matrix math allowed


# Row order is the order error messages list the names in.
DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("fp32", torch.float32, "float", out=True),
        DType("tf32", torch.float32, "float", tf32=True),
        DType("fp16", torch.float16, "float", out=True),
        DType("bf16", torch.bfloat16, "float", out=True),
        DType("e4m3fn", torch.float8_e4m3fn, "fp8", out=True),
        DType("e5m2", torch.float8_e5m2, "fp8", out=True),
        DType("fp4", torch.float4_e2m1fn_x2, "fp4"),
        DType("int8", torch.int8, "int"),
        DType("fp64", torch.float64, "float"),
        DType("int32", torch.int32, "int", out=True),
        DType("e4m3fnuz", torch.float8_e4m3fnuz, "fp8", operand=False),
        DType("e5m2fnuz", torch.float8_e5m2fnuz, "fp8", operand=False),
        DType("e8m0", torch.float8_e8m0fnu, "scale", operand=False),
    )
}
OPERAND_DTYPES: tuple[str, ...] = tuple(d.name for d in DTYPES.values() if d.operand)
OUT_DTYPES: tuple[str, ...] = tuple(d.name for d in DTYPES.values() if d.out)
FP8: tuple[str, ...] = tuple(d.name for d in DTYPES.values() if d.kind == "fp8" and d.operand)
FP8_TORCH: frozenset[torch.dtype] = frozenset(DTYPES[name].torch_dtype for name in FP8)
# 8-bit float storage, operand or not (fp8 values, MX block scales): an output of one is judged
# by the fp8 tolerance row
FLOAT8: frozenset[torch.dtype] = frozenset(
    d.torch_dtype for d in DTYPES.values() if d.kind in ("fp8", "scale")
)
# operands made by quantizing with a scaling recipe: fp8, and fp4 (two e2m1 values a byte)
QUANTIZED: tuple[str, ...] = tuple(
    d.name for d in DTYPES.values() if d.kind in ("fp8", "fp4") and d.operand
)


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype a suite dtype name is stored as."""
    return DTYPES[name].torch_dtype


def is_fp8(name: str) -> bool:
    """Whether operands of this dtype are quantized with an fp8 scaling recipe."""
    return name in FP8


def is_quantized(name: str) -> bool:
    """Whether operands of this dtype are made by a scaling recipe (fp8, fp4)."""
    return name in QUANTIZED


def scaled(name: str) -> bool:
    """Whether a GEMM of this dtype multiplies scaled narrow floats (fp8, fp4, operand or not),
    whose products a correct backend sums in fp32."""
    return name in DTYPES and DTYPES[name].kind in ("fp8", "fp4")


def tensor_name(name: str) -> str:
    """The name of the dtype that tensors of `name` carry (``tf32`` values are fp32 tensors)."""
    stored = DTYPES[name].torch_dtype
    return next(d.name for d in DTYPES.values() if d.torch_dtype == stored)


def name_of(dtype: torch.dtype) -> str | None:
    """The suite's name of a torch dtype (the first row that stores it: float32 is ``fp32``, not
    ``tf32``); None for a dtype the suite has no name for."""
    return next((d.name for d in DTYPES.values() if d.torch_dtype == dtype), None)
