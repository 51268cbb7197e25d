"""Which pointwise nodes after a GEMM fuse into its kernel, and as which epilogue steps.

Starting at a GEMM node of an aten-level FX graph, `fuse_chain` walks forward while the current
value has exactly one user and that user is a supported pointwise op or a view of it. Each fused
node becomes `EpilogueStep`s (`kernels.EPILOGUE_OPS`); a node whose steps would not fit the
kernel's `MAX_EPILOGUE_STEPS` slots, or that is unsupported, ends the chain and stays in the graph
(eager aten) on the kernel's output. A value used twice (the graph returns both `mm` and
`relu(mm)`) is never fused past, so every intermediate somebody reads is still produced.

Dtype semantics: the kernel keeps the accumulator in fp32 (int32 for `_int_mm` until a float op).
The chain tracks the dtype eager would hold after each node. Where it changes, steps reproduce
eager's rounding: leaving bf16/fp16 rounds to it first (`round_bf16`), int32 to a float converts
(`to_fp32`). A float value never becomes an integer in the epilogue (the chain stops).

Tensor operands (bias, residual, addmm's C) must broadcast to the value's shape without growing
it; the check compares sizes structurally (ints, or identical symbolic expressions), so dynamic
shapes fuse without adding guards. Views in the chain become "stages": an operand records the
stage whose shape it broadcasts against, and the launcher reshapes it to the GEMM's output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx

from gemmconf_reference.kernels import EPILOGUE_OPS, MAX_EPILOGUE_STEPS

aten = torch.ops.aten
prims = torch.ops.prims

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
CHAIN_DTYPES = (*FLOAT_DTYPES, torch.int32)

Scalar = int | float


@dataclass(frozen=True)
class EpilogueStep:
    """One slot of the kernel's epilogue: `op` with two scalars and maybe a tensor operand."""

    op: str
    s0: Scalar = 0
    s1: Scalar = 0
    operand: int | None = None  # index into the fused call's tensor operands
    stage: int = 0  # the view stage whose shape that operand broadcasts against
    origin: str = ""  # the FX node it implements

    def __post_init__(self) -> None:
        if self.op not in EPILOGUE_OPS:
            raise ValueError(f"unknown epilogue op {self.op!r}; the kernels know {EPILOGUE_OPS}")

    def describe(self, operand_names: list[str]) -> str:
        args = []
        if self.op in ("axpby", "affine", "clamp"):
            args = [repr(self.s0), repr(self.s1)]
        elif self.op in ("div_scalar", "clamp_min", "clamp_max"):
            args = [repr(self.s0)]
        if self.operand is not None:
            args.append(f"x{self.operand}={operand_names[self.operand]}")
        inner = f"({', '.join(args)})" if args else ""
        return f"{self.op}{inner}" + (f" <- {self.origin}" if self.origin else "")


@dataclass
class FusedChain:
    """The GEMM's epilogue as found in the graph."""

    steps: list[EpilogueStep]
    operands: list[fx.Node]  # tensor operands, indexed by EpilogueStep.operand
    stage_shapes: list[Any] = field(default_factory=list)  # FX size args of each view
    nodes: list[fx.Node] = field(default_factory=list)  # fused nodes after the GEMM, in order
    dtype: torch.dtype = torch.float32  # dtype of the chain's final value

    def end(self, gemm: fx.Node) -> fx.Node:
        return self.nodes[-1] if self.nodes else gemm


@dataclass(frozen=True)
class _Op:
    """A translated node before dtype handling: steps with scalars not yet typed."""

    ops: tuple[tuple[str, Scalar, Scalar, fx.Node | None], ...] = ()


