"""Standalone repros (`gemmconf repro ID --backend X`): one item as a Python file that needs torch
alone, ready for an upstream issue.

The file holds the program under test as source (gemmconf.program's, with the helpers it calls),
how its inputs are built (each input's shape, dtype, layout, value distribution and, for fp8,
its scales, drawn from the item's seeds exactly as gemmconf draws them: the file says which
values gemmconf judged), the backend's call, and the comparison: eager and the backend on the
same values, both against the program run in fp64 on them, with the item's tolerance (the
`oracle` module's rule: the backend's error over max(eager's error, a floor growing with
sqrt(K)), each element allowed one output ulp and the rounding of intermediate results beside).
It exits 1 when the backend fails, 0 when it passes, and says what is wrong in the run's words:
a backend that raised gets the run's one-line verdict ("Backend raised during the call on shape
set 0 (...): Type: message") and a FAILED line naming the exception, its traceback after them;
an out= target the call left holding its NaN fill where eager wrote it is an unwritten target
(gemmconf.checks.guards' words), before the numbers that follow from it.

What the repro does not redo: confirming a marginal numeric failure on further rounds of draws
(it judges the first round), refuting an eager NaN with a magnitude bound, code checks,
determinism and batch-invariance checks, and a stand-in for an eager with no kernel. A marginal
item may therefore read differently; its gemmconf record says how its verdict was reached.

The backend's call, by `--backend`: `dynamo:NAME` is `torch.compile(fn, backend="NAME", ...)`;
`inductor[-max-autotune[:X]]` the torch.compile call with inductor's options (the label's, and
the scenario's `inductor_config` over them); `eager` no
compile at all; an import path or an entry point imports that object (its package is the one
import beside torch) and calls its `compile(fn, example_inputs, dynamic=...)`; `reference` the
reference backend's compiler, which ships inside gemmconf.

Inputs are written as code and checked against `gemmconf.inputs` before the file is written:
an input the generated code does not reproduce bit for bit (MX and NVFP4 scales, scales laid
out for F.scaled_mm's blockwise recipes, K-grouped fp8) is a `ReproUnsupported` naming it,
never a repro of other values.
"""

from __future__ import annotations

import inspect
import re
import textwrap
import types
from dataclasses import dataclass
from typing import Any

import torch

from gemmconf import drawing, inputs, oracle, program, repro_template
from gemmconf.backends import resolve, split_specs
from gemmconf.checks import compile_budget
from gemmconf.gemm.dtypes import DTYPES, is_quantized, torch_dtype
from gemmconf.gemm.reference import HELPERS
from gemmconf.gemm.scaling import RECIPES, WHOLE
from gemmconf.ids import standalone_command, standalone_needs
from gemmconf.item import fixed_strides
from gemmconf.scenario import TENSOR_EPILOGUES, ScenarioInstance, eval_dim

__all__ = ["ReproUnsupported", "repro_source", "standalone_command"]


class ReproUnsupported(Exception):
    """An item whose standalone repro cannot be written (the reason says why)."""


@dataclass(frozen=True)
class _Draws:
    """What the repro needs to know of each shape set: its shapes, K, draws per judgment."""

    shapes: list[dict[str, list[int]]]
    ks: list[int]
    large: list[bool]
    group_sizes: list[list[int] | None]
    result_shapes: list[list[int] | None]


def repro_source(
    instance: ScenarioInstance,
    spec: str,
    *,
    seed: int = 0,
    device: str = "cpu",
    gemmconf_version: str = "",
) -> str:
    """The standalone repro's text for `instance` on the backend `spec` (as `--backend` names
    it), its inputs drawn for run seed `seed` on `device`. Raises ReproUnsupported."""
    if len(split_specs(spec)) != 1:
        raise ReproUnsupported(f"--backend {spec!r}: a repro is for one backend")
    _check_supported(instance)
    draws = _draw_table(instance)
    names = instance.input_names
    sections = [
        _header(instance, spec, seed, device, gemmconf_version),
        _imports(instance, spec),
        _constants(instance, spec, seed, device, draws),
        _programs(instance),
        _draw_function(instance, names),
        _mark_dynamic(instance, names),
        _backend_section(instance, spec),
        _shared_code(),
        'if __name__ == "__main__":\n    sys.exit(main())',
    ]
    source = "\n\n\n".join(s.strip("\n") for s in sections if s) + "\n"
    _verify(source, instance, seed, device)
    return source


