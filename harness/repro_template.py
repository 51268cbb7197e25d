"""The code every standalone repro carries after its own part (gemmconf.repro writes the file):
drawing values as gemmconf draws them, laying them out, judging a result as gemmconf's oracle
does, and the main loop. gemmconf.repro copies this module's text from `def item_seed(` on; the
names set below are defined by the repro's own part, written before it (its constants,
the program and its fp64 reference, `draw`, `mark_dynamic` and `compile_backend`).

It is a module of its own so that this code is linted and formatted as the rest is; nothing
imports it.
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
import traceback
from collections.abc import Callable
from typing import Any

import torch

# Defined by the repro's own part; these values only make this module complete.
ITEM = BACKEND = DEVICE = ""
RUN_SEED = COMPILE_BUDGET = DRAW_ELEMENTS = MAX_DRAWS = 0
TF32 = EXACT = NUMERIC = ROW_MAJOR = COMPILED_BY_TORCH = COMPILED_AUTOGRAD = False
AUTOGRAD_CAPTURES: int | None = None
AUTOGRAD_COMPILES: int | None = None
DYNAMIC: bool | None = None
DYNAMO_CONFIG: dict = {}
RAISES: str | None = None
RAISES_MATCH: str | None = None
DIMS: list[dict[str, int]] = []
SHAPES: list[dict[str, list[int]]] = []
KS: list[int] = []
LARGE: list[bool] = []
TARGETS: list[tuple[int, str]] = []
POLICY: dict[str, tuple[float, float, bool, float]] = {}
program: Callable[..., Any] = print
reference: Callable[..., Any] | None = None
rounding: Callable[..., Any] | None = None
intermediate: Callable[..., Any] | None = None
draw: Callable[..., Any] = print
mark_dynamic: Callable[..., Any] = print
compile_backend: Callable[..., Any] = print


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
        values = (x / scale).clamp(-top, top).to(dtype)
        dequantized = values.to(torch.float64) * scale.to(torch.float64)
    else:
        rows, cols = x.shape[-2], x.shape[-1]
        extent = (rows if block[0] == 0 else block[0], cols if block[1] == 0 else block[1])
        counts = tuple(
            1 if b == 0 else -(-n // b) for b, n in zip(block, (rows, cols), strict=True)
        )
        blocked = (*x.shape[:-2], counts[0], extent[0], counts[1], extent[1])
        if 0 in extent:
            amax = torch.ones(*x.shape[:-2], *counts)
        else:
            amax = x.reshape(blocked).abs().amax((-3, -1))
        scale = torch.where(amax > 0, amax, torch.ones_like(amax)) / top
        per_block = scale[..., :, None, :, None]  # each block's scale, broadcast over it
        blocks = (x.reshape(blocked) / per_block).clamp(-top, top).to(dtype)
        values = blocks.reshape(x.shape)
        dequantized = (blocks.to(torch.float64) * per_block.to(torch.float64)).reshape(x.shape)
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


def unwrap(error):
    """The error inside torch.compile's wrappers (BackendCompilerFailed and kin), and the
    wrappers' class names, outermost first."""
    seen, wrappers = set(), []
    while (
        type(error).__module__.startswith(("torch._dynamo", "torch._inductor"))
        and id(error) not in seen
    ):
        seen.add(id(error))
        inner = getattr(error, "inner_exception", None) or error.__cause__ or error.__context__
        if not isinstance(inner, BaseException):
            break
        wrappers.append(type(error).__name__)
        error = inner
    return error, wrappers


def unwrapped(error):
    """The error inside torch.compile's wrappers."""
    return unwrap(error)[0]


class BackendRaised(Exception):
    """The backend raised during `stage` (its compile, or a call): the item's crash."""

    def __init__(self, stage, error):
        super().__init__(stage)
        self.stage, self.error = stage, error