def meta_val(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, fx.Node) else None


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def same_size(a: Any, b: Any) -> bool:
    """Statically equal sizes: equal ints, or the same symbolic expression."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, int) or isinstance(b, int):
        return False
    return str(a) == str(b)


def broadcasts_to(shape: Any, target: Any) -> bool:
    """`shape` broadcasts to `target` without changing it (checked without guards)."""
    if len(shape) > len(target):
        return False
    for size, want in zip(reversed(list(shape)), reversed(list(target)), strict=False):
        if not (isinstance(size, int) and size == 1) and not same_size(size, want):
            return False
    return True


def dtype_transition(current: torch.dtype, new: torch.dtype) -> list[str] | None:
    """Steps that take the accumulator from eager's `current` dtype to `new` (None: can't)."""
    if current == new:
        return []
    if new not in CHAIN_DTYPES or new == torch.int32:
        return None  # float -> int stays eager
    if current == torch.int32:
        return ["to_fp32"]
    if current == torch.bfloat16:
        return ["round_bf16"]
    if current == torch.float16:
        return ["round_fp16"]
    return []  # fp32 -> narrower float: rounded once, at the store or the next transition


def _operand_ok(operand: Any, value: fx.Node, shape: Any) -> bool:
    """A tensor node that broadcasts to the chain's current shape on a usable device."""
    val, cur = meta_val(operand), meta_val(value)
    if not isinstance(val, torch.Tensor) or cur is None:
        return False
    if val.dtype not in (*CHAIN_DTYPES, torch.int8, torch.int16, torch.int64, torch.uint8):
        return False
    if val.device != cur.device and val.dim() != 0:
        return False
    return broadcasts_to(val.shape, shape)


def _binary(node: fx.Node, value: fx.Node, shape: Any) -> _Op | None:
    """add/sub/mul/div/rsub with the chain value on either side (div, rsub: first only)."""
    target = node.target
    x, y = node.args[0], node.args[1]
    alpha = node.kwargs.get("alpha", 1)
    if not is_number(alpha) or len(node.args) > 2:
        return None
    if x is value and y is value:
        return None
    value_first = x is value
    other = y if value_first else x
    if not value_first and y is not value:
        return None
    is_tensor = isinstance(other, fx.Node)
    if is_tensor and not _operand_ok(other, value, shape):
        return None
    if not is_tensor and not is_number(other):
        return None
    name = target.overloadpacket  # type: ignore[union-attr]
    if name is aten.add:
        if is_tensor:
            return _Op(
                (("axpby", 1, alpha, other),) if value_first else (("axpby", alpha, 1, other),)
            )
        return _Op(
            (("affine", 1, alpha * other, None),)
            if value_first
            else (("affine", alpha, other, None),)
        )
    if name is aten.sub:
        if is_tensor:
            return _Op(
                (("axpby", 1, -alpha, other),) if value_first else (("axpby", -alpha, 1, other),)
            )
        return _Op(
            (("affine", 1, -alpha * other, None),)
            if value_first
            else (("affine", -alpha, other, None),)
        )
    if name is aten.mul:
        return _Op((("mul_tensor", 0, 0, other),) if is_tensor else (("affine", other, 0, None),))
    if name is aten.rsub and value_first:  # other - alpha * value
        if is_tensor:
            return _Op((("axpby", -alpha, 1, other),))
        return _Op((("affine", -alpha, other, None),))
    if name is aten.div and value_first and "rounding_mode" not in node.kwargs:
        return _Op(
            (("div_tensor", 0, 0, other),) if is_tensor else (("div_scalar", other, 0, None),)
        )
    return None


def _clamp(low: Any, high: Any) -> _Op | None:
    if (low is not None and not is_number(low)) or (high is not None and not is_number(high)):
        return None
    if low is not None and high is not None:
        return _Op((("clamp", low, high, None),))
    if low is not None:
        return _Op((("clamp_min", low, 0, None),))
    if high is not None:
        return _Op((("clamp_max", high, 0, None),))
    return _Op()


def _unary(op: str) -> _Op:
    return _Op(((op, 0, 0, None),))