def _check_supported(instance: ScenarioInstance) -> None:
    why = unsupported(instance)
    if why is not None:
        raise ReproUnsupported(f"no standalone repro for {instance.id}: {why}")


def unsupported(instance: ScenarioInstance) -> str | None:
    """Why no standalone repro can be written for `instance`; None where one can."""
    spec = instance.spec
    recipe = RECIPES.get(instance.scaling or "")
    why = None
    if recipe is not None and recipe.microscaling:
        why = f"its {instance.scaling} operands and scales are not written as code yet"
    elif (
        recipe is not None
        and spec.scale_layout is not None
        and not (recipe.per_tensor or recipe.block("a") == (1, WHOLE))
    ):
        why = f"its {instance.scaling} scales' layout for {instance.op} is not written as code yet"
    elif recipe is not None and spec.grouped:
        why = "its grouped fp8 operands are not written as code yet"
    elif instance.checks.raises_or_correct:
        why = "an error scenario that allows a correct result is judged against fp64 alone"
    return why


def _draw_table(instance: ScenarioInstance) -> _Draws:
    shapes, ks, large, groups, results = [], [], [], [], []
    for index in range(len(instance.shape_sets)):
        dims = instance.dims(index)
        by_name = {o.name: [eval_dim(e, dims) for e in o.shape] for o in instance.operands}
        if instance.bias is not None:
            by_name["bias"] = [eval_dim(e, dims) for e in instance.bias]
        for i, step in enumerate(s for s in instance.epilogue if s.kind in TENSOR_EPILOGUES):
            if step.kind != "dropout_mask":
                by_name[f"other{i}"] = [eval_dim(e, dims) for e in step.arg]
        shapes.append(by_name)
        ks.append(dims.get("K", 1))
        large.append(drawing.large(instance, dims))
        groups.append(inputs._group_sizes(instance, dims, 0))
        needs_result = instance.backward or any(s.kind == "dropout_mask" for s in instance.epilogue)
        results.append(inputs._result_shape(instance, dims) if needs_result else None)
    return _Draws(shapes, ks, large, groups, results)


def _header(instance: ScenarioInstance, spec: str, seed: int, device: str, version: str) -> str:
    command = standalone_command(instance.id, spec, seed=seed)
    made = f"gemmconf {version}, " if version else ""
    paragraphs = [
        f"Written by `{command}` ({made}torch {torch.__version__}); it needs "
        f"{standalone_needs(spec)}. The scenario ({instance.source}): op {instance.op}, dtype "
        f"{instance.dtype}, compile mode {instance.compile.mode}, "
        f"{len(instance.shape_sets)} shape set(s).",
        "It runs the program below eagerly, through the backend and in fp64, on the inputs "
        f"gemmconf drew for this item (run seed {seed}), and compares as gemmconf does: the "
        "backend's largest error against fp64 may be at most max_ratio times the larger of "
        "eager's own error and a floor that grows with sqrt(K) (each element also allowed one "
        "output ulp and the rounding of intermediate results). Shape set 0 is also called on "
        "fresh values: the answer must be fresh, and the first answer must not change; an out= "
        "target must be written. Exits 1 when the backend fails (a backend that raises: the "
        "one-line verdict, then its traceback), 0 when it passes.",
    ]
    wrapped = "\n\n".join(textwrap.fill(p, 96, break_on_hyphens=False) for p in paragraphs)
    return (
        "#!/usr/bin/env python3\n"
        f'"""Standalone repro of gemmconf item {instance.id} on backend {spec}.\n\n'
        f'{wrapped}\n"""'
    )