def type_name(cls):
    """`RuntimeError` for builtins, else the qualified name, as gemmconf names a class."""
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def headline(message):
    """The message's first line, and the next where the first ends with ":" (its cause)."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    head = lines[0]
    if head.endswith(":") and len(lines) > 1:
        head = f"{head} {lines[1]}"
    return head[:300]


def raised_line(stage, error):
    """The one-line verdict gemmconf gives a call that raised: whose code raised, during what,
    and `Type: first line` of the error inside torch.compile's wrappers."""
    inner, wrappers = unwrap(error)
    text = headline(str(inner))
    if text:
        what = f"{type_name(type(inner))}: {text}"
    else:
        frames = traceback.extract_tb(inner.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
        what = f"{type_name(type(inner))} (no message) at {where or 'an unknown place'}"
    unsupported = type_name(type(inner)) == "NotImplementedError"
    # dynamo's wrappers of an error raised while it traced, before the backend got the graph
    if any(w in ("TorchRuntimeError", "InternalTorchDynamoError") for w in wrappers):
        head = (
            "torch.compile raised while dynamo traced the program, before the backend was "
            f"handed its graph ({stage})"
        )
        return f"Unsupported: {head}: {what}" if unsupported else f"{head}: {what}"
    when = f"during {stage}"
    if "BackendCompilerFailed" in wrappers:  # the backend's compiler, handed the graph
        when = f"while compiling its graph, in {stage}"
    if unsupported:
        return f"Unsupported: the backend raised {when}: {what}"
    return f"Backend raised {when}: {what}"


def set_dynamo_config():
    """The scenario's dynamo_config, set before the backend compiles: dynamo reads it while it
    traces the program (gemmconf patches it around each compile and call of its backends)."""
    import torch._dynamo

    for name, value in DYNAMO_CONFIG.items():
        setattr(torch._dynamo.config, name, value)


CAPTURED_GRAPH_COMPILES = []  # dynamo's compile ids of graphs compiled autograd captured


def enable_compiled_autograd():
    """Dynamo's compiled_autograd config on before the backend compiles (torch.compile reads it
    when the compile is made), and a count of the compiles of captured graphs (ids "!N/...")."""
    import torch._dynamo

    torch._dynamo.config.compiled_autograd = True
    handler = getattr(torch._dynamo, "callback_handler", None)
    if handler is not None:

        def started(args):
            if str(getattr(args, "compile_id", "")).startswith("!"):
                CAPTURED_GRAPH_COMPILES.append(args.compile_id)

        handler.register_start_callback(started)


def compiled_autograd_problems():
    """Compiled autograd's captures and compiles of captured graphs against the scenario's, for
    a backend that went through torch.compile; and how many compiles were of captured graphs."""
    counters = sys.modules["torch._dynamo.utils"].counters
    captures = counters["compiled_autograd"].get("captures", 0)
    compiles = len(CAPTURED_GRAPH_COMPILES)
    if not counters["frames"].get("total", 0):
        print("  note: compiled autograd applies to torch.compile backends only; this one never")
        print("  went through torch.compile, so no capture or compile count is checked")
        return [], 0
    wrong = AUTOGRAD_CAPTURES is not None and captures != AUTOGRAD_CAPTURES
    wrong |= AUTOGRAD_COMPILES is not None and compiles != AUTOGRAD_COMPILES
    if not wrong:
        return [], compiles
    return [
        f"compiled autograd counts: {captures} backward graph(s) captured (expected "
        f"{AUTOGRAD_CAPTURES}), {compiles} compiled for the backend (expected {AUTOGRAD_COMPILES})"
    ], compiles


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
        error = unwrapped(raised.error if isinstance(raised, BackendRaised) else raised)
        matches = RAISES_MATCH is None or re.search(RAISES_MATCH, str(error))
        if type(error).__name__ == RAISES and matches:
            print(f"PASSED: the backend raised {first_line(error)}, as eager does")
            return 0
        print(f"FAILED: the backend raised {first_line(error)}; eager raises {RAISES}")
        return 1
    print(f"FAILED: the backend returned {type(value).__name__}; eager raises {RAISES}")
    return 1


def dims_text(index):
    return " ".join(f"{name}={size}" for name, size in DIMS[index].items())


def same_bits(a, b):
    """Per element: whether `a` and `b` hold the same bits (NaN's included)."""
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return a.detach().contiguous().view(width) == b.detach().contiguous().view(width)


def unwritten_targets(targets, eager, index):
    """The out= targets the call left as `draw` filled them (NaN), where eager wrote another
    value: never written, in gemmconf's words."""
    problems = []
    for name, target, before in targets:
        if target.shape != before.shape or target.dtype != before.dtype:
            continue  # resized by the call: nothing of it is left as allocated
        left = same_bits(target, before)
        like = isinstance(eager, torch.Tensor) and eager.shape == before.shape
        if like and eager.dtype == before.dtype:
            left &= ~same_bits(eager.to(before.device), before)  # eager wrote another value
        count = int(left.sum())
        if count:
            first = tuple(int(i) for i in left.nonzero()[0])
            fill = float(before[first].float()) if before.dim() else float(before.float())
            held = "NaN" if math.isnan(fill) else repr(fill)
            every = "all" if count == target.numel() else f"{count} of"
            problems.append(
                f"Unwritten out= target: {every} {target.numel()} elements of {name} on shape "
                f"set {index} still hold the {held} the harness filled the target with before "
                f"the call (first at index {first}); the call never wrote them, where eager "
                f"writes its result into {name}."
            )
    return problems


class Draw:
    """One draw of a shape set: eager's outputs, the backend's, and what they are judged against
    (the fp64 outputs and the rounding bounds; None where not judged). What the backend raises
    is a BackendRaised naming the call; `problems` are its out= targets left unwritten."""

    def __init__(self, backend, index, number, drawn=None, judged=True):
        args, reference_args = drawn or draw(index, number)
        eager = program(*draw(index, number)[0])  # on a copy
        self.expected = outputs(eager)
        compiled = backend(args)
        fresh = f"draw {number}: fresh values, " if number else ""
        stage = f"the call on shape set {index} ({fresh}{dims_text(index)})"
        targets = [
            (name, args[i], args[i].detach().clone())
            for i, name in TARGETS
            if isinstance(args[i], torch.Tensor) and args[i].numel()
        ]
        try:
            self.actual = outputs(compiled(*args))
        except Exception as error:
            raise BackendRaised(stage, error) from error
        self.problems = unwritten_targets(targets, eager, index)
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
    dims = dims_text(index)
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
    import contextlib
    import faulthandler

    # a crash in the backend's native code prints the Python stack that reached it (a FlagGems
    # trial, 2026-12-02: a repro of its K = 0 SIGSEGV exited 139 printing nothing); not where
    # stderr has no file behind it
    with contextlib.suppress(OSError, ValueError, AttributeError):
        faulthandler.enable()
    torch.backends.cuda.matmul.allow_tf32 = TF32
    torch.backends.cudnn.allow_tf32 = TF32
    torch.set_float32_matmul_precision("high" if TF32 else "highest")
    made = []
    if COMPILED_AUTOGRAD:
        enable_compiled_autograd()
    if DYNAMO_CONFIG and COMPILED_BY_TORCH:
        set_dynamo_config()

    def backend(example_inputs):
        if not made:
            try:
                made.append(compile_backend(program, example_inputs))
            except Exception as error:
                raise BackendRaised("compile", error) from error
        return made[0]

    if RAISES:
        return error_case(backend)
    try:
        problems = called_problems(backend, made)
    except BackendRaised as raised:  # the item ends there, as gemmconf's does
        inner = unwrapped(raised.error)
        print(f"  {raised_line(raised.stage, raised.error)}")
        print(
            f"FAILED: {ITEM} on {BACKEND}: the backend raised {type_name(type(inner))} (its "
            "traceback follows)"
        )
        sys.stdout.flush()
        error = raised.error
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stdout)
        return 1
    for problem in dict.fromkeys(problems):
        print(f"  {problem}")
    print(f"{'FAILED' if problems else 'PASSED'}: {ITEM} on {BACKEND}")
    return 1 if problems else 0


