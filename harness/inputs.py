"""Inputs for one item: tensors with the scenario's dtypes, layouts and value kinds.

Values are drawn on the CPU from a generator seeded by `item_seed(instance id, shape set,
--seed)`, then moved to the device, so every backend and every machine sees the same numbers for
an item. A draw of more than `PARALLEL_DRAW_ELEMENTS` values is made in fixed pieces, each from
its own generator seeded from the item's, on the process's CPU threads (`_drawn`): the same
values on any machine and any thread count. Operands are `randn / K**0.25`: each has variance
1/sqrt(K), so each of the K products summed into an output element has variance 1/K and the
output has variance ~1 whatever K is; outputs neither overflow fp16 nor cancel to ~0, and random
values are never all zero. fp8 operands are quantized from such a source by the scenario's
scaling recipe (`gemmconf.gemm.scaling`: scales from the amax per tensor, row, or 1x128 / 128x128
block); the reference sees the exact dequantized values (fp4 operands: two e2m1 values a byte
along K, so their stored K is half the scenario's). An amax recipe's operand reaches the
reference as its stored values and per-block scales (`scaling.Scaled`), multiplied out in fp64
where a piece of the reference is computed: on the device, never as an fp64 copy on the host.
int8 operands are small integers so int32 sums are exact.

Grouped ops get `offs`, the int32 running sum of the scenario's group sizes (turned by one more
place on each further draw, `_group_sizes`). An `out=` target is
filled with NaN, so an element the op leaves unwritten shows. Backward scenarios get `grad`, the
output gradient (randn in the result's dtype), and their differentiated inputs, and the fp64
reference's, require grad.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

from gemmconf import staging
from gemmconf.gemm.dtypes import is_quantized, torch_dtype
from gemmconf.gemm.scaling import RECIPES, Quantized, Recipe, Scaled
from gemmconf.program import differentiated
from gemmconf.scenario import (
    TENSOR_EPILOGUES,
    Operand,
    ScenarioInstance,
    eval_dim,
    group_extents,
)

# A draw larger than this is made in pieces of DRAW_PIECE elements, in parallel (`_drawn`).
# Below it (every operand of the CPU suite), one draw from the item's generator, as always.
PARALLEL_DRAW_ELEMENTS = 1 << 24
DRAW_PIECE = 1 << 22  # fixed: the values must not depend on how many threads draw them
VALUES_SHOWN = 16  # an integer input this short (`offs`) is described with its values
# torch's CPU threads while an item with such a draw builds its inputs, where an xdist worker's
# share of the cores is fewer (set by the plugin's `hardware.pin_worker`; unset: no change)
LARGE_DRAW_THREADS_ENV = "GEMMCONF_LARGE_DRAW_THREADS"


# One input of the fp64 reference (`Inputs.reference`): a tensor, or an fp8 operand's stored
# values and scales (`Scaled`: `exact` multiplies them out)
ReferenceInput = torch.Tensor | Scaled


def exact(value: ReferenceInput) -> torch.Tensor:
    """A reference input as a tensor: a `Scaled` operand's values times its scales in fp64, on
    the values' device; any other as it is."""
    return value.exact() if isinstance(value, Scaled) else value


# The run seed of the confirmation draws: the rounds that decide a judgment near its bar
# (gemmconf.drawing) draw from the item's own stream, the same whatever --seed.
CONFIRMATION = None


def item_seed(instance_id: str, shape_index: int, run_seed: int | None, draw: int = 0) -> int:
    """A 63-bit seed from the item's id, its shape set, the run's --seed and the draw (0: the
    item's first inputs; further draws are independent values of the same shapes). A run seed
    of `CONFIRMATION` (None) gives the item's confirmation draws, independent of every run
    seed's."""
    run = "confirmation" if run_seed is CONFIRMATION else run_seed
    return _seed(f"{instance_id}|{shape_index}|{run}" + (f"|{draw}" if draw else ""))


def _seed(text: str) -> int:
    """A 63-bit seed from a text (its SHA-256): the same on every machine and Python."""
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