def _imports(instance: ScenarioInstance, spec: str) -> str:
    lines = ["import hashlib", "import math", "import re", "import sys", "import traceback", ""]
    lines += ["import torch", "import torch.nn.functional as F"]
    used = [name for name in HELPERS if _uses(instance, name)]
    for name in used:  # the helpers the op's templates call, as plain torch code
        lines += ["", "", inspect.getsource(HELPERS[name]).rstrip()]
    return "\n".join(lines)


def _uses(instance: ScenarioInstance, name: str) -> bool:
    return any(
        re.search(rf"\b{name}\(", text)
        for text in (program.program_source(instance), _reference_text(instance) or "")
    )


def _reference_text(instance: ScenarioInstance) -> str | None:
    function = program.make_reference(instance)
    return None if function is None else function.gemmconf_source


def _constants(instance: ScenarioInstance, spec: str, seed: int, device: str, draws: _Draws) -> str:
    policies = {}
    for name in ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"):
        policy = oracle.item_policy(
            getattr(torch, name),
            compute="fp32" if instance.values == "tf32_exact" else instance.dtype,
            fast_accum=instance.use_fast_accum,
            max_ratio=instance.checks.max_ratio,
            fp64_alone=instance.checks.numeric == "fp64",
        )
        policies[name] = (
            policy.max_ratio,
            policy.floor_eps,
            policy.trust_eager,
            policy.input_rounding,
        )
    strides = fixed_strides(instance)
    lines = [
        f"ITEM = {instance.id!r}",
        f"BACKEND = {spec!r}  # as gemmconf's --backend named it",
        f"RUN_SEED = {seed}",
        f"DEVICE = {device!r}",
        f"TF32 = {DTYPES[instance.dtype].tf32}  # TF32 allowed for fp32 GEMMs",
        f"DYNAMIC = {instance.compile.dynamic!r}  # torch.compile's dynamic= for compile mode "
        f"{instance.compile.mode}",
        f"COMPILE_BUDGET = {compile_budget(instance)}  # compiles allowed over the shape sets",
        *_compiled_autograd_constants(instance),
        f"DYNAMO_CONFIG = {dict(instance.dynamo_config)!r}  # the scenario's torch._dynamo.config "
        "options (torch.compile-based backends)",
        "# per shape set: every input's shape, K (the floor grows with it), whether it is past",
        "# the size where the fresh-values call is compared bit for bit only",
        f"DIMS = {[instance.dims(i) for i in range(len(instance.shape_sets))]!r}",
        f"SHAPES = {draws.shapes!r}",
        f"KS = {draws.ks!r}",
        f"LARGE = {draws.large!r}",
    ]
    if any(g is not None for g in draws.group_sizes):
        lines.append(f"GROUP_SIZES = {draws.group_sizes!r}  # a grouped op's group sizes")
    if any(r is not None for r in draws.result_shapes):
        lines.append(f"RESULT_SHAPES = {draws.result_shapes!r}")
    names = instance.input_names
    targets = [(names.index(n), n) for n in instance.spec.writes if n in names]
    lines.append(f"TARGETS = {targets!r}  # out= targets (argument, name): NaN until written")
    lines += [
        f"RAISES = {instance.checks.raises!r}  # the exception eager raises (error scenarios)",
        f"RAISES_MATCH = {instance.checks.raises_match!r}",
        f"EXACT = {instance.checks.numeric == 'exact' or instance.spec.exact}  # results must "
        "equal eager's",
        f"NUMERIC = {instance.checks.numeric != 'none'}  # the values are judged",
        f"ROW_MAJOR = {strides is True}  # the op's contract fixes a row-major result",
        "# the tolerance per output dtype: (max_ratio, floor_eps, trust eager's error, "
        "input_rounding)",
        "POLICY = {",
        *(f"    {name!r}: {row!r}," for name, row in policies.items()),
        "}",
        "DRAW_ELEMENTS, MAX_DRAWS = 64, 64  # a judgment covers at least 64 output elements",
    ]
    return "\n".join(lines)


