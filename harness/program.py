"""The function under test: what a scenario instance computes, as plain PyTorch.

`make_function` returns the Python function that eager runs and every backend compiles: the GEMM
op on its positional inputs (in `input_names` order), then the epilogue chain. `make_reference`
returns the same computation for the fp64 reference the oracle uses: inputs arrive upcast and
dequantized, casts are kept in fp64 and `_scaled_mm` becomes an explicit scaled matmul. The op's
call, reference and parameters are its `OpSpec`'s (`gemmconf.gemm.ops`).
"""

from __future__ import annotations

import contextlib
import linecache
import math
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F

from gemmconf.gemm.dtypes import DTYPES, torch_dtype
from gemmconf.gemm.reference import HELPERS
from gemmconf.scenario import TENSOR_EPILOGUES, Epilogue, ScenarioInstance

# suite `swizzle:` values -> F.SwizzleType names
SWIZZLE_TYPES = {"none": "NO_SWIZZLE", "32_4_4": "SWIZZLE_32_4_4"}


def operand_ranks(instance: ScenarioInstance) -> tuple[int, int]:
    return len(instance.operand("a").shape), len(instance.operand("b").shape)


def differentiated(instance: ScenarioInstance) -> tuple[str, ...]:
    """The parameters a backward scenario takes gradients of: float inputs and the addend."""
    spec = instance.spec
    names = [o.name for o in spec.inputs]
    if spec.addend is not None and instance.bias is not None:
        names.append(spec.addend.name)
    return tuple(names)


def _tensor_steps(instance: ScenarioInstance) -> list[Epilogue]:
    return [step for step in instance.epilogue if step.kind in TENSOR_EPILOGUES]


def make_function(instance: ScenarioInstance) -> Callable[..., Any]:
    """The function eager runs and backends compile."""
    return _compile_source(program_source(instance), instance, "program")


def make_reference(instance: ScenarioInstance) -> Callable[..., Any] | None:
    """The same computation on fp64 (dequantized) inputs; None where exactness is judged."""
    if instance.spec.exact:
        return None  # integer GEMMs are compared with eager bit for bit
    return _compile_source(program_source(instance, reference=True), instance, "fp64 reference")


def make_rounding_magnitude(instance: ScenarioInstance) -> Callable[..., Any] | None:
    """|alpha| * (|A| @ |B|) over the reference inputs (same parameters as the program): per
    element, what rounding the GEMM's inputs can cost, up to the oracle's relative bound
    (`Policy.input_rounding`). C and the bias take no part (they are not rounded to TF32). None
    where the output is not that GEMM (an epilogue follows) or the op is not a float GEMM."""
    magnitude = instance.spec.magnitude
    if instance.epilogue or magnitude is None or instance.backward:
        return None
    names = instance.input_names
    lines = [
        f"def {instance.name.replace('.', '_')}_reference({', '.join(names)}):",
        *_transposes(instance, names),
        f"    return {magnitude.format_map(_terms(instance))}",
    ]
    return _compile_source("\n".join(lines) + "\n", instance, "rounding magnitude")


# The most an epilogue step magnifies an error in its input: its largest |derivative| (gelu's
# 1.129 at x = sqrt(2), silu's 1.0998 near x = 2.4, sigmoid's 1/4), rounded up. `mul` scales by
# its constant and `dropout_mask` by its mask, which `make_intermediate_rounding` multiplies by.
_SLOPES = {
    "relu": 1.0,
    "gelu": 1.13,
    "gelu_tanh": 1.13,
    "silu": 1.1,
    "tanh": 1.0,
    "sigmoid": 0.25,
    "clamp": 1.0,
    "add": 1.0,
    "add_tensor": 1.0,
    "cast": 1.0,
}


