"""The fp64 reference in bounded pieces (docs/design.md, "Parallelism and scale").

An fp64 copy of a large item's operands is four to eight times their size: B=10, M=4096, N=2048,
K=25728 in fp16 is 3.2 GB of operands and 12.6 GB in fp64. Computed in one piece, twelve xdist
workers' references ran an 80 GB GPU out of memory. The reference is instead evaluated over
slices of the batch (B), the rows (M) and the columns (N): each slice of the inputs (kept on the
CPU by `inputs.build` in their own dtype, fp8 ones as stored values and scales) moves to the
device, is made fp64 there, the program runs on it, and its output is written into the full
output. What one piece holds on the device is at most `CHUNK_BYTES` (fp64 inputs,
output and temporaries), so the reference's footprint does not grow with the item. Rows and
columns are cut into the fewest pieces that fit: a vocabulary projection (M = 512, N = 128256,
K = 4096) has a weight of 4.2 GB in fp64, which slices of rows alone would move again for every
row (512 pieces); slices of columns take 7.

Which dims an input carries comes from the scenario (operand shapes, `bias:`, add_tensor shapes),
so slicing needs no guess: an input is sliced along a dim only where its shape expression is that
dim's name; an input without it is passed whole (a 0-dim scale; a bias [N] when N is not sliced).
An output's batch is its first dim, its rows its second-to-last and its columns its last (every
GEMM op here: [..., M, N]; every epilogue step is elementwise). Where anything does not add up
(a shape expression such as ``M + 1``, a tensor of another shape than its expressions), the
reference runs in one piece as before. A small item is one piece: the same call as an unchunked
reference.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gemmconf import inputs, staging
from gemmconf.gemm.scaling import WHOLE, Scaled
from gemmconf.scenario import TENSOR_EPILOGUES, ScenarioInstance, eval_dim

CHUNK_BYTES = 1 << 30  # what one piece of the reference may hold on the device
FP64 = 8
OUTPUT_TEMPORARIES = 4  # fp64 output-sized values a program makes (GEMM, alpha*, +beta*C, epilogue)
CHUNK_DIMS = ("B", "M", "N")  # the dims sliced; a batch first (it divides every operand)
MAX_ROW_CUTS = 1024  # row counts tried when rows and columns are both sliced


@dataclass(frozen=True)
class Plan:
    """How to slice one shape set's reference: `steps[dim]` rows of `dim` per piece (absent: the
    whole dim), and what a piece holds on the device (bytes)."""

    sizes: dict[str, int]  # the shape set's dims
    steps: dict[str, int]
    piece_bytes: int
    whole_bytes: int  # what the reference holds in one piece

    @property
    def pieces(self) -> int:
        return math.prod(-(-self.sizes[d] // s) for d, s in self.steps.items() if s)

    def ranges(self) -> list[dict[str, tuple[int, int]]]:
        """Each piece as {dim: (start, stop)} over the sliced dims."""
        pieces: list[dict[str, tuple[int, int]]] = [{}]
        for dim in CHUNK_DIMS:
            step = self.steps.get(dim)
            if not step:
                continue
            size = self.sizes[dim]
            pieces = [
                {**piece, dim: (start, min(start + step, size))}
                for piece in pieces
                for start in range(0, size, step)
            ]
        return pieces


def input_dims(instance: ScenarioInstance) -> dict[str, tuple[str, ...] | None]:
    """Each reference input's shape expressions, in the order of the tensor's dims (an operand
    stored transposed, layout ``t``, arrives transposed: `inputs._reference_value`). None for an
    input whose shape the scenario does not spell (group offsets, a backward pass's output
    gradient, a dropout mask): such an item's reference is computed in one piece."""
    tensor_steps = [s for s in instance.epilogue if s.kind in TENSOR_EPILOGUES]
    spec = instance.spec
    scales = {scale.name for scale in spec.scales}
    addend = spec.addend.name if spec.addend is not None else None
    operands = {operand.name: operand for operand in instance.operands}
    found: dict[str, tuple[str, ...] | None] = {}
    for name in instance.input_names:
        if name in scales:
            found[name] = ()  # folded into its operand: a 0-dim one (inputs._reference_value)
        elif name == addend:
            found[name] = tuple(str(e) for e in instance.bias or ())
        elif name.startswith("other") and name[5:].isdigit():
            step = tensor_steps[int(name[5:])]
            found[name] = tuple(str(e) for e in step.arg) if step.kind == "add_tensor" else None
        elif name in operands:
            exprs = [str(e) for e in operands[name].shape]
            if operands[name].layout == "t" and len(exprs) >= 2:
                exprs[-2], exprs[-1] = exprs[-1], exprs[-2]
            found[name] = tuple(exprs)
        else:
            found[name] = None
    return found