def _compiled_autograd_constants(instance: ScenarioInstance) -> list[str]:
    """The scenario's `compiled_autograd:`: whether the backward runs under compiled autograd,
    and the captures and compiles of captured graphs it expects (None: not checked)."""
    spec = instance.compiled_autograd
    if spec is None:
        return ["COMPILED_AUTOGRAD = False  # the backward runs as torch.compile makes it"]
    return [
        "COMPILED_AUTOGRAD = True  # the backward under compiled autograd (torch.compile only)",
        f"AUTOGRAD_CAPTURES = {spec.captures!r}  # backward graphs compiled autograd captures",
        f"AUTOGRAD_COMPILES = {spec.compiles!r}  # compiles of captured graphs for the backend",
    ]


def _programs(instance: ScenarioInstance) -> str:
    """The program, its fp64 reference and the rounding bounds the oracle allows, as source."""
    reference = _reference_text(instance)
    rounding = program.make_rounding_magnitude(instance)
    if not DTYPES[instance.dtype].tf32 or instance.values == "tf32_exact":
        rounding = None  # what rounding to TF32 costs: only where the inputs are so rounded
    intermediate = program.make_intermediate_rounding(instance)
    blocks = [
        "# The program under test, as gemmconf runs it eagerly and hands it to the backend.\n"
        + _renamed(program.program_source(instance), "program"),
        "# The same computation in fp64, on the inputs upcast (fp8 ones dequantized).\n"
        + _renamed(reference, "reference")
        if reference is not None
        else "reference = None  # an exact op: judged bit for bit against eager",
        "# |alpha| * (|A| @ |B|): what rounding the inputs to TF32 may cost each element.\n"
        + _renamed(rounding.gemmconf_source, "rounding")
        if rounding is not None
        else "rounding = None  # no input is rounded to TF32",
        "# What rounding the program's intermediate results (an unfused bias add, an\n"
        "# epilogue) may cost each element: allowed beside the output's ulp.\n"
        + _renamed(intermediate.gemmconf_source, "intermediate")
        if intermediate is not None
        else "intermediate = None  # no intermediate result is rounded",
    ]
    return "\n\n\n".join(block.rstrip("\n") for block in blocks)


def _renamed(source: str, name: str) -> str:
    return re.sub(r"^def \w+\(", f"def {name}(", source, count=1).rstrip() + "\n"


def _operand_lines(instance: ScenarioInstance, operand: Any, kind: str) -> list[str]:
    """The lines of `draw` that make one operand, its fp64 reference and its scale."""
    spec = instance.spec
    name = operand.name
    dtype = _torch(torch_dtype(operand.dtype))
    dims = ", ".join(map(str, operand.shape))
    what = f"    # {name}: [{dims}] {operand.dtype}, layout {operand.layout}"
    if operand.layout == "alias":
        return [
            f"{what} (the same tensor as a)",
            f'    args["{name}"] = args["a"]',
            f'    ref["{name}"] = ref["a"]',
        ]
    expand = operand.layout.startswith("expand")
    shape = f'shapes["{name}"]'
    drawn_shape = f"[1, *{shape}[1:]]" if expand else shape
    if name in spec.writes:
        return [
            f"{what} (an out= target: NaN until the op writes it)",
            f"    value = torch.full({drawn_shape}, math.nan, dtype={dtype})",
            f'    ref["{name}"] = torch.zeros({drawn_shape}, dtype=torch.float64)',
            f'    args["{name}"] = lay_out(value, "{operand.layout}", {shape})',
        ]
    lines = [
        f"{what}, values {_value_words(operand, kind)}",
        f"    source = {_source_expression(operand, drawn_shape, kind)}",
    ]
    if name == "a" and kind in ("nan_in_a", "inf_in_a"):
        special = "nan" if kind == "nan_in_a" else "inf"
        lines += ["    if source.numel():", f'        source.view(-1)[0] = float("{special}")']
    if is_quantized(operand.dtype):
        recipe = RECIPES[instance.scaling or "tensorwise"]
        block = recipe.block(name)
        lines += [
            f"    # quantized by the {recipe.name} recipe: a scale per "
            f"{_block_words(recipe, block)}, amax / max({operand.dtype})",
            f"    value, scale, dequantized = quantize(source, {block!r}, {dtype}, "
            f"{recipe.per_tensor}, {recipe.scales_column_major})",
            f'    scales["{name}"] = scale',
            f'    ref["{name}"] = dequantized',
        ]
    else:
        lines += [f"    value = source.to({dtype})", f'    ref["{name}"] = value']
    if expand:
        lines.append(f'    ref["{name}"] = ref["{name}"].expand({shape})')
    lines.append(f'    args["{name}"] = lay_out(value, "{operand.layout}", {shape})')
    return lines