def translate(node: fx.Node, value: fx.Node, shape: Any) -> _Op | None:
    """The epilogue ops for one aten node applied to the chain value, or None (not fusible)."""
    target, args, kwargs = node.target, node.args, node.kwargs
    if target in BINARY:
        return _binary(node, value, shape)
    if not args or args[0] is not value:
        return None
    if target in UNARY:
        return _unary(UNARY[target])
    if target is aten.gelu.default:
        approximate = kwargs.get("approximate", args[1] if len(args) > 1 else "none")
        return _unary("gelu_tanh" if approximate == "tanh" else "gelu_erf")
    if target is aten.clamp.default:
        low = args[1] if len(args) > 1 else kwargs.get("min")
        high = args[2] if len(args) > 2 else kwargs.get("max")
        return _clamp(low, high)
    if target is aten.clamp_min.default:
        return _clamp(args[1], None)
    if target is aten.clamp_max.default:
        return _clamp(None, args[1])
    if target is aten.hardtanh.default:
        low = args[1] if len(args) > 1 else kwargs.get("min_val", -1.0)
        high = args[2] if len(args) > 2 else kwargs.get("max_val", 1.0)
        return _clamp(low, high)
    if target in CASTS:
        return _Op() if _plain_cast(node) else None
    return None


def _plain_cast(node: fx.Node) -> bool:
    """A dtype-only `_to_copy` / `convert_element_type` (no device, layout or format change)."""
    if node.target is prims.convert_element_type.default:
        return True
    val, src = meta_val(node), meta_val(node.args[0])
    allowed = {"dtype", "layout", "device", "pin_memory", "non_blocking", "memory_format"}
    if set(node.kwargs) - allowed or len(node.args) > 1 or val is None or src is None:
        return False
    if node.kwargs.get("device") is not None and val.device != src.device:
        return False
    layout = node.kwargs.get("layout")
    memory_format = node.kwargs.get("memory_format")
    return layout in (None, torch.strided) and memory_format in (
        None,
        torch.preserve_format,
        torch.contiguous_format,
    )


UNARY = {
    aten.relu.default: "relu",
    aten.silu.default: "silu",
    aten.tanh.default: "tanh",
    aten.sigmoid.default: "sigmoid",
}
BINARY = {
    aten.add.Tensor,
    aten.add.Scalar,
    aten.sub.Tensor,
    aten.sub.Scalar,
    aten.mul.Tensor,
    aten.mul.Scalar,
    aten.div.Tensor,
    aten.div.Scalar,
    aten.rsub.Tensor,
    aten.rsub.Scalar,
}
CASTS = {aten._to_copy.default, prims.convert_element_type.default}
VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}


def fuse_chain(gemm: fx.Node, chain: FusedChain) -> FusedChain:
    """Extends `chain` (the GEMM's own steps, e.g. addmm's C) with the nodes that follow it."""
    value = gemm
    shape = meta_val(gemm).shape
    while len(value.users) == 1:
        (user,) = value.users
        if user.op != "call_function":
            break
        val = meta_val(user)
        if not isinstance(val, torch.Tensor):
            break
        if user.target in VIEWS and user.args[0] is value:
            chain.stage_shapes.append(user.args[1])
            shape = val.shape
        else:
            translated = translate(user, value, shape)
            found = None if translated is None else _node_steps(user, translated, chain, val.dtype)
            if found is None or len(chain.steps) + len(found[0]) > MAX_EPILOGUE_STEPS:
                break
            chain.steps.extend(found[0])
            chain.operands.extend(found[1])
            chain.dtype = val.dtype
        chain.nodes.append(user)
        value = user
    return chain


def _node_steps(
    node: fx.Node, translated: _Op, chain: FusedChain, dtype: torch.dtype
) -> tuple[list[EpilogueStep], list[fx.Node]] | None:
    """The steps (dtype transition first) and new tensor operands for one fused node."""
    transition = dtype_transition(chain.dtype, dtype)
    if transition is None:
        return None
    integer = dtype == torch.int32
    stage = len(chain.stage_shapes)
    steps = [EpilogueStep(name, origin=node.name) for name in transition]
    operands: list[fx.Node] = []
    for name, s0, s1, operand in translated.ops:
        if integer and not (isinstance(s0, int) and isinstance(s1, int)):
            return None  # int32 op with a float scalar: eager would have promoted
        if not integer:
            s0, s1 = float(s0), float(s1)
        index = None
        if operand is not None:
            index = len(chain.operands) + len(operands)
            operands.append(operand)
        steps.append(EpilogueStep(name, s0, s1, index, stage, node.name))
    return steps, operands