def make_intermediate_rounding(instance: ScenarioInstance) -> Callable[..., Any] | None:
    """Per element, the most that rounding the program's intermediate results can cost its
    output, over the reference inputs: the oracle adds it to the output's ulp.

    A correct backend may hand each value from one op to the next in the op's result dtype, as
    eager's ops do: alpha * (A @ B) rounded before beta * C or the bias is added (an unfused
    addmm or linear), the GEMM's result before each epilogue step. Each such rounding costs up
    to eps * |value| (a full unit, so that the accumulation's own error fits beside half of
    it), carried through the later steps' slopes (`_SLOPES`). The final value's rounding is the
    oracle's ulp and is not counted here. A program with `keep` steps returns a bound per
    output, as it returns the outputs (each kept value's is what was carried up to it). A
    backward item's forward result gets its bound and each gradient none (zeros): eager's
    backward rounds between its ops as a correct backend may, and the oracle's bar is relative
    to eager's error. None where nothing intermediate is rounded (no addend and no epilogue)."""
    spec = instance.spec
    names = instance.input_names
    addend = spec.addend.name if spec.addend is not None and spec.addend.name in names else None
    if spec.alpha_beta and instance.beta == 0:
        addend = None  # nothing is added to the product
    steps = instance.epilogue
    if spec.exact:
        return None
    if addend is None and not steps:
        return None
    eps = torch.finfo(torch_dtype(instance.gemm_dtype)).eps
    gemm = _gemm_expression(instance, reference=True)
    lines = [f"def {instance.name.replace('.', '_')}_reference({', '.join(names)}):"]
    if instance.backward:  # the gradients' shapes: the parameters as given, before transposes
        lines.append(f"    wrt = ({', '.join(differentiated(instance))},)")
    lines += _transposes(instance, names)
    if addend is None:
        lines += [f"    out = {gemm}", "    carried = torch.zeros_like(out)"]
    else:  # the product alone is the GEMM with its addend zero; the addend enters times beta
        beta = instance.beta if spec.alpha_beta else 1.0
        lines += [
            f"    product = (lambda {addend}: {gemm})(torch.zeros_like({addend}))",
            f"    out = product + {_literal(beta)} * {addend}",
            f"    carried = {eps!r} * product.abs()",
        ]
    others = iter(n for n in names if n.startswith("other"))
    kept = []
    for step in steps:
        if step.kind == "keep":  # an output: its own rounding is its ulp, as for the last
            kept.append(f"kept{len(kept)}")
            lines.append(f"    {kept[-1]} = carried")
            continue
        other = next(others) if step.kind in TENSOR_EPILOGUES else None
        if step.kind == "mul":
            slope = _literal(abs(step.arg))
        elif step.kind == "dropout_mask":
            slope = f"{other}.abs()"
        else:
            slope = repr(_SLOPES[step.kind])
        lines.append(f"    carried = (carried + {eps!r} * out.abs()) * {slope}")
        if step.kind == "cast":
            eps = torch.finfo(torch_dtype(step.arg)).eps
        else:
            lines.append(f"    out = {_epilogue_expression(step, iter((other,)))}")
    if instance.backward:  # as the program returns: the forward result, then the gradients
        lines.append("    return (carried.detach(), *(torch.zeros_like(p) for p in wrt))")
    else:
        lines.append(f"    return {', '.join([*kept, 'carried'])}")
    return _compile_source("\n".join(lines) + "\n", instance, "intermediate rounding")


def program_source(instance: ScenarioInstance, *, reference: bool = False) -> str:
    """The program as Python source.

    Scalars (alpha, beta, epilogue constants) are written as literals: held in a closure, dynamo
    would lift them into graph inputs under dynamic=True and recompile once they are seen, which
    is the program's doing, not the backend's.
    """
    names = instance.input_names
    name = f"{instance.name.replace('.', '_')}_{'reference' if reference else 'program'}"
    lines = [f"def {name}({', '.join(names)}):"]
    if instance.backward:  # gradients of the parameters as given, before any transpose
        lines.append(f"    wrt = ({', '.join(differentiated(instance))},)")
    lines += _transposes(instance, names)
    lines.append(f"    out = {_gemm_expression(instance, reference=reference)}")
    kept = []
    others = iter(n for n in names if n.startswith("other"))
    for step in instance.epilogue:
        if step.kind == "keep":
            kept.append(f"kept{len(kept)}")
            lines.append(f"    {kept[-1]} = out")
        elif step.kind == "cast" and reference:
            continue  # the reference stays in fp64
        else:
            lines.append(f"    out = {_epilogue_expression(step, others)}")
    if instance.backward:  # the forward result, then one gradient per differentiated input
        lines.append("    return (out, *torch.autograd.grad(out, wrt, grad))")
    else:
        lines.append(f"    return {', '.join([*kept, 'out'])}" if kept else "    return out")
    return "\n".join(lines) + "\n"


def _transposes(instance: ScenarioInstance, names: tuple[str, ...]) -> list[str]:
    """Source lines giving operands stored transposed (layout `t`) their logical shape."""
    return [
        f"    {o.name} = {o.name}.transpose(-2, -1)"
        for o in instance.operands
        if o.layout == "t" and o.name in names
    ]