def _addend_lines(instance: ScenarioInstance, kind: str) -> list[str]:
    """The lines of `draw` that make the bias and the epilogue's own tensors."""
    body: list[str] = []
    if instance.bias is not None:
        bias_dtype = _torch(torch_dtype(instance.bias_dtype or instance.gemm_dtype))
        name = instance.spec.addend.name
        body += [
            f"    # {name}: the bias {list(instance.bias)}, {_addend_words(kind)}",
            f"    bias = {_addend_expression('shapes[' + repr('bias') + ']', kind)}",
        ]
        if kind == "nan_in_c":
            body += [
                "    if bias.numel():",
                "        bias.view(-1)[:: max(1, bias.numel() // 3)] = float('nan')",
            ]
        body += [
            f"    ref[{name!r}] = bias.to({bias_dtype})",
            f"    args[{name!r}] = ref[{name!r}].to(DEVICE, copy=True)",
        ]
    gemm = _torch(torch_dtype(instance.gemm_dtype))
    for i, step in enumerate(s for s in instance.epilogue if s.kind in TENSOR_EPILOGUES):
        other = f"other{i}"
        if step.kind == "dropout_mask":
            body += [
                f"    # {other}: a dropout mask, kept with probability {1 - step.arg}",
                f"    keep = torch.rand(RESULT_SHAPES[index], generator=gen) >= {step.arg!r}",
                f"    value = keep.to(torch.float32) / (1 - {step.arg!r})",
            ]
        else:
            body += [
                f"    # {other}: a tensor the epilogue adds, {_addend_words(kind)}",
                f"    value = {_addend_expression(f'shapes[{other!r}]', kind)}",
            ]
        body += [
            f"    ref[{other!r}] = value.to({gemm})",
            f"    args[{other!r}] = ref[{other!r}].to(DEVICE, copy=True)",
        ]
    return body