@dataclass(frozen=True)
class Inputs:
    """The positional inputs of the function under test, and what the oracle needs beside."""

    names: tuple[str, ...]
    tensors: tuple[torch.Tensor, ...]
    # The reference's inputs, on the CPU: exact values, upcast to fp64 where used (chunked.py):
    # fp8 as stored values and scales (`Scaled`; microscaled ones dequantized in fp64), other
    # dtypes as drawn (a quarter of fp64's memory for fp16: a large item's two builds held 25 GB
    # of fp64 copies). `exact` makes any of them a tensor. None for exact ops.
    reference: tuple[torch.Tensor | Scaled, ...] | None
    dims: dict[str, int]
    seed: int
    reduction: int | None = None  # the longest sum an output takes, where that is not K

    @property
    def k(self) -> int:
        """The reduction length the oracle's floor grows with: K, or for a backward scenario
        the longest of the forward and gradient GEMMs' (M, N or K)."""
        return self.reduction if self.reduction is not None else self.dims.get("K", 1)

    @property
    def k_name(self) -> str:
        """What `k` is, as a failure names it: K, or a backward scenario's longest sum."""
        return "K" if self.reduction is None else "longest sum"

    def describe(self) -> str:
        """One line per input: name, shape, stride, storage offset, dtype; and the values of a
        short integer input (a grouped op's `offs`: where each group ends)."""
        lines = []
        seen: dict[int, str] = {}
        for name, t in zip(self.names, self.tensors, strict=True):
            if id(t) in seen:
                lines.append(f"{name}: same tensor as {seen[id(t)]}")
                continue
            seen[id(t)] = name
            values = ""
            if not t.is_floating_point() and t.numel() <= VALUES_SHOWN:
                values = f" = {t.tolist()}"
            lines.append(
                f"{name}: {tuple(t.shape)} stride {tuple(t.stride())} offset "
                f"{t.storage_offset()} {str(t.dtype).removeprefix('torch.')}{values}"
            )
        return "; ".join(lines)


def build(
    instance: ScenarioInstance,
    shape_index: int,
    run_seed: int | None,
    device: str | torch.device = "cpu",
    *,
    draw: int = 0,
) -> Inputs:
    """Tensors for one shape set of an instance, on `device` (`draw`: see `item_seed`)."""
    return build_copies(instance, shape_index, run_seed, device, draw=draw, copies=1)[0]