def _chunkable(instance: ScenarioInstance, dims: dict[str, tuple[str, ...] | None]) -> bool:
    """Rows of the output computed independently of each other, from inputs of known shape."""
    return (
        instance.spec.row_sliceable
        and not instance.backward
        and all(exprs is not None for exprs in dims.values())
    )


def output_elements(instance: ScenarioInstance, sizes: dict[str, int]) -> int:
    """Elements of the op's output ([B,] M, N): batched when any operand has a batch."""
    batched = any(len(o.shape) == 3 for o in instance.operands)
    return (sizes.get("B", 1) if batched else 1) * sizes.get("M", 1) * sizes.get("N", 1)


def outputs_of(instance: ScenarioInstance) -> int:
    """How many tensors the program returns (each `keep` adds one)."""
    return 1 + sum(step.kind == "keep" for step in instance.epilogue)


def plan(instance: ScenarioInstance, sizes: dict[str, int], limit: int = CHUNK_BYTES) -> Plan:
    """The slicing of one shape set's reference that keeps a piece under `limit` bytes: the
    batch first, as coarsely as fits; then rows and columns together, in the fewest pieces (a
    weight of 4.2 GB in fp64 is sliced by columns, two large operands by both)."""
    dims = input_dims(instance)
    # rows tied together (group offsets, swizzled block scales, a backward pass): one piece
    known = {name: exprs for name, exprs in dims.items() if exprs is not None}
    chunkable = _chunkable(instance, dims)
    sliceable = {d for d in CHUNK_DIMS if _sliceable(d, known, sizes)} if chunkable else set()

    element_bytes = {name: FP64 for name in known}
    for name, block in inputs.scaled_operands(instance).items():
        # the stored values crossed, their fp64 product, and where the scale differs along both
        # dims (1x128, 128x128 blocks) a scale per element (`scaling.Scaled.exact`)
        element_bytes[name] = 1 + FP64 + (FP64 if WHOLE not in block else 0)

    def piece_bytes(steps: dict[str, int]) -> int:
        total = 0
        for name, exprs in known.items():
            elements = 1
            for expr in exprs:
                size = _size(expr, sizes)
                elements *= steps.get(expr, size)
            total += elements * element_bytes[name]
        out = output_elements(instance, sizes)
        for dim, step in steps.items():
            out = out * step // max(sizes[dim], 1)
        return total + out * FP64 * (OUTPUT_TEMPORARIES + outputs_of(instance))

    def fitted(steps: dict[str, int], dim: str) -> dict[str, int]:
        """`steps` with `dim` sliced as coarsely as keeps a piece under `limit` (1 when
        nothing does)."""
        if dim not in sliceable or piece_bytes(steps) <= limit:
            return steps
        per_row = max(piece_bytes({**steps, dim: 1}), 1)
        fixed = piece_bytes({**steps, dim: 0})
        rows = max(1, (limit - fixed) // max(per_row - fixed, 1)) if limit > fixed else 1
        return {**steps, dim: min(sizes[dim], int(rows))}

    def pieces(steps: dict[str, int]) -> int:
        return Plan(sizes, steps, 0, 0).pieces

    steps = fitted({}, "B")
    if piece_bytes(steps) > limit:
        # rows per piece: M cut into 1, 2, 3, ... parts, columns then as coarse as fits
        cuts = range(1, min(sizes["M"], MAX_ROW_CUTS) + 1) if "M" in sliceable else [1]
        tilings = [
            fitted({**steps, "M": -(-sizes["M"] // cut)} if "M" in sliceable else steps, "N")
            for cut in cuts
        ]
        fits = [t for t in tilings if piece_bytes(t) <= limit]
        steps = (
            min(fits, key=pieces)  # the fewest row cuts on a tie
            if fits
            else min(tilings, key=lambda t: (piece_bytes(t), pieces(t)))
        )
    return Plan(dict(sizes), steps, piece_bytes(steps), piece_bytes({}))


def _size(expr: str, sizes: dict[str, int]) -> int:
    try:
        return eval_dim(expr, sizes)
    except (ValueError, SyntaxError, KeyError, TypeError):
        return 1


def _names(expr: str) -> set[str]:
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _sliceable(dim: str, dims: dict[str, tuple[str, ...]], sizes: dict[str, int]) -> bool:
    """`dim` can be sliced: it is > 1, and every input names it at most once and only bare."""
    if sizes.get(dim, 0) <= 1:
        return False
    for exprs in dims.values():
        if sum(e == dim for e in exprs) > 1:
            return False
        if any(e != dim and dim in _names(e) for e in exprs):
            return False
    return True


def evaluate(
    fn: Callable[..., Any],
    instance: ScenarioInstance,
    tensors: Sequence[torch.Tensor],
    device: str | torch.device,
    *,
    sizes: dict[str, int],
    transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    limit: int = CHUNK_BYTES,
    out_device: str | torch.device | None = None,
) -> Any:
    """`fn(*(transform(t.to(device)) for t in tensors))`, computed piece by piece on `device`;
    the result is assembled on `out_device` (default `device`): on the CPU, the device holds one
    piece at a time."""

    def call(args: Sequence[Any]) -> Any:
        # fp64 on the device, piece by piece: inputs kept in a narrower dtype upcast exactly
        # there, fp8 ones multiplied by their scales there (integer inputs such as group
        # offsets stay integers)
        moved = [_fp64_on(t, device) for t in args]  # in their dtype: fewer bytes to move
        return fn(*(transform(t) if transform is not None else t for t in moved))

    def whole() -> Any:
        result = call(tensors)
        if out_device is None:
            return result
        if isinstance(result, tuple | list):
            return type(result)(r.to(out_device) for r in result)
        return result.to(out_device)

    chunking = plan(instance, sizes, limit)
    names = instance.input_names
    dims = input_dims(instance)
    if (
        chunking.pieces <= 1
        or not _chunkable(instance, dims)
        or not _shapes_agree(names, dims, tensors, sizes)
    ):
        return whole()
    full: list[torch.Tensor] | None = None
    single = True
    for piece in chunking.ranges():
        args = [_slice_input(t, dims[name], piece) for name, t in zip(names, tensors, strict=True)]
        result = call(args)
        single = not isinstance(result, tuple | list)
        parts = [result] if single else list(result)
        if full is None:
            if not all(_fits(p, piece) for p in parts):
                del result, parts, args
                return whole()  # not [..., M, N] as expected: one piece
            full = [
                torch.empty(
                    _full_shape(p.shape, piece, sizes),
                    dtype=p.dtype,
                    device=p.device if out_device is None else out_device,
                )
                for p in parts
            ]
        for target, part in zip(full, parts, strict=True):
            _place(target, piece).copy_(part)
        del result, parts, args
    assert full is not None
    return full[0] if single else tuple(full)


def _fp64_on(value: Any, device: str | torch.device) -> torch.Tensor:
    """A reference input on `device` in fp64 (an integer one as it is): moved in its own dtype,
    upcast there; an fp8 operand's stored values and scales (`scaling.Scaled`) moved and
    multiplied there."""
    if isinstance(value, Scaled):
        return value.exact(move=lambda t: staging.to(t, device))
    moved = staging.to(value, device)
    return moved.to(torch.float64) if moved.is_floating_point() else moved


def _shapes_agree(
    names: Sequence[str],
    dims: dict[str, tuple[str, ...]],
    tensors: Sequence[torch.Tensor],
    sizes: dict[str, int],
) -> bool:
    for name, tensor in zip(names, tensors, strict=True):
        exprs = dims[name]
        if tensor.dim() != len(exprs):
            return False
        if any(_size(e, sizes) != s for e, s in zip(exprs, tensor.shape, strict=True)):
            return False
    return True


def _slice_input(
    tensor: torch.Tensor, exprs: tuple[str, ...], piece: dict[str, tuple[int, int]]
) -> torch.Tensor:
    for index, expr in enumerate(exprs):
        if expr in piece:
            start, stop = piece[expr]
            tensor = tensor.narrow(index, start, stop - start)
    return tensor


def _out_index(dim: str, ndim: int) -> int | None:
    if dim == "B":
        return 0 if ndim >= 3 else None
    if dim == "N":
        return ndim - 1 if ndim >= 2 else None
    return ndim - 2 if ndim >= 2 else None


def _fits(part: Any, piece: dict[str, tuple[int, int]]) -> bool:
    if not isinstance(part, torch.Tensor):
        return False
    for dim, (start, stop) in piece.items():
        index = _out_index(dim, part.dim())
        if index is None or part.shape[index] != stop - start:
            return False
    return True


def _full_shape(
    shape: torch.Size, piece: dict[str, tuple[int, int]], sizes: dict[str, int]
) -> list[int]:
    full = list(shape)
    for dim in piece:
        index = _out_index(dim, len(shape))
        assert index is not None
        full[index] = sizes[dim]
    return full


def _place(target: torch.Tensor, piece: dict[str, tuple[int, int]]) -> torch.Tensor:
    for dim, (start, stop) in piece.items():
        index = _out_index(dim, target.dim())
        assert index is not None
        target = target.narrow(index, start, stop - start)
    return target


@dataclass(frozen=True)
class Evaluator:
    """`evaluate` bound to one shape set's inputs (an `inputs.Inputs`: its fp64 `reference`
    tensors and its `dims`): ``fp64(reference_fn)``, ``fp64(reference_fn, transform=torch.abs)``."""

    instance: ScenarioInstance
    inputs: Any
    device: str | torch.device
    out_device: str | torch.device | None = None
    limit: int = CHUNK_BYTES

    def __call__(
        self,
        fn: Callable[..., Any],
        transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> Any:
        return evaluate(
            fn,
            self.instance,
            self.inputs.reference,
            self.device,
            sizes=self.inputs.dims,
            transform=transform,
            limit=self.limit,
            out_device=self.out_device,
        )