def called_problems(backend, made):
    """Every shape set called and judged, and the compiles counted (`made`: the compiled
    callable, once made): what is wrong, in order."""
    graphs_before = graphs()
    problems = []
    first_draws = [draw(index) for index in range(len(SHAPES))]
    if DYNAMIC is None:  # compile mode mark_dynamic: the dims the scenario names
        mark_dynamic(first_draws[0][0])
    for index, drawn in enumerate(first_draws):
        draws = [Draw(backend, index, 0, drawn)]
        problems += draws[0].problems
        snapshot = [
            t.detach().clone() if isinstance(t, torch.Tensor) else t for t in draws[0].actual
        ]
        numel = sum(t.numel() for t in draws[0].expected if isinstance(t, torch.Tensor))
        for number in range(1, draws_for(numel, index)):
            # past gemmconf's size limit, further draws are compared bit for bit only
            draws.append(Draw(backend, index, number, judged=not LARGE[index]))
            problems += draws[-1].problems
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
    if COMPILED_AUTOGRAD:
        autograd, captured_graph_compiles = compiled_autograd_problems()
        problems += autograd
        compiles -= captured_graph_compiles  # counted on their own
    if compiles > COMPILE_BUDGET:
        problems.append(
            f"recompiled: {compiles} compiles over {len(SHAPES)} shape set(s); "
            f"{COMPILE_BUDGET} allowed"
        )
    return problems