def _draw_function(instance: ScenarioInstance, names: tuple[str, ...]) -> str:
    """`draw(index, draw_index)`: gemmconf.inputs' drawing of this instance, as code."""
    spec = instance.spec
    kind = instance.values
    body = [
        "def draw(index, draw_index=0):",
        '    """Shape set `index`\'s inputs (draw 0: the values gemmconf judged first; further',
        "    draws: fresh values of the same shapes): the program's arguments on DEVICE, and the",
        '    fp64 reference\'s."""',
        "    shapes, k = SHAPES[index], KS[index]",
        "    gen = torch.Generator().manual_seed(item_seed(index, draw_index))",
        "    args, ref, scales = {}, {}, {}",
    ]
    grouped = inputs._group_sizes(instance, instance.dims(0), 0) is not None
    for operand in instance.operands:
        body += _operand_lines(instance, operand, kind)
    body += _addend_lines(instance, kind)
    gemm = _torch(torch_dtype(instance.gemm_dtype))
    for scale in spec.scales:
        if scale.level:
            raise ReproUnsupported(f"no standalone repro for {instance.id}: a second-level scale")
        body += [
            f"    # {scale.name}: {scale.of}'s scale, as the op takes it",
            f"    args[{scale.name!r}] = scales[{scale.of!r}].to(DEVICE, copy=True)",
            f"    ref[{scale.name!r}] = torch.ones((), dtype=torch.float64)  # in {scale.of}'s",
        ]
    if grouped:
        body += [
            "    # offs: where each group ends (the sizes turn by one place on each further draw)",
            "    sizes = GROUP_SIZES[index]",
            "    turn = draw_index % len(sizes) if sizes else 0",
            "    sizes = sizes[turn:] + sizes[:turn]",
            "    offs = torch.tensor(sizes, dtype=torch.int32).cumsum(0, dtype=torch.int32)",
            '    args["offs"], ref["offs"] = offs.to(DEVICE, copy=True), offs',
        ]
    if instance.backward:
        body += [
            "    # grad: the output gradient",
            f'    ref["grad"] = randn(RESULT_SHAPES[index], gen).to({gemm})',
            '    args["grad"] = ref["grad"].to(DEVICE, copy=True)',
        ]
    transposed = [o.name for o in instance.operands if o.layout == "t" and o.name in names]
    body.append(f"    names = {list(names)!r}")
    if transposed:
        body += [
            f"    for name in {transposed!r}:  # held as stored: the program transposes them back",
            "        ref[name] = ref[name].transpose(-2, -1)",
        ]
    body += [
        "    backend_args = [args[n] for n in names]",
        "    reference_args = [ref[n].to(DEVICE) for n in names]",
    ]
    if instance.backward:
        wrt = program.differentiated(instance)
        body += [
            f"    for i, name in enumerate(names):  # the gradients are taken of {', '.join(wrt)}",
            f"        if name in {list(wrt)!r}:",
            "            backend_args[i] = backend_args[i].detach().requires_grad_(True)",
            "            reference_args[i] = reference_args[i].detach().requires_grad_(True)",
        ]
    body.append("    return backend_args, reference_args")
    return "\n".join(body)


def _torch(dtype: torch.dtype) -> str:
    return f"torch.{str(dtype).removeprefix('torch.')}"


def _value_words(operand: Any, kind: str) -> str:
    if operand.dtype == "int8":
        return "integers in [96, 128)" if kind == "near_max" else "integers in [-8, 9)"
    return {
        "integers": "integers in [-4, 5)",
        "tf32_exact": "randn / K^(1/4) rounded to TF32",
        "near_max": "positive, their K-term sums near half the dtype's largest",
    }.get(kind, "randn / K^(1/4)")


def _source_expression(operand: Any, shape: str, kind: str) -> str:
    if operand.dtype == "int8":
        low, high = (96, 128) if kind == "near_max" else (-8, 9)
        return f"randint({low}, {high}, {shape}, gen, torch.int8)"
    if kind == "integers":
        return f"randint(-4, 5, {shape}, gen, torch.int8).to(torch.float32)"
    if kind == "tf32_exact":
        return f"to_tf32(randn({shape}, gen, divisor=max(k, 1) ** 0.25))"
    if kind == "near_max":
        top = torch.finfo(torch_dtype(operand.dtype)).max
        return (
            f"torch.rand({shape}, generator=gen) * 0.5 * math.sqrt(0.5 * {top!r} / max(k, 1)) "
            f"+ 0.5 * math.sqrt(0.5 * {top!r} / max(k, 1))"
        )
    return f"randn({shape}, gen, divisor=max(k, 1) ** 0.25)"


def _addend_words(kind: str) -> str:
    return "integers in [-4, 5)" if kind == "integers" else "randn"


def _addend_expression(shape: str, kind: str) -> str:
    if kind == "integers":
        return f"randint(-4, 5, {shape}, gen, torch.int8).to(torch.float32)"
    return f"randn({shape}, gen)"


