#!/usr/bin/env python3
"""Standalone repro of gemmconf item out/targets[matmul-contiguous] on backend dynamo:openvino.

Written by `gemmconf repro 'out/targets[matmul-contiguous]' --backend dynamo:openvino` (gemmconf
0.1.0, torch 2.13.0+cpu); it needs torch alone. The scenario
(/tmp/outside-venv/lib/python3.11/site-packages/gemmconf/suites/out/out.yaml:14): op matmul_out,
dtype fp32, compile mode static, 1 shape set(s).

It runs the program below eagerly, through the backend and in fp64, on the inputs gemmconf drew
for this item (run seed 0), and compares as gemmconf does: the backend's largest error against
fp64 may be at most max_ratio times the larger of eager's own error and a floor that grows with
sqrt(K) (each element also allowed one output ulp and the rounding of intermediate results).
Shape set 0 is also called on fresh values: the answer must be fresh, and the first answer must
not change. Exits 1 when the backend fails, 0 when it passes.
"""


import hashlib
import math
import re
import sys

import torch
import torch.nn.functional as F


ITEM = 'out/targets[matmul-contiguous]'
BACKEND = 'dynamo:openvino'  # as gemmconf's --backend named it
RUN_SEED = 0
DEVICE = 'cpu'
TF32 = False  # TF32 allowed for fp32 GEMMs
DYNAMIC = False  # torch.compile's dynamic= for compile mode static
COMPILE_BUDGET = 1  # compiles allowed over the shape sets
# per shape set: every input's shape, K (the floor grows with it), whether it is past
# the size where the fresh-values call is compared bit for bit only
DIMS = [{'B': 2, 'M': 48, 'N': 40, 'K': 32}]
SHAPES = [{'a': [2, 48, 32], 'b': [32, 40], 'out': [2, 48, 40]}]
KS = [32]
LARGE = [False]
RAISES = None  # the exception eager raises (error scenarios)
RAISES_MATCH = None
EXACT = False  # results must equal eager's
NUMERIC = True  # the values are judged
ROW_MAJOR = True  # the op's contract fixes a row-major result
# the tolerance per output dtype: (max_ratio, floor_eps, trust eager's error, input_rounding)
POLICY = {
    'float64': (3.0, 4.440892098500626e-16, True, 0.0),
    'float32': (3.0, 2.384185791015625e-07, True, 0.0),
    'float16': (3.0, 2.384185791015625e-07, True, 0.0),
    'bfloat16': (3.0, 2.384185791015625e-07, True, 0.0),
    'float8_e4m3fn': (3.0, 2.384185791015625e-07, True, 0.0),
    'float8_e5m2': (3.0, 2.384185791015625e-07, True, 0.0),
}
DRAW_ELEMENTS, MAX_DRAWS = 64, 64  # a judgment covers at least 64 output elements


# The program under test, as gemmconf runs it eagerly and hands it to the backend.
def program(a, b, out):
    out = torch.matmul(a, b, out=out)
    return out


# The same computation in fp64, on the inputs upcast (fp8 ones dequantized).
def reference(a, b, out):
    out = torch.matmul(a, b)
    return out


rounding = None  # no input is rounded to TF32


intermediate = None  # no intermediate result is rounded


def draw(index, draw_index=0):
    """Shape set `index`'s inputs (draw 0: the values gemmconf judged first; further
    draws: fresh values of the same shapes): the program's arguments on DEVICE, and the
    fp64 reference's."""
    shapes, k = SHAPES[index], KS[index]
    gen = torch.Generator().manual_seed(item_seed(index, draw_index))
    args, ref, scales = {}, {}, {}
    # a: [B, M, K] fp32, layout row, values randn / K^(1/4)
    source = randn(shapes["a"], gen, divisor=max(k, 1) ** 0.25)
    value = source.to(torch.float32)
    ref["a"] = value
    args["a"] = lay_out(value, "row", shapes["a"])
    # b: [K, N] fp32, layout row, values randn / K^(1/4)
    source = randn(shapes["b"], gen, divisor=max(k, 1) ** 0.25)
    value = source.to(torch.float32)
    ref["b"] = value
    args["b"] = lay_out(value, "row", shapes["b"])
    # out: [B, M, N] fp32, layout row (an out= target: NaN until the op writes it)
    value = torch.full(shapes["out"], math.nan).to(torch.float32)
    ref["out"] = torch.zeros(shapes["out"], dtype=torch.float64)
    args["out"] = lay_out(value, "row", shapes["out"])
    names = ['a', 'b', 'out']
    backend_args = [args[n] for n in names]
    reference_args = [ref[n].to(DEVICE) for n in names]
    return backend_args, reference_args