def target_fill(shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    """An out= target as the harness hands it to the op: NaN, made in the target's dtype. Its
    bytes must not all be one value, or an unwritten target reads as fresh memory holding a
    poison pattern (`integrity`: 0xFF on a GPU): float32 NaN converted to bfloat16 on the CPU is
    0xFFFF, where a bfloat16 NaN made as such is 0x7FC0 (an H200 run, 2026-11-30, named the
    planted unwritten bf16 target "Unwritten output ... fresh memory")."""
    return torch.full(tuple(shape), math.nan, dtype=dtype)


def build_copies(
    instance: ScenarioInstance,
    shape_index: int,
    run_seed: int | None,
    device: str | torch.device = "cpu",
    *,
    draw: int = 0,
    copies: int = 2,
) -> list[Inputs]:
    """`copies` independent sets of the same inputs (eager's and the backend's): the values are
    drawn once on the CPU and laid out on `device` once per copy, in storage of its own. The
    copies share the CPU reference tensors, which nothing writes. Drawing is most of a large
    item's set-up (a 128256 x 4096 weight: seconds on the CPU), so it is not done twice."""
    with _cpu_threads(_largest_operand(instance, instance.dims(shape_index))):
        return _draw_values(instance, shape_index, run_seed, draw).placed(device, copies)


def _largest_operand(instance: ScenarioInstance, dims: dict[str, int]) -> int:
    """The element count of the instance's largest operand at `dims`."""
    sizes = (math.prod(eval_dim(e, dims) for e in o.shape) for o in instance.operands)
    return max(sizes, default=0)


@contextlib.contextmanager
def _cpu_threads(values: int) -> Iterator[None]:
    """torch's CPU threads (the parallel draw's pool too) while inputs with an operand of
    `values` elements are drawn, quantized and laid out: LARGE_DRAW_THREADS_ENV's count past
    PARALLEL_DRAW_ELEMENTS, where it is more than the process has. An xdist worker of a GPU run
    has one thread (its share of the cores); the few items this large run in a quarter of the
    workers (`gemmconf.plugin.scheduling`), and one thread made their seconds of CPU work the
    run's last minute."""
    wanted = int(os.environ.get(LARGE_DRAW_THREADS_ENV) or 0)
    before = torch.get_num_threads()
    if values <= PARALLEL_DRAW_ELEMENTS or wanted <= before:
        yield
        return
    torch.set_num_threads(wanted)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclass
class _Drawn:
    """One shape set's values on the CPU, before they are laid out on a device."""

    instance: ScenarioInstance
    names: tuple[str, ...]
    values: dict[str, torch.Tensor]  # operand name -> logical (row-major) value, its dtype
    shapes: dict[str, list[int]]  # operand name -> its shape (an expanded one: its full shape)
    others: dict[str, torch.Tensor]  # bias, epilogue tensors, scales, offsets, the gradient
    reference: tuple[ReferenceInput, ...] | None
    dims: dict[str, int]
    seed: int
    reduction: int | None

    def placed(self, device: str | torch.device, copies: int = 1) -> list[Inputs]:
        """`copies` independent layouts of the values on `device`. An operand's value crosses
        to a GPU once, through the staging buffer (copies from pageable memory are slow there),
        and each copy is laid out from it on the device; the crossed value lives until its
        operand's copies are made (`memory.estimate` counts the largest operand for it)."""
        stored: list[dict[str, torch.Tensor]] = [{} for _ in range(copies)]
        for operand in self.instance.operands:
            if operand.layout == "alias":
                for one in stored:
                    one[operand.name] = one["a"]
                continue
            value = staging.to(self.values[operand.name], device)
            shape = self.shapes[operand.name]
            for one in stored:
                one[operand.name] = _lay_out(value, operand.layout, shape, device)
            del value
        return [self._inputs(one, device) for one in stored]

    def _inputs(self, stored: dict[str, torch.Tensor], device: str | torch.device) -> Inputs:
        for name, value in self.others.items():
            stored[name] = value.to(device, copy=True)
        tensors = tuple(stored[n] for n in self.names)
        if self.instance.backward:
            wrt = set(differentiated(self.instance))
            tensors = tuple(
                _leaf(t) if n in wrt else t for n, t in zip(self.names, tensors, strict=True)
            )
        return Inputs(self.names, tensors, self.reference, self.dims, self.seed, self.reduction)


def _draw_values(
    instance: ScenarioInstance, shape_index: int, run_seed: int | None, draw: int
) -> _Drawn:
    spec = instance.spec
    dims = instance.dims(shape_index)
    seed = item_seed(instance.id, shape_index, run_seed, draw)
    gen = torch.Generator().manual_seed(seed)
    sizes = _group_sizes(instance, dims, draw)  # grouped ops: each group's size, this draw's
    # the generator's draws in a fixed order: operands, bias, epilogue tensors, the gradient
    operands = _draw_operands(instance, dims, gen, sizes)
    ref = operands.ref
    others = _draw_addends(instance, dims, gen, ref)
    for scale in spec.scales:
        made = operands.global_scales if scale.level else operands.scales
        if scale.of in made:
            others[scale.name] = made[scale.of]
    if sizes is not None:
        offsets = torch.tensor(sizes, dtype=torch.int32).cumsum(0, dtype=torch.int32)
        others["offs"] = ref["offs"] = offsets
    reduction = None
    if instance.backward:
        out_shape = _result_shape(instance, dims)
        grad = _randn(out_shape, gen)
        others["grad"] = ref["grad"] = grad.to(torch_dtype(instance.gemm_dtype))
        reduction = max(dims.get(d, 1) for d in ("M", "N", "K"))

    names = instance.input_names
    operand_names = {o.name for o in instance.operands}
    missing = [n for n in names if n not in others and n not in operand_names]
    assert not missing, f"inputs for {instance.id} lack {missing}"
    reference = None if spec.exact else _reference_inputs(instance, ref)
    others = {n: t for n, t in others.items() if n in names}
    return _Drawn(
        instance, names, operands.values, operands.shapes, others, reference, dims, seed, reduction
    )


@dataclass
class _Operands:
    """The operands of one shape set as drawn, and what the draw of each made beside."""

    values: dict[str, torch.Tensor] = field(default_factory=dict)  # logical (row-major), its dtype
    shapes: dict[str, list[int]] = field(default_factory=dict)
    # every input's exact value by name, the operands' first (what the reference is made of)
    ref: dict[str, ReferenceInput] = field(default_factory=dict)
    scales: dict[str, torch.Tensor] = field(default_factory=dict)  # its dequantization scale
    global_scales: dict[str, torch.Tensor] = field(default_factory=dict)  # its second level


def _draw_operands(
    instance: ScenarioInstance, dims: dict[str, int], gen: torch.Generator, sizes: list[int] | None
) -> _Operands:
    """Each operand's values from `gen`, in the instance's operand order."""
    k = dims.get("K", 1)
    k_groups = sizes if _k_jagged(instance) else None  # quantized group by group along K
    drawn = _Operands()
    values, ref = drawn.values, drawn.ref
    for operand in instance.operands:
        shape = [eval_dim(e, dims) for e in operand.shape]
        if operand.layout == "alias":
            ref[operand.name] = ref["a"]
            continue
        drawn.shapes[operand.name] = shape
        if operand.layout.startswith("expand"):
            shape_drawn = [1, *shape[1:]]
        else:
            shape_drawn = shape
        if operand.name in instance.spec.writes:  # an out= target: NaN until the op writes it
            values[operand.name] = target_fill(shape_drawn, torch_dtype(operand.dtype))
            ref[operand.name] = torch.zeros(shape_drawn, dtype=torch.float64)
            continue
        source = _draw(operand, shape_drawn, k, instance.values, gen)
        if operand.name == "a" and instance.values in ("nan_in_a", "inf_in_a") and source.numel():
            source.view(-1)[0] = float("nan") if instance.values == "nan_in_a" else float("inf")
        if is_quantized(operand.dtype):
            _add_quantized(drawn, instance, operand, source.float(), k_groups)
        else:
            values[operand.name] = source.to(torch_dtype(operand.dtype))
            ref[operand.name] = values[operand.name]  # exact in fp64 (see Inputs.reference)
        del source
        if operand.layout.startswith("expand"):
            ref[operand.name] = ref[operand.name].expand(shape)
    return drawn


def _k_jagged(instance: ScenarioInstance) -> bool:
    """A grouped op whose jagged dim is K (2-D x 2-D): its operands are quantized per group."""
    ranks = tuple(len(o.shape) for o in instance.operands[:2])
    return instance.spec.grouped and ranks == (2, 2)


def scaled_operands(instance: ScenarioInstance) -> dict[str, tuple[int, int]]:
    """The operands whose reference input is kept `Scaled` (stored values and per-block
    scales), each with its recipe's block: the fp8 operands of an amax recipe, unless K is
    jagged (scales per group along K: dequantized in fp64, as microscaled operands are)."""
    recipe = RECIPES[instance.scaling or "tensorwise"]
    if recipe.microscaling or _k_jagged(instance):
        return {}
    return {
        o.name: recipe.block(o.name)
        for o in instance.operands
        if is_quantized(o.dtype) and o.layout != "alias" and o.name not in instance.spec.writes
    }


def _add_quantized(
    drawn: _Operands,
    instance: ScenarioInstance,
    operand: Operand,
    source: torch.Tensor,
    k_groups: list[int] | None,
) -> None:
    """An fp8/fp4 operand quantized from `source` by the scenario's recipe: its stored values,
    the exact dequantized ones, and its scales as the op takes them."""
    recipe = RECIPES[instance.scaling or "tensorwise"]
    quantized = _quantize(recipe, source, operand, k_groups)
    drawn.values[operand.name] = quantized.values
    kept = operand.name in scaled_operands(instance)  # what chunked and memory count on
    drawn.ref[operand.name] = quantized.exact if kept else quantized.dequantized
    drawn.scales[operand.name] = _scale_for(instance, recipe, operand.name, quantized.scale)
    if quantized.global_scale is not None:
        drawn.global_scales[operand.name] = quantized.global_scale


def _draw_addends(
    instance: ScenarioInstance,
    dims: dict[str, int],
    gen: torch.Generator,
    ref: dict[str, ReferenceInput],
) -> dict[str, torch.Tensor]:
    """The bias and the epilogue's tensors from `gen`, in that order, by input name; each also
    goes into `ref` (the values the reference is made of)."""
    others: dict[str, torch.Tensor] = {}
    if instance.bias is not None:
        bias_shape = [eval_dim(e, dims) for e in instance.bias]
        bias = _draw_addend(bias_shape, instance.values, gen)
        if instance.values == "nan_in_c" and bias.numel():
            bias.view(-1)[:: max(1, bias.numel() // 3)] = float("nan")
        dtype = torch_dtype(instance.bias_dtype or instance.gemm_dtype)
        name = instance.spec.addend.name
        others[name] = ref[name] = bias.to(dtype)
    for i, step in enumerate(s for s in instance.epilogue if s.kind in TENSOR_EPILOGUES):
        out_dtype = torch_dtype(instance.gemm_dtype)
        if step.kind == "dropout_mask":  # kept with probability 1 - p, scaled by 1 / (1 - p)
            keep = torch.rand(_result_shape(instance, dims), generator=gen) >= step.arg
            other = keep.to(torch.float32) / (1 - step.arg)
        else:
            other = _draw_addend([eval_dim(e, dims) for e in step.arg], instance.values, gen)
        others[f"other{i}"] = ref[f"other{i}"] = other.to(out_dtype)
    return others


def _reference_inputs(
    instance: ScenarioInstance, ref: dict[str, ReferenceInput]
) -> tuple[ReferenceInput, ...]:
    """The reference's inputs in the program's order (`Inputs.reference`); a backward
    scenario's differentiated ones require grad."""
    names = instance.input_names
    reference = tuple(_reference_value(n, ref, instance) for n in names)
    if instance.backward:
        wrt = set(differentiated(instance))
        reference = tuple(
            _leaf(exact(t)) if n in wrt else t for n, t in zip(names, reference, strict=True)
        )
    return reference


def _leaf(t: torch.Tensor) -> torch.Tensor:
    """`t` (same strides and storage offset) as a leaf that requires grad."""
    return t.detach().requires_grad_(True)


def _group_sizes(instance: ScenarioInstance, dims: dict[str, int], draw: int) -> list[int] | None:
    """A grouped op's group sizes along its jagged dim (None: not grouped, or 3-D x 3-D). Draw
    0 takes the scenario's; each further draw (fresh values: the second call's check, more
    draws for a judgment) turns the list by one more place, so that the same shapes come with
    other offsets: a backend that keeps a group schedule across calls, keyed by the shapes or
    the group count, answers those with the first call's schedule. Turning keeps every size, and
    so every offset alignment the scenario's sizes have."""
    if not instance.spec.grouped:
        return None
    sizes = group_extents(instance.operands, instance.group_sizes, dims)
    if not sizes:
        return sizes
    turn = draw % len(sizes)
    return sizes[turn:] + sizes[:turn]


def _quantize(
    recipe: Recipe, source: torch.Tensor, operand: Operand, k_groups: list[int] | None
) -> Quantized:
    """`source` quantized by `recipe`. Where K is jagged (`k_groups`), group by group along K,
    as a training recipe quantizes each expert's slice: every group gets scales of its own
    (a's per row, b's per column, then the next group's), so a backend that applies one
    group's scales to another's slice computes wrong values."""
    dtype = torch_dtype(operand.dtype)
    if k_groups is None:
        return recipe.quantize(source, operand.name, dtype)
    k_dim = -1 if operand.name == "a" else -2
    other_dim = -2 if operand.name == "a" else -1
    pieces = [
        recipe.quantize(part, operand.name, dtype)
        for part in torch.split(source, k_groups, dim=k_dim)
    ]
    if any(q.global_scale is not None for q in pieces):
        raise NotImplementedError(f"{recipe.name}: a second-level scale per group along K")
    return Quantized(
        torch.cat([q.values for q in pieces], k_dim),
        torch.cat([q.scale for q in pieces], other_dim),
        torch.cat([q.dequantized for q in pieces], k_dim),
    )


def _scale_for(
    instance: ScenarioInstance, recipe: Recipe, operand: str, scale: torch.Tensor
) -> torch.Tensor:
    """The recipe's scale laid out as the op takes it (`OpSpec.scale_layout`)."""
    layout = instance.spec.scale_layout
    if layout is None:
        return scale
    a, b = (len(instance.operand(n).shape) for n in ("a", "b"))
    groups = instance.dims(0).get("B", 1)
    return layout(
        recipe, operand, scale, ranks=(a, b), groups=groups, swizzle=instance.swizzle or "none"
    )


def _result_shape(instance: ScenarioInstance, dims: dict[str, int]) -> list[int]:
    """The op's result shape for one shape set (what a backward scenario's `grad` matches)."""
    spec = instance.spec
    a, b = ([eval_dim(e, dims) for e in instance.operand(n).shape] for n in ("a", "b"))
    return spec.out_shape(a, b, dims.get("B", 1))


def _draw(
    operand: Operand, shape: list[int], k: int, kind: str, gen: torch.Generator
) -> torch.Tensor:
    if operand.dtype == "int8":
        if kind == "near_max":  # int32 sums past 2^24: fp32 accumulation is no longer exact
            return _randint(96, 128, shape, gen, torch.int8)
        return _randint(-8, 9, shape, gen, torch.int8)
    if kind == "integers":
        # int8, which every float dtype holds exactly, converted once to the operand's dtype:
        # an operand of 2^31 values (k_tails' index_width) has no fp32 copy (8 GiB) on the host
        return _randint(-4, 5, shape, gen, torch.int8)
    if kind == "tf32_exact":
        return _to_tf32(_randn(shape, gen, divisor=max(k, 1) ** 0.25))
    if kind == "near_max":
        # Positive values whose K-term sums land near half the dtype's largest finite value.
        top = torch.finfo(torch_dtype(operand.dtype)).max
        magnitude = math.sqrt(0.5 * top / max(k, 1))
        return torch.rand(shape, generator=gen) * 0.5 * magnitude + 0.5 * magnitude
    # drawn in fp32 and rounded to the operand's dtype piece by piece (fp8: quantized whole)
    dtype = torch.float32 if is_quantized(operand.dtype) else torch_dtype(operand.dtype)
    return _randn(shape, gen, divisor=max(k, 1) ** 0.25, dtype=dtype)


def _draw_addend(shape: list[int], kind: str, gen: torch.Generator) -> torch.Tensor:
    """A bias or an added tensor: integers where the operands are (an exact sum stays exact
    whichever order a library adds the bias in), else standard normal."""
    if kind == "integers":
        return _randint(-4, 5, shape, gen, torch.int8).to(torch.float32)
    return _randn(shape, gen)


def _to_tf32(values: torch.Tensor) -> torch.Tensor:
    """fp32 `values` rounded (to nearest, ties to even) to TF32's 10 explicit mantissa bits, in
    place: values TF32 holds exactly, and bf16x3 too (`values: tf32_exact`)."""
    bits = values.view(torch.int32)
    low = 13  # fp32 has 23 explicit mantissa bits
    bits.add_(((bits >> low) & 1) + (1 << (low - 1)) - 1).bitwise_and_(~((1 << low) - 1))
    return values


def _randn(
    shape: list[int],
    gen: torch.Generator,
    divisor: float = 1.0,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """fp32 standard normal values of `shape` from `gen`, divided by `divisor` (`_drawn`), then
    rounded to `dtype` a piece at a time: the values of the whole fp32 draw rounded, with no
    operand-sized fp32 copy."""

    def fill(part: torch.Tensor, generator: torch.Generator) -> None:
        drawn = part if part.dtype == torch.float32 else torch.empty(part.shape)
        torch.randn(part.shape, generator=generator, out=drawn)
        if divisor != 1.0:
            drawn.div_(divisor)
        if drawn is not part:
            part.copy_(drawn)

    return _drawn(shape, gen, dtype, fill)


def _randint(
    low: int, high: int, shape: list[int], gen: torch.Generator, dtype: torch.dtype
) -> torch.Tensor:
    """Integers in [low, high) of `shape` from `gen` (`_drawn`)."""

    def fill(part: torch.Tensor, generator: torch.Generator) -> None:
        torch.randint(low, high, part.shape, generator=generator, out=part)

    return _drawn(shape, gen, dtype, fill)


def _drawn(
    shape: list[int],
    gen: torch.Generator,
    dtype: torch.dtype,
    fill: Callable[[torch.Tensor, torch.Generator], None],
) -> torch.Tensor:
    """A tensor of `shape` filled by `fill(tensor, generator)` from `gen`.

    Up to PARALLEL_DRAW_ELEMENTS: filled at once from `gen` (the values every earlier version
    drew). Larger (GPU-sized operands: a 10 x 4096 x 25728 batch is 1.05 G values, 5.7 s of one
    CPU generator on an H100 host; 0.55 s this way on its 16 cores), `gen` gives one seed and
    each piece of DRAW_PIECE values is filled from a generator of its own, seeded from that
    seed and the piece's index, on torch's CPU threads (torch releases the GIL while it
    draws). The pieces are fixed, so a seed gives the same values on any host."""
    numel = math.prod(shape)
    if numel <= PARALLEL_DRAW_ELEMENTS:
        values = torch.empty(shape, dtype=dtype)
        fill(values, gen)
        return values
    base = int(torch.randint(0, 2**62, (1,), generator=gen))
    flat = torch.empty(numel, dtype=dtype)

    def piece(index: int) -> None:
        start = index * DRAW_PIECE
        fill(flat[start : start + DRAW_PIECE], _piece_generator(base, index))

    pieces = -(-numel // DRAW_PIECE)
    with ThreadPoolExecutor(max_workers=min(pieces, torch.get_num_threads())) as pool:
        list(pool.map(piece, range(pieces)))
    return flat.view(shape)


def _piece_generator(base: int, index: int) -> torch.Generator:
    """The generator of one piece of a parallel draw: a seed from (base, index) whose low 32
    bits differ between pieces (the CPU generator's Mersenne Twister keeps only those)."""
    return torch.Generator().manual_seed(_seed(f"{base}|{index}"))


def _lay_out(
    value: torch.Tensor, layout: str, shape: list[int], device: str | torch.device
) -> torch.Tensor:
    """Place a row-major logical value in the operand's layout (see suites/README.md), in
    storage of its own (never `value`'s: each copy of an item's inputs is independent)."""
    if layout == "row":
        return value.to(device, copy=True).contiguous()
    if layout == "t":  # stored transposed; the program transposes it back
        return _own(value.transpose(-2, -1), device)
    if layout == "col":
        return _own(value.transpose(-2, -1), device).transpose(-2, -1)
    if layout == "offset":  # one element in: base misaligned for any vector width
        flat = torch.empty(value.numel() + 1, dtype=value.dtype, device=device)
        view = flat[1:].view(value.shape)
        view.copy_(value)
        return view
    if layout in ("padded", "padded_odd"):
        return _padded(value, 16 if layout == "padded" else None, device)
    if layout == "expand":
        return value.to(device, copy=True).contiguous().expand(shape)
    if layout.startswith("expand+"):  # a stride-0 batch over a matrix laid out as the rest says
        return _lay_out(value, layout.removeprefix("expand+"), shape, device).expand(shape)
    if layout == "col_padded":  # column-major with a padded leading stride: x.t() of a padded x
        return _padded(value.transpose(-2, -1), 16, device).transpose(-2, -1)
    if layout == "col_padded64":  # GPT-2's vocabulary padded to a multiple of 64: 50257 -> 50304
        return _padded(value.transpose(-2, -1), 64, device).transpose(-2, -1)
    raise AssertionError(layout)


def _padded(value: torch.Tensor, multiple: int | None, device: str | torch.device) -> torch.Tensor:
    """`value` in a buffer whose leading stride is the next multiple of `multiple` above the
    width (None: the width + 1, a stride no vector width divides)."""
    cols = value.shape[-1]
    lead = (cols // multiple + 1) * multiple if multiple else cols + 1
    buffer = torch.zeros(*value.shape[:-1], lead, dtype=value.dtype, device=device)
    view = buffer[..., :cols]
    view.copy_(value)
    return view


def _own(value: torch.Tensor, device: str | torch.device) -> torch.Tensor:
    """`value.to(device).contiguous()`, in new storage. Its strides are kept where `contiguous`
    keeps them: a view that is already contiguous (a transposed [.., 1, K] is) is not restrided,
    so its size-1 dims keep the strides a suite's layout gives them."""
    laid = value.to(device).contiguous()
    if laid.untyped_storage().data_ptr() != value.untyped_storage().data_ptr():
        return laid
    own = torch.empty_strided(laid.shape, laid.stride(), dtype=laid.dtype, device=laid.device)
    return own.copy_(laid)


def reference_axis(operand: Operand, axis: int) -> int:
    """Where axis `axis` of `operand`'s logical shape is in its reference tensor
    (`Inputs.reference`): a `t` operand is held transposed there (`_reference_value`)."""
    rank = len(operand.shape)
    if operand.layout == "t" and axis >= rank - 2:
        return 2 * rank - 3 - axis
    return axis


def _reference_value(
    name: str, ref: dict[str, ReferenceInput], instance: ScenarioInstance
) -> ReferenceInput:
    if name in {scale.name for scale in instance.spec.scales}:
        return torch.ones((), dtype=torch.float64)  # folded into the dequantized operand
    if name == "offs":
        return ref[name]  # the same int32 offsets
    value = ref[name]
    operand = next((o for o in instance.operands if o.name == name), None)
    if operand is not None and operand.layout == "t":
        value = value.transpose(-2, -1)  # the program transposes it back
    return value