def _block_words(recipe: Any, block: tuple[int, int]) -> str:
    if recipe.per_tensor:
        return "tensor"
    rows, cols = ("all" if b == WHOLE else str(b) for b in block)
    return f"block of {rows} row(s) x {cols} column(s)"


def _backend_section(instance: ScenarioInstance, spec: str) -> str:
    name = spec.partition(":")[0]
    backend = resolve(spec)
    lines = [
        "def compile_backend(fn, example_inputs):",
        f'    """The system under test, as gemmconf called it for --backend {spec}."""',
    ]
    compiled_by_torch = True
    if name == "eager":
        lines.append("    return fn  # eager PyTorch: no compiler")
        compiled_by_torch = False
    elif name in ("inductor", "inductor-max-autotune"):
        options = backend.for_instance(instance).inductor_patches()
        extra = f", options={options!r}" if options else ""
        if instance.inductor_config:
            names = ", ".join(option for option, _ in instance.inductor_config)
            lines.append(f"    # the scenario's inductor_config (its seed's config patch): {names}")
        lines.append(f"    return torch.compile(fn, dynamic=DYNAMIC{extra})")
    elif name == "dynamo":
        keywords = "".join(f", {k}={v!r}" for k, v in backend.compile_keywords.items())
        lines.append(
            f"    return torch.compile(fn, backend={backend.compiler!r}, dynamic=DYNAMIC{keywords})"
        )
    elif name == "reference":
        options = backend.options
        fields = (
            ""
            if options is None
            else ", ".join(
                f"{f}={getattr(options, f)!r}"
                for f in options.__dataclass_fields__
                if getattr(options, f) != type(options).__dataclass_fields__[f].default
            )
        )
        lines += [
            "    # gemmconf's reference backend (a torch.compile backend shipped with gemmconf)",
            "    from gemmconf_reference import BackendOptions, ReferenceCompiler",
            "",
            f"    compiler = ReferenceCompiler(BackendOptions({fields}))",
            "    return torch.compile(fn, backend=compiler, dynamic=DYNAMIC)",
        ]
    else:
        module, attr, call = _import_target(spec, backend)
        lines += [
            f"    # the object --backend {spec} names, through gemmconf's Backend protocol:",
            "    # compile(fn, example_inputs, *, dynamic) returns the callable that is run",
            "    try:",
            f"        from {module} import {attr.split('.')[0]}",
            "    except ModuleNotFoundError as error:",
            f"        if error.name != {module.split('.')[0]!r}:",
            "            raise  # a module the backend imports: the backend's failure",
            "        # the backend's own module is not on this Python's path: no verdict",
            "        sys.stderr.write(",
            f'            "cannot import {module}, the module --backend {spec} names "',
            '            f"({error}): not the backend\'s failure; run this file with the folder "',
            '            "that holds it on PYTHONPATH (gemmconf repro printed the command)\\n"',
            "        )",
            "        raise SystemExit(2) from None",
            "",
            f"    backend = {call}",
            "    return backend.compile(fn, example_inputs, dynamic=DYNAMIC)",
        ]
        compiled_by_torch = False
    lines += [
        "",
        "",
        f"COMPILED_BY_TORCH = {compiled_by_torch}  # compiles are counted from dynamo's counters",
    ]
    return "\n".join(lines)


def _import_target(spec: str, backend: Any) -> tuple[str, str, str]:
    """(module, attribute, the expression that makes the backend) for an import path or an
    entry point's target."""
    from importlib import metadata

    from gemmconf.backends import ENTRY_POINT_GROUP

    name, _, option = spec.partition(":")
    entry = next(
        (e for e in metadata.entry_points(group=ENTRY_POINT_GROUP) if e.name == name), None
    )
    if entry is not None:
        module, _, attr = entry.value.partition(":")
        call = f"{attr}({option!r})" if option else f"{attr}()"
        if not option and not isinstance(_attribute(module, attr), type | types.FunctionType):
            call = attr
        return module, attr, call
    module, _, attr = spec.partition(":")
    target = _attribute(module, attr)
    if target is backend or (not isinstance(target, type) and not callable(target)):
        return module, attr, attr
    if not isinstance(target, type) and hasattr(target, "compile"):
        return module, attr, attr
    return module, attr, f"{attr}()"