def mark_dynamic(args):
    """The dims the scenario marks dynamic."""
    pass


def compile_backend(fn, example_inputs):
    """The system under test, as gemmconf called it for --backend dynamo:openvino."""
    return torch.compile(fn, backend='openvino', dynamic=DYNAMIC)


COMPILED_BY_TORCH = True  # compiles are counted from dynamo's counters


def item_seed(index, draw):
    """The seed gemmconf draws shape set `index`'s inputs from (draw 0: the item's own values)."""
    text = f"{ITEM}|{index}|{RUN_SEED}" + (f"|{draw}" if draw else "")
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


PARALLEL_DRAW_ELEMENTS, DRAW_PIECE = 1 << 24, 1 << 22


def drawn(shape, gen, dtype, fill):
    """A tensor of `shape` filled from `gen`; past 2**24 values, in pieces of 2**22, each from a
    generator of its own (the same values on any machine)."""
    numel = math.prod(shape)
    if numel <= PARALLEL_DRAW_ELEMENTS:
        values = torch.empty(shape, dtype=dtype)
        fill(values, gen)
        return values
    base = int(torch.randint(0, 2**62, (1,), generator=gen))
    flat = torch.empty(numel, dtype=dtype)
    for index in range(-(-numel // DRAW_PIECE)):
        digest = hashlib.sha256(f"{base}|{index}".encode()).digest()
        piece = torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & (2**63 - 1))
        fill(flat[index * DRAW_PIECE : (index + 1) * DRAW_PIECE], piece)
    return flat.view(shape)


def randn(shape, gen, divisor=1.0):
    """Standard normal fp32 values divided by `divisor`."""

    def fill(part, generator):
        torch.randn(part.shape, generator=generator, out=part)
        if divisor != 1.0:
            part.div_(divisor)

    return drawn(shape, gen, torch.float32, fill)


def randint(low, high, shape, gen, dtype):
    def fill(part, generator):
        torch.randint(low, high, part.shape, generator=generator, out=part)

    return drawn(shape, gen, dtype, fill)


def own(value):
    """`value` contiguous in storage of its own, with the strides `contiguous()` gives it."""
    laid = value.to(DEVICE).contiguous()
    return torch.empty_strided(laid.shape, laid.stride(), dtype=laid.dtype, device=DEVICE).copy_(
        laid
    )


def lay_out(value, layout, shape):
    """A row-major value in the scenario's layout: row (contiguous), t (stored transposed: the
    program transposes it back), col (column-major), offset (one element into its storage),
    padded (rows padded to a multiple of 16 elements; padded_odd: one more), expand (a stride-0
    batch), col_padded (column-major with padded columns)."""
    if layout == "row":
        return own(value)
    if layout == "t":
        return own(value.transpose(-2, -1))
    if layout == "col":
        return own(value.transpose(-2, -1)).transpose(-2, -1)
    if layout == "offset":
        flat = torch.empty(value.numel() + 1, dtype=value.dtype, device=DEVICE)
        view = flat[1:].view(value.shape)
        view.copy_(value)
        return view
    if layout in ("padded", "padded_odd"):
        cols = value.shape[-1]
        lead = (cols // 16 + 1) * 16 if layout == "padded" else cols + 1
        buffer = torch.zeros(*value.shape[:-1], lead, dtype=value.dtype, device=DEVICE)
        view = buffer[..., :cols]
        view.copy_(value)
        return view
    if layout == "expand":
        return own(value).expand(shape)
    if layout.startswith("expand+"):
        return lay_out(value, layout.removeprefix("expand+"), shape).expand(shape)
    if layout == "col_padded":
        return lay_out(value.transpose(-2, -1), "padded", shape).transpose(-2, -1)
    raise ValueError(layout)


def to_tf32(values):
    """fp32 values rounded to TF32's 10 mantissa bits (to nearest, ties to even), in place."""
    bits = values.view(torch.int32)
    bits.add_(((bits >> 13) & 1) + (1 << 12) - 1).bitwise_and_(~((1 << 13) - 1))
    return values


def quantize(x, block, dtype, per_tensor, column_major):
    """fp32 `x` in the fp8 `dtype` with scales amax / max(dtype) over blocks of (rows, cols)
    elements (0: the whole dim): the values, the scale the op takes, the dequantized fp64."""
    top = torch.finfo(dtype).max
    x = x.float()
    if per_tensor:
        amax = x.abs().amax() if x.numel() else torch.tensor(1.0)
        scale = torch.where(amax > 0, amax, torch.ones_like(amax)) / top
        expanded = scale
    else:
        rows, cols = x.shape[-2], x.shape[-1]
        extent = (rows if block[0] == 0 else block[0], cols if block[1] == 0 else block[1])
        counts = tuple(
            1 if b == 0 else -(-n // b) for b, n in zip(block, (rows, cols), strict=True)
        )
        if 0 in extent:
            amax = torch.ones(*x.shape[:-2], *counts)
        else:
            blocks = x.reshape(*x.shape[:-2], counts[0], extent[0], counts[1], extent[1])
            amax = blocks.abs().amax((-3, -1))
        scale = torch.where(amax > 0, amax, torch.ones_like(amax)) / top
        expanded = scale.repeat_interleave(extent[0], -2).repeat_interleave(extent[1], -1)
    values = (x / expanded).clamp(-top, top).to(dtype)
    dequantized = values.to(torch.float64) * expanded.to(torch.float64)
    scale = scale.to(torch.float32).contiguous()
    if column_major:
        scale = scale.t().contiguous().t()
    return values, scale, dequantized


def judge(expected, actual, reference, k, intermediate=None, rounding=None, where="the result"):
    """What is wrong with `actual` (one output) against eager's `expected` and the fp64
    `reference`, as gemmconf's oracle judges it; an empty list when nothing is."""
    if not isinstance(actual, torch.Tensor):
        return [f"{where}: returned {type(actual).__name__}, where eager returns a Tensor"]
    if actual.shape != expected.shape:
        return [f"{where}: shape {tuple(actual.shape)}, eager's {tuple(expected.shape)}"]
    problems = []
    if actual.dtype != expected.dtype:
        problems.append(f"{where}: dtype {actual.dtype}, eager's {expected.dtype}")
    if actual.device.type != expected.device.type:
        problems.append(f"{where}: device {actual.device.type}, eager's {expected.device.type}")
    if (
        ROW_MAJOR
        and expected.is_contiguous()
        and not actual.is_contiguous()
        and expected.numel() > 1
    ):
        problems.append(
            f"{where}: strides {actual.stride()} are not row-major, as eager's "
            f"{expected.stride()} are"
        )
    if expected.numel() == 0 or not NUMERIC:
        return problems
    e = expected.detach().to(torch.float64)
    a = actual.detach().to(e.device, torch.float64)
    if EXACT or reference is None or not expected.is_floating_point():
        differ = int((~((a == e) | (a.isnan() & e.isnan()))).sum())
        if differ:
            problems.append(f"{where}: {differ} of {e.numel()} elements differ from eager's")
        return problems
    max_ratio, floor_eps, trust_eager, input_rounding = POLICY[
        str(expected.dtype).removeprefix("torch.")
    ]
    r = reference.detach().to(e.device, torch.float64)
    finite_e, finite_a = e.isfinite(), a.isfinite()
    both = finite_e & finite_a
    same = (e.isnan() & a.isnan()) | (~finite_e & ~finite_a & (e == a))
    disagree = int((~both & ~same).sum())
    if disagree:
        problems.append(f"{where}: NaN/Inf positions differ from eager's at {disagree} element(s)")
    mask = both & r.isfinite()
    eager_err = float(torch.where(mask, (e - r).abs(), 0.0).max())
    count = int(mask.sum())
    rms = math.sqrt(float(torch.where(mask, r, 0.0).pow(2).sum()) / count) if count else 0.0
    floor = floor_eps * math.sqrt(max(k, 1)) * rms
    trusted = eager_err if trust_eager else 0.0
    info = torch.finfo(expected.dtype)
    ulp = info.eps * torch.where(mask, r.abs(), 0.0).clamp_min(info.tiny)
    if input_rounding and rounding is not None:
        ulp = ulp + input_rounding * torch.where(
            mask, rounding.to(e.device, torch.float64).abs(), 0.0
        )
    if intermediate is not None:
        carried = torch.where(mask, intermediate.to(e.device, torch.float64), 0.0)
        ulp = ulp + carried.nan_to_num(0.0)
    err = torch.where(mask, (a - r).abs(), 0.0)
    ratio = float((err / (ulp / max_ratio).clamp_min(max(trusted, floor))).max())
    if ratio > max_ratio:
        problems.append(
            f"{where}: err_ratio {ratio:.4g} > {max_ratio:g} allowed (largest error "
            f"{float(err.max()):.4g} against fp64; eager's {eager_err:.4g}; floor {floor:.4g}; "
            f"K={k})"
        )
    return problems


def outputs(value):
    """A program's result as a list of tensors (several where it returns a tuple)."""
    return list(value) if isinstance(value, (tuple, list)) else [value]


def unwrapped(error):
    """The error inside torch.compile's wrappers (BackendCompilerFailed and kin)."""
    seen = set()
    while (
        type(error).__module__.startswith(("torch._dynamo", "torch._inductor"))
        and id(error) not in seen
    ):
        seen.add(id(error))
        inner = getattr(error, "inner_exception", None) or error.__cause__ or error.__context__
        if not isinstance(inner, BaseException):
            break
        error = inner
    return error


def graphs():
    """Graphs dynamo handed to a backend so far in this process."""
    if "torch._dynamo.utils" not in sys.modules:
        return 0
    return sys.modules["torch._dynamo.utils"].counters["stats"].get("unique_graphs", 0)


def first_line(error):
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def error_case(backend):
    """An error scenario: eager raises RAISES (matching RAISES_MATCH), and so must the backend."""
    try:
        program(*draw(0)[0])
    except Exception as error:
        print(f"eager raised {first_line(error)}")
    else:
        print(f"eager did not raise {RAISES} here: the scenario is wrong, not the backend")
        return 2
    args = draw(0)[0]
    try:
        value = backend(args)(*args)
    except Exception as raised:
        error = unwrapped(raised)
        matches = RAISES_MATCH is None or re.search(RAISES_MATCH, str(error))
        if type(error).__name__ == RAISES and matches:
            print(f"PASSED: the backend raised {first_line(error)}, as eager does")
            return 0
        print(f"FAILED: the backend raised {first_line(error)}; eager raises {RAISES}")
        return 1
    print(f"FAILED: the backend returned {type(value).__name__}; eager raises {RAISES}")
    return 1


class Draw:
    """One draw of a shape set: eager's outputs, the backend's, and what they are judged against
    (the fp64 outputs and the rounding bounds; None where not judged)."""

    def __init__(self, backend, index, number, drawn=None, judged=True):
        args, reference_args = drawn or draw(index, number)
        self.expected = outputs(program(*draw(index, number)[0]))  # eager, on a copy
        self.actual = outputs(backend(args)(*args))
        self.reference = self.intermediate = self.rounding = None
        if judged and reference is not None and NUMERIC:
            upcast = [t.to(torch.float64) if t.is_floating_point() else t for t in reference_args]
            self.reference = outputs(reference(*upcast))
            if intermediate is not None:
                self.intermediate = outputs(intermediate(*upcast))
            if rounding is not None:
                self.rounding = rounding(*upcast)


def draws_for(numel, index):
    """Draws one judgment of shape set `index` takes: enough for DRAW_ELEMENTS output elements,
    and on shape set 0 two at least (the second with fresh values)."""
    draws = 1
    if 0 < numel < DRAW_ELEMENTS:
        draws = min(MAX_DRAWS, -(-DRAW_ELEMENTS // numel))
    return max(draws, 2) if index == 0 else draws


def fresh_answer_problems(first, snapshot, second):
    """Shape set 0's second call, on fresh values: the first answer must not have changed, and
    the second must not be the first one again."""
    problems = []
    for i, (now, before) in enumerate(zip(first.actual, snapshot, strict=False)):
        if isinstance(now, torch.Tensor) and not torch.equal(now.nan_to_num(), before.nan_to_num()):
            problems.append(
                f"shape set 0, output {i}: the first result changed after the next call (the "
                "backend returned storage that its next call wrote again)"
            )
    pairs = list(zip(second.actual, snapshot, strict=False))
    again = all(isinstance(x, torch.Tensor) and torch.equal(x, y) for x, y in pairs)
    eager = zip(second.expected, first.expected, strict=False)
    if again and not all(torch.equal(x, y) for x, y in eager):
        problems.append("shape set 0: a second call on fresh values returned the first answer")
    return problems


def pooled(values):
    return torch.cat([v.detach().reshape(-1) for v in values]) if len(values) > 1 else values[0]


def judged_problems(index, draws):
    """Shape set `index`'s judgment over its draws, output by output: the draws of a small
    output pooled into one (as gemmconf judges them), each of a larger one on its own."""
    first = draws[0]
    if len(first.actual) != len(first.expected):
        return [f"shape set {index}: {len(first.actual)} outputs, eager's {len(first.expected)}"]
    numel = sum(t.numel() for t in first.expected if isinstance(t, torch.Tensor))
    dims = " ".join(f"{name}={size}" for name, size in DIMS[index].items())
    problems = []
    for i in range(len(first.expected)):
        where = f"shape set {index} ({dims})" + (f", output {i}" if len(first.expected) > 1 else "")
        column = [
            (
                d.expected[i],
                d.actual[i],
                None if d.reference is None else d.reference[i],
                None if d.intermediate is None else d.intermediate[i],
                d.rounding,
            )
            for d in draws
            if d.reference is not None or reference is None
        ]
        tensors = all(
            isinstance(c[1], torch.Tensor) and isinstance(c[0], torch.Tensor) for c in column
        )
        if tensors and numel < DRAW_ELEMENTS and all(c[1].shape == c[0].shape for c in column):
            parts = [
                None if part[0] is None else pooled(part) for part in zip(*column, strict=True)
            ]
            problems += judge(*parts[:3], KS[index], parts[3], parts[4], where)
        else:
            for e, a, r, m, b in column:
                problems += judge(e, a, r, KS[index], m, b, where)
    return problems


def main():
    torch.backends.cuda.matmul.allow_tf32 = TF32
    torch.backends.cudnn.allow_tf32 = TF32
    torch.set_float32_matmul_precision("high" if TF32 else "highest")
    made = []

    def backend(example_inputs):
        if not made:
            made.append(compile_backend(program, example_inputs))
        return made[0]

    if RAISES:
        return error_case(backend)
    graphs_before = graphs()
    problems = []
    first_draws = [draw(index) for index in range(len(SHAPES))]
    if DYNAMIC is None:  # compile mode mark_dynamic: the dims the scenario names
        mark_dynamic(first_draws[0][0])
    for index, drawn in enumerate(first_draws):
        draws = [Draw(backend, index, 0, drawn)]
        snapshot = [
            t.detach().clone() if isinstance(t, torch.Tensor) else t for t in draws[0].actual
        ]
        numel = sum(t.numel() for t in draws[0].expected if isinstance(t, torch.Tensor))
        for number in range(1, draws_for(numel, index)):
            # past gemmconf's size limit, further draws are compared bit for bit only
            draws.append(Draw(backend, index, number, judged=not LARGE[index]))
            if index == 0 and number == 1:
                problems += fresh_answer_problems(draws[0], snapshot, draws[1])
        problems += judged_problems(index, draws)
    if COMPILED_BY_TORCH:
        compiles = graphs() - graphs_before
        if compiles == 0:
            problems.append("not compiled: dynamo captured no graph and ran the program eagerly")
    elif made and hasattr(made[0], "compiles"):
        compiles = made[0].compiles()
    else:
        compiles = 0
    if compiles > COMPILE_BUDGET:
        problems.append(
            f"recompiled: {compiles} compiles over {len(SHAPES)} shape set(s); "
            f"{COMPILE_BUDGET} allowed"
        )
    for problem in dict.fromkeys(problems):
        print(f"  {problem}")
    print(f"{'FAILED' if problems else 'PASSED'}: {ITEM} on {BACKEND}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