def _gemm_expression(instance: ScenarioInstance, *, reference: bool) -> str:
    spec = instance.spec
    template = spec.reference if reference and spec.reference is not None else spec.call
    return template.format_map(_terms(instance))


def _terms(instance: ScenarioInstance) -> dict[str, str]:
    """The values of an op's expression templates for this instance (`gemmconf.gemm.ops`)."""
    spec = instance.spec
    out_dtype = instance.out_dtype or spec.out_dtype
    present = instance.conditions
    recipe = instance.recipe
    terms = {
        "alpha": _literal(instance.alpha),
        "beta": _literal(instance.beta),
        "abs_alpha": _literal(abs(instance.alpha) if spec.alpha_beta else 1.0),
        "bias": "bias" if instance.bias else "None",
        "bias_term": " + bias" if instance.bias else "",
        "out_dtype": _torch_name(out_dtype) if out_dtype else "None",
        "use_fast_accum": repr(instance.use_fast_accum),
        "offs": "offs" if "jagged" in present else "None",
        "scale_a_arg": "scale_a",
        "scale_b_arg": "scale_b",
        "swizzle": f"F.SwizzleType.{SWIZZLE_TYPES[instance.swizzle or 'none']}",
    }
    if recipe is not None:
        for side, scaling_type in zip("ab", recipe.scaling_types, strict=True):
            terms[f"recipe_{side}"] = f"F.ScalingType.{scaling_type}"
            if recipe.global_scale:
                terms[f"scale_{side}_arg"] = f"[scale_{side}, global_{side}]"
                terms[f"recipe_{side}"] = (
                    f"[F.ScalingType.{scaling_type}, F.ScalingType.TensorWise]"
                )
    return terms


# Each epilogue step as source over `out`, a template as an op's call is (`OpSpec.call`):
# {arg} the step's constant, {low} and {high} a clamp's bounds, {dtype} a cast's, {other} the
# input of its own that a TENSOR_EPILOGUES step takes.
_EPILOGUE_CALLS = {
    "relu": "torch.relu(out)",
    "gelu": "F.gelu(out)",
    "gelu_tanh": "F.gelu(out, approximate='tanh')",
    "silu": "F.silu(out)",
    "tanh": "torch.tanh(out)",
    "sigmoid": "torch.sigmoid(out)",
    "clamp": "torch.clamp(out, {low}, {high})",
    "mul": "out * {arg}",
    "add": "out + {arg}",
    "add_tensor": "out + {other}",
    "dropout_mask": "out * {other}",  # the mask an input: 0 or 1 / (1 - p) per element
    "cast": "out.to({dtype})",
}


def _epilogue_expression(step: Epilogue, others: Iterator[str]) -> str:
    """One step's source (`_EPILOGUE_CALLS`); a step with an input of its own takes the next of
    `others`."""
    if step.kind in TENSOR_EPILOGUES:
        terms = {"other": next(others)}
    elif step.kind == "clamp":
        terms = {"low": _literal(step.arg[0]), "high": _literal(step.arg[1])}
    elif step.kind == "cast":
        terms = {"dtype": _torch_name(step.arg)}
    else:
        terms = {"arg": _literal(step.arg)}
    return _EPILOGUE_CALLS[step.kind].format_map(terms)


def _literal(value: float | None) -> str:
    """A scenario's number (or None) as Python source. Numbers come from files: the loader lets
    only numbers and None through, and `inf`/`nan` are no names in the program's namespace, so
    those are written as floats (`.inf` in YAML gave `torch.clamp(out, inf, ...)`)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise TypeError(f"a scenario number, not {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    return repr(value)


def _torch_name(dtype: str) -> str:
    return f"torch.{str(torch_dtype(dtype)).removeprefix('torch.')}"


def _compile_source(source: str, instance: ScenarioInstance, kind: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {"torch": torch, "F": F, **HELPERS}
    filename = f"<gemmconf {kind} {instance.id}>"  # one per text: linecache shows the right one
    code = compile(source, filename, "exec")
    # Register the text so tracebacks and dynamo's graph-break messages can show the line.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(code, namespace)
    (function,) = (v for k, v in namespace.items() if k.endswith(("_program", "_reference")))
    function.gemmconf_source = source
    return function


@contextlib.contextmanager
def numerics(instance: ScenarioInstance) -> Iterator[None]:
    """Matmul precision settings for one item: TF32 allowed only for `tf32` scenarios."""
    allow = DTYPES[instance.dtype].tf32
    saved = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
    )
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
        torch.set_float32_matmul_precision(saved[2])