def _attribute(module: str, attr: str) -> Any:
    import importlib

    found: Any = importlib.import_module(module)
    for part in attr.split("."):
        found = getattr(found, part)
    return found


def _shared_code() -> str:
    """gemmconf.repro_template's code, from `def item_seed(` on."""
    text = inspect.getsource(repro_template)
    return text[text.index("\ndef item_seed(") + 1 :]


def _mark_dynamic(instance: ScenarioInstance, names: tuple[str, ...]) -> str:
    lines = ["def mark_dynamic(args):", '    """The dims the scenario marks dynamic."""']
    marks = []
    for operand in instance.operands:
        if operand.name not in names:
            continue
        shape = [str(e) for e in operand.shape]
        if operand.layout == "t":
            shape[-2], shape[-1] = shape[-1], shape[-2]
        for index, expr in enumerate(shape):
            if expr in instance.compile.dims:
                marks.append((names.index(operand.name), index))
    lines += [f"    torch._dynamo.mark_dynamic(args[{i}], {d})" for i, d in marks] or ["    pass"]
    return "\n".join(lines)


def _verify(source: str, instance: ScenarioInstance, seed: int, device: str) -> None:
    """The generated draw of every shape set (and shape set 0's second draw) equals gemmconf's
    own, bit for bit, strides and offsets included; ReproUnsupported naming the first input that
    does not."""
    namespace: dict[str, Any] = {"__name__": "gemmconf_repro_check"}
    exec(compile(source, f"<repro of {instance.id}>", "exec"), namespace)
    namespace["DEVICE"] = device
    names = instance.input_names
    checks = [(i, 0) for i in range(len(instance.shape_sets))] + [(0, 1)]
    for index, draw in checks:
        built = inputs.build(instance, index, seed, device, draw=draw)
        generated, reference = namespace["draw"](index, draw)
        for name, want, got in zip(names, built.tensors, generated, strict=True):
            why = _difference(want, got)
            if why is not None:
                raise ReproUnsupported(
                    f"no standalone repro for {instance.id}: the generated code draws input "
                    f"{name} of shape set {index} (draw {draw}) otherwise than gemmconf ({why})"
                )
        if built.reference is not None:
            for name, want, got in zip(names, built.reference, reference, strict=True):
                why = _difference(
                    inputs.exact(want).to(torch.float64),
                    got.to("cpu", torch.float64),
                    strides=False,
                )
                if why is not None:
                    raise ReproUnsupported(
                        f"no standalone repro for {instance.id}: the generated fp64 input {name} "
                        f"of shape set {index} differs from gemmconf's ({why})"
                    )


def _difference(want: Any, got: Any, *, strides: bool = True) -> str | None:
    if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor):
        return None if type(want) is type(got) else "not a tensor"
    if want.dtype != got.dtype or want.shape != got.shape:
        return f"{got.dtype} {tuple(got.shape)}, gemmconf's {want.dtype} {tuple(want.shape)}"
    if strides and (want.stride() != got.stride() or want.storage_offset() != got.storage_offset()):
        return (
            f"strides {got.stride()} offset {got.storage_offset()}, gemmconf's "
            f"{want.stride()} offset {want.storage_offset()}"
        )
    a, b = want.detach().cpu(), got.detach().cpu()
    if a.dtype.is_floating_point and a.element_size() == 1:  # fp8: compare the bytes
        a, b = a.view(torch.uint8), b.view(torch.uint8)
    same = (a == b) | (a.isnan() & b.isnan()) if a.is_floating_point() else a == b
    return None if bool(same.all()) else "other values"
