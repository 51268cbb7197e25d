"""The field schema of a suite file and the validation of one scenario's fields into a
`ScenarioInstance`. Every error names ``file:line``, the field and, for an unknown key, the
closest known one. suites/README.md documents the same schema; tests/test_suite_readme.py checks
its tables against the field tuples here."""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gemmconf.capability import Requirements
from gemmconf.gemm import dtypes
from gemmconf.gemm.ops import OPS as OP_SPECS
from gemmconf.gemm.ops import OpSpec, jagged_dim, scaled_mm_v2_scale_layout
from gemmconf.gemm.scaling import RECIPES, SWIZZLES
from gemmconf.markers import MARKERS
from gemmconf.scenario import dynamo_options, inductor_options, model
from gemmconf.scenario.axes import as_ids
from gemmconf.scenario.expressions import eval_dim, expr_names
from gemmconf.scenario.inductor_options import OptionProblem
from gemmconf.scenario.patterns import PatternError, compile_message_pattern
from gemmconf.scenario.source import Node, Where, line_of

SCENARIO_FIELDS = (
    "name",
    "op",
    "doc",
    "seed",
    "axes",
    "exclude",
    "dtype",
    "operands",
    "layout",
    "shape",
    "shapes",
    "bias",
    "bias_dtype",
    "alpha",
    "beta",
    "epilogue",
    "scaling",
    "use_fast_accum",
    "out_dtype",
    "swizzle",
    "group_sizes",
    "backward",
    "compiled_autograd",
    "compile",
    "inductor_config",
    "dynamo_config",
    "values",
    "checks",
    "requires",
    "markers",
)
AXIS_FIELDS = tuple(f for f in SCENARIO_FIELDS if f not in ("name", "axes", "exclude", "doc"))
FILE_FIELDS = ("suite", "doc", "defaults", "scenarios")
CHECK_FIELDS = (
    "numeric",
    "raises",
    "max_ratio",
    "filecheck",
    "deterministic",
    "batch_invariant",
)
RAISES_FIELDS = ("type", "match", "or_correct")
FILECHECK_FIELDS = ("artifact", "check", "target", "backends", "when")
REQUIRES_FIELDS = ("device", "min_class", "max_class", "features", "memory_gb", "target")
COMPILE_FIELDS = ("mode", "dims", "max_compiles")
COMPILED_AUTOGRAD_FIELDS = ("captures", "compiles")
OPERAND_FIELDS = ("shape", "dtype", "layout")
KNOWN_EXCEPTIONS = ("RuntimeError", "ValueError", "TypeError", "IndexError", "AssertionError")
HARDWARE = ("sm80", "sm89", "sm90", "sm100", "sm120")
FEATURES = ("fp8", "tma")
# fullmatch: `$` also matched before a final newline, and a name starting with a digit made a
# program no Python parses (names become function names in the generated program)
NAME_RE = re.compile(r"[a-z][a-z0-9_.]*")
# the most elements one instance may allocate (--max-elements); the suite's largest holds 2.2e9
MAX_ELEMENTS = 1 << 32


@dataclass
class Raw:
    """A scenario's fields after axis values are merged in, with where each came from."""

    fields: dict[str, Any]
    nodes: dict[str, Any]  # field -> the mapping node that held it (for line numbers)


def reject_unknown(node: Mapping, allowed: Sequence[str], where: Where, what: str) -> None:
    for key in node:
        if key not in allowed:
            raise where.error(
                node,
                key,
                f"unknown key in {what}{_did_you_mean(key, allowed)}; known: {', '.join(allowed)}",
            )


def closest(word: str, options: Sequence[str]) -> str | None:
    import difflib

    match = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return match[0] if match else None


def _did_you_mean(word: Any, options: Sequence[str]) -> str:
    """` (did you mean 'x'?)` where one of `options` is close to `word`, else nothing."""
    close = closest(str(word), options)
    return f" (did you mean {close!r}?)" if close else ""


def _known_keys(
    value: Mapping, known: Sequence[str], fail, field: str, prefix: str = "", suggest: bool = False
) -> None:
    """`fail(field, ...)` at the first key of `value` not in `known` (naming the closest known
    one where `suggest`)."""
    for key in value:
        if key not in known:
            hint = _did_you_mean(key, known) if suggest else ""
            raise fail(field, f"{prefix}unknown key {key!r}{hint}; known: {', '.join(known)}")


@dataclass(frozen=True)
class _Fields:
    """One instance's fields as `build` reads them: an error names the file:line of the field
    (of the scenario where the field is absent) and the instance."""

    raw: Raw
    scenario: Node
    where: Where
    instance_id: str

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.fields.get(key, default)

    def fail(self, key: str, message: str) -> model.ScenarioError:
        node = self.raw.nodes.get(key, self.scenario)
        return model.ScenarioError(
            self.where.at(node, key if key in node else None),
            key,
            f"{message} (in {self.instance_id})",
        )

    def pick(self, key: str, options: Sequence[str], default: Any = None) -> Any:
        """The field's value, one of `options` (or None where absent and no default)."""
        value = self.get(key, default)
        if value is not None and value not in options:
            raise self.fail(
                key, f"{value!r} is not one of {', '.join(options)}{_did_you_mean(value, options)}"
            )
        return value

    def number(self, key: str, default: float) -> float:
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"expected a number, got {value!r}")
        return float(value)

    def flag(self, key: str) -> bool:
        value = self.get(key, False)
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {value!r}")
        return value

    def text(self, key: str) -> str | None:
        value = self.get(key)
        if key in self.raw.fields and not isinstance(value, str):
            raise self.fail(key, f"expected text, got {value!r}")
        return value


def build(
    suite: str,
    instance_id: str,
    axes: tuple[tuple[str, str], ...],
    raw: Raw,
    scenario: Node,
    where: Where,
    max_elements: int = MAX_ELEMENTS,
) -> model.ScenarioInstance:
    """One combination of a scenario's axes, validated into an instance: the fields are read in
    a fixed order, so a scenario with several faults is always told the same first one."""
    fields = _Fields(raw, scenario, where, instance_id)
    f, fail = raw.fields, fields.fail
    op = fields.pick("op", model.OPS)
    if op is None:
        raise fail("op", f"every scenario needs an op ({', '.join(model.OPS)})")
    spec = OP_SPECS[op]
    dtype = fields.pick("dtype", model.INPUT_DTYPES, spec.default_dtype)
    shape_sets = _shape_sets(f, fail)
    operands = _operands(spec, dtype, f, fail)
    bias = _bias(f.get("bias"), spec, fail)
    alpha, beta = _alpha_beta(spec, fields)
    scaling, use_fast_accum, out_dtype = _scaling(spec, operands, fields)
    swizzle = _swizzle(spec, scaling, fields)
    backward = fields.flag("backward")
    if backward and not spec.differentiable:
        raise fail("backward", _only(model.DIFFERENTIABLE_OPS, "backward: true"))
    compiled_autograd = _compiled_autograd(f.get("compiled_autograd", False), backward, fail)
    group_sizes = _group_sizes(f.get("group_sizes"), spec, fail)
    bias_dtype = fields.pick("bias_dtype", model.INPUT_DTYPES)
    epilogue = _epilogue(f.get("epilogue", []), fail)
    compile_spec = _compile(f.get("compile", "static"), shape_sets, fail)
    inductor_config = _config_field(fields, "inductor_config", inductor_options.check_config)
    dynamo_config = _config_field(fields, "dynamo_config", dynamo_options.check_config)
    dims_used = _dims_used(operands, bias, group_sizes)
    _check_dynamic_dims(compile_spec, dims_used, fail)
    values = _values(fields, bias, dtype)
    checks = _scenario_checks(fields, spec, operands, backward)
    requires = _requires(f.get("requires", {}), fail)
    markers = _markers(fields)
    doc, seed = fields.text("doc"), fields.text("seed")
    _check_shape_sets(
        spec, operands, bias, group_sizes, scaling, checks, shape_sets, dims_used, fail
    )
    _check_sizes(spec, operands, bias, epilogue, shape_sets, max_elements, fail)

    instance = model.ScenarioInstance(
        suite=suite,
        name=scenario["name"],
        id=instance_id,
        axes=axes,
        source=where.at(scenario),
        op=op,
        dtype=dtype,
        operands=operands,
        shape_sets=shape_sets,
        bias=bias,
        bias_dtype=bias_dtype,
        alpha=alpha,
        beta=beta,
        epilogue=epilogue,
        scaling=scaling,
        use_fast_accum=use_fast_accum,
        out_dtype=out_dtype,
        compile=compile_spec,
        values=values,
        checks=checks,
        requires=requires,
        markers=markers,
        seed_test=seed,
        doc=doc,
        swizzle=swizzle,
        group_sizes=group_sizes,
        backward=backward,
        compiled_autograd=compiled_autograd,
        inductor_config=inductor_config,
        dynamo_config=dynamo_config,
    )
    return replace(instance, requires=model.implied_requirements(instance))


def _check_dynamic_dims(compile_spec: model.CompileSpec, dims_used: set, fail: Any) -> None:
    for dim in compile_spec.dims:
        if dim not in dims_used:
            raise fail("compile", f"mark_dynamic names dim {dim!r}, which no operand uses")


def _dims_used(
    operands: Sequence[model.Operand], bias: tuple | None, group_sizes: tuple | None
) -> set:
    """The dims the operands', bias's and group sizes' expressions name (each already parsed:
    naming them raises nothing)."""
    exprs = [e for o in operands for e in o.shape] + list(bias or ()) + list(group_sizes or ())
    return set().union(*(expr_names(e) for e in exprs))


def _alpha_beta(spec: OpSpec, fields: _Fields) -> tuple[float, float]:
    for key in ("alpha", "beta"):
        if key in fields.raw.fields and spec.name not in model.ALPHA_BETA_OPS:
            raise fields.fail(
                key, f"{spec.name} has no {key} (ops with one: {', '.join(model.ALPHA_BETA_OPS)})"
            )
    return fields.number("alpha", 1.0), fields.number("beta", 1.0)


def _scaling(
    spec: OpSpec, operands: Sequence[model.Operand], fields: _Fields
) -> tuple[str | None, bool, str | None]:
    """The scaling recipe, use_fast_accum and the out dtype, each one the op takes, and the
    recipe one the operands' dtypes suit."""
    op, fail = spec.name, fields.fail
    scaling = fields.pick("scaling", model.SCALINGS)
    if spec.scaled and scaling is None:
        raise fail("scaling", f"{op} needs a scaling recipe ({', '.join(model.SCALINGS)})")
    if not spec.scaled and scaling is not None:
        raise fail("scaling", _only(model.SCALED_OPS, "a scaling recipe"))
    use_fast_accum = fields.flag("use_fast_accum")
    if use_fast_accum and not spec.fast_accum:
        raise fail("use_fast_accum", _only(model.FAST_ACCUM_OPS, "use_fast_accum"))
    out_dtype = fields.pick("out_dtype", model.OUT_DTYPES)
    if out_dtype is not None and spec.out_dtype is None and not spec.out_dtype_optional:
        raise fail(
            "out_dtype", _only(model.OUT_DTYPE_OPS, "out_dtype (use a cast epilogue elsewhere)")
        )
    if out_dtype is None:
        out_dtype = spec.out_dtype
    if scaling is not None:
        _check_recipe(op, scaling, operands, fail)
    return scaling, use_fast_accum, out_dtype


def _check_recipe(op: str, scaling: str, operands: Sequence[model.Operand], fail) -> None:
    recipe = RECIPES[scaling]
    if op not in recipe.ops:
        takes = ", ".join(name for name, r in RECIPES.items() if op in r.ops)
        raise fail("scaling", f"{op} does not take {scaling} scaling (takes: {takes})")
    wanted = recipe.element
    for operand in operands:
        if wanted is not None and operand.dtype != wanted:
            raise fail("dtype", f"{scaling} scaling makes {wanted} operands, not {operand.dtype}")
        if wanted is None and dtypes.DTYPES[operand.dtype].kind != "fp8":
            raise fail("dtype", f"{scaling} scaling quantizes to fp8, not {operand.dtype}")


def _swizzle(spec: OpSpec, scaling: str | None, fields: _Fields) -> str | None:
    """F.scaled_mm's scale layout: the field, else the recipe's."""
    swizzle = fields.pick("swizzle", SWIZZLES)
    if swizzle is not None and spec.scale_layout is not scaled_mm_v2_scale_layout:
        raise fields.fail("swizzle", "only scaled_mm_v2 (F.scaled_mm) takes swizzle")
    if swizzle is None and spec.name == "scaled_mm_v2" and scaling is not None:
        swizzle = RECIPES[scaling].swizzle
    return swizzle


def _values(fields: _Fields, bias: tuple | None, dtype: str) -> str:
    values = fields.pick("values", model.VALUE_KINDS, "default")
    if values == "nan_in_c" and bias is None:
        raise fields.fail("values", "nan_in_c needs a bias/C operand")
    if values == "tf32_exact" and dtype != "tf32":
        raise fields.fail("values", f"tf32_exact is for dtype tf32, not {dtype}")
    return values


def _scenario_checks(
    fields: _Fields, spec: OpSpec, operands: Sequence[model.Operand], backward: bool
) -> model.Checks:
    """The checks field, and the checks the op and the operands allow."""
    checks = _checks(fields.get("checks", {}), fields.where, fields.fail)
    if checks.raises_or_correct and (spec.exact or backward):
        raise fields.fail(
            "checks",
            "raises.or_correct judges a returned result against fp64, which "
            f"{'an integer op' if spec.exact else 'a backward scenario'} does not have",
        )
    if checks.batch_invariant and "M" not in [str(e) for e in operands[0].shape]:
        raise fields.fail("checks", "batch_invariant slices rows of a: a needs a dim that is M")
    return checks


def _markers(fields: _Fields) -> tuple[str, ...]:
    markers = fields.get("markers", [])
    if not isinstance(markers, list) or not all(isinstance(m, str) for m in markers):
        raise fields.fail("markers", f"expected a list of marker names, got {markers!r}")
    for marker in markers:
        if marker not in MARKERS:
            raise fields.fail("markers", f"unknown marker {marker!r}; known: {', '.join(MARKERS)}")
    return tuple(markers)


def _check_shape_sets(
    spec: OpSpec,
    operands,
    bias,
    group_sizes,
    scaling,
    checks: model.Checks,
    shape_sets,
    dims_used,
    fail,
) -> None:
    """Each shape set against the scenario: it sets every dim used; a scenario that may return a
    result must describe one the fp64 reference can compute; a grouped op's groups must fit."""
    for index, shape_set in enumerate(shape_sets):
        known = dict(shape_set)
        missing = sorted(dims_used - set(known))
        if missing:
            raise fail(
                "shape" if len(shape_sets) == 1 else "shapes",
                f"shape set {index} does not set {', '.join(missing)}",
            )
        computable = checks.raises is None or checks.raises_or_correct
        if computable:
            _check_consistent(spec, operands, bias, known, scaling, fail, checks.raises_or_correct)
        if spec.grouped:
            _check_groups(operands, group_sizes, known, fail, strict=computable)


def _bias(bias: Any, spec: OpSpec, fail) -> tuple | None:
    """The bias shape (expressions), where the op takes or needs one."""
    op = spec.name
    if bias is not None:
        if op not in model.BIAS_OPS:
            raise fail("bias", f"{op} takes no bias (ops with one: {', '.join(model.BIAS_OPS)})")
        return _expressions(
            bias, fail, "bias", f"expected a shape such as [M, N], [N] or [1, N], got {bias!r}"
        )
    if spec.addend is not None and not spec.addend.optional:
        raise fail(
            "bias", f"{op} needs a bias shape (its input {spec.addend.name.upper()}), e.g. [M, N]"
        )
    return None


def _group_sizes(value: Any, spec: OpSpec, fail) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not spec.grouped:
        raise fail("group_sizes", _only(model.GROUPED_OPS, "group_sizes"))
    return _expressions(
        value, fail, "group_sizes", f"expected a list of sizes or expressions, got {value!r}"
    )


def _expressions(value: Any, fail, field: str, not_a_list: str, prefix: str = "") -> tuple:
    """A list of sizes or dim expressions (`M`, `K // 2`, 16), each parsed once; `fail(field,
    prefix + why)` for anything else."""
    if not isinstance(value, list) or not all(
        isinstance(e, str | int) and not isinstance(e, bool) for e in value
    ):
        raise fail(field, prefix + not_a_list)
    for expr in value:
        try:
            expr_names(expr)
        except SyntaxError:
            raise fail(field, f"{prefix}bad expression {expr!r}") from None
        except ValueError as exc:  # past the length limit
            raise fail(field, f"{prefix}{exc}") from None
    return tuple(value)


def group_extents(
    instance_operands: Sequence[model.Operand],
    group_sizes: Sequence[str | int] | None,
    dims: Mapping,
) -> list[int] | None:
    """Each group's size along the jagged dim for one shape set (None for 3-D x 3-D): the
    scenario's `group_sizes`, else the jagged dim split as evenly as it goes over B groups."""
    ranks = tuple(len(o.shape) for o in instance_operands[:2])
    jagged = jagged_dim(*ranks)
    if jagged is None:
        return None
    if group_sizes is not None:
        return [eval_dim(e, dims) for e in group_sizes]
    total, groups = dims[jagged], dims["B"]
    return [total // groups + (1 if g < total % groups else 0) for g in range(groups)]


def _check_groups(operands, group_sizes, dims, fail, *, strict: bool) -> None:
    """Group sizes: one per group, none negative, summing to the jagged dim (eager reads past
    offs[-1] nothing: rows or columns there are never written, so the suite never leaves any)."""
    inputs = [o for o in operands if o.name in ("a", "b")]
    try:
        sizes = group_extents(inputs, group_sizes, dims)
    except ValueError as exc:
        raise fail("group_sizes", str(exc)) from None
    if sizes is None:
        if group_sizes is not None:
            raise fail("group_sizes", "3-D a and b have no jagged dim to cut into groups")
        return
    if "B" not in dims:
        raise fail("shape", "a grouped op needs B, the number of groups")
    jagged = jagged_dim(*(len(o.shape) for o in inputs))
    if strict and (
        len(sizes) != dims["B"] or any(x < 0 for x in sizes) or sum(sizes) != dims[jagged]
    ):
        raise fail(
            "group_sizes",
            f"{dims['B']} groups must split {jagged} = {dims[jagged]}, got sizes {sizes}",
        )


def _shape_sets(f: Mapping, fail) -> tuple[tuple[tuple[str, int], ...], ...]:
    if "shape" in f and "shapes" in f:
        raise fail("shapes", "give either 'shape' (one shape set) or 'shapes' (a list), not both")
    if "shapes" in f:
        raw_sets = f["shapes"]
        key = "shapes"
        if not isinstance(raw_sets, list) or not raw_sets:
            raise fail(key, "expected a non-empty list of {M:, N:, K:, B:} mappings")
    elif "shape" in f:
        raw_sets, key = [f["shape"]], "shape"
    else:
        raise fail("shape", "every scenario needs a shape, e.g. {M: 64, N: 64, K: 64}")
    sets = []
    for raw in raw_sets:
        if not isinstance(raw, Mapping):
            raise fail(key, f"expected a mapping of dims ({', '.join(model.DIMS)}), got {raw!r}")
        for dim, size in raw.items():
            if dim not in model.DIMS:
                raise fail(key, f"unknown dim {dim!r}; dims are {', '.join(model.DIMS)}")
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise fail(key, f"{dim} must be a size >= 0, got {size!r}")
        sets.append(tuple((d, raw[d]) for d in model.DIMS if d in raw))
    return tuple(sets)


def _operands(op: OpSpec, dtype: str, f: Mapping, fail) -> tuple[model.Operand, ...]:
    overrides = f.get("operands", {})
    if not isinstance(overrides, Mapping):
        raise fail("operands", "expected a mapping of operand name to {shape, dtype, layout}")
    names = [o.name for o in op.laid_out]
    for name, spec in overrides.items():
        if name not in names:
            raise fail("operands", f"{op.name} has operands {', '.join(names)}; not {name!r}")
        if not isinstance(spec, Mapping):
            raise fail("operands", f"operand {name!r}: expected a mapping")
        _known_keys(spec, OPERAND_FIELDS, fail, "operands", prefix=f"operand {name!r}: ")
    layouts = _layouts(f.get("layout", "row"), names, fail)
    batched = "B" in (f.get("shape") or {}) or any(
        "B" in s for s in (f.get("shapes") or []) if isinstance(s, Mapping)
    )
    operands = []
    for operand in op.laid_out:
        name = operand.name
        spec = overrides.get(name, {})
        shape = operand.shape
        if operand.batch_prefix and batched:
            shape = ("B", *operand.shape)  # a batched activation against a 2-D weight
        if "shape" in spec:
            shape = _expressions(
                spec["shape"],
                fail,
                "operands",
                "shape must be a list of expressions",
                prefix=f"operand {name!r}: ",
            )
        operand_dtype = spec.get("dtype", dtype)
        if operand_dtype not in model.INPUT_DTYPES:
            raise fail(
                "operands",
                f"operand {name!r}: dtype {operand_dtype!r} is not one of "
                f"{', '.join(model.INPUT_DTYPES)}",
            )
        layout = spec.get("layout", layouts[name])
        if _base_layout(layout) not in model.LAYOUTS:
            raise fail(
                "operands",
                f"operand {name!r}: layout {layout!r} is not one of {', '.join(model.LAYOUTS)}",
            )
        if layout.startswith("expand") and len(shape) < 3:
            raise fail(
                "layout",
                f"operand {name!r} is {len(shape)}-D; 'expand' (stride-0 batch) needs a batch dim",
            )
        operands.append(model.Operand(name, tuple(shape), operand_dtype, layout))
    if any(o.layout == "alias" for o in operands) and operands[1].layout != "alias":
        raise fail("layout", "'alias' passes a's tensor as b too: give it to operand 'b'")
    return tuple(operands)


def _base_layout(layout: Any) -> Any:
    """ "expand+X" (a stride-0 batch of an X-laid-out matrix) is checked as X."""
    if isinstance(layout, str) and layout.startswith("expand+"):
        return layout.removeprefix("expand+")
    return layout


def _layouts(value: Any, names: list[str], fail) -> dict[str, str]:
    if isinstance(value, str) and len(value) == 2 and set(value) <= {"n", "t"}:
        return {n: ("t" if c == "t" else "row") for n, c in zip(names, value, strict=True)}
    if isinstance(value, str):
        if value not in model.LAYOUTS:
            raise fail(
                "layout",
                f"{value!r} is not a layout ({', '.join(model.LAYOUTS)}) nor a "
                "two-letter n/t code such as 'nt'",
            )
        if value == "alias":
            return {names[0]: "row", names[1]: "alias"}
        return dict.fromkeys(names, value)
    if isinstance(value, Mapping):
        layouts = dict.fromkeys(names, "row")
        for name, layout in value.items():
            if name not in names:
                raise fail("layout", f"no operand {name!r}; operands are {', '.join(names)}")
            if _base_layout(layout) not in model.LAYOUTS:
                raise fail("layout", f"{layout!r} is not a layout ({', '.join(model.LAYOUTS)})")
            layouts[name] = layout
        return layouts
    raise fail("layout", f"expected a layout name, an n/t code or a mapping, got {value!r}")


def _epilogue(steps: Any, fail) -> tuple[model.Epilogue, ...]:
    if not isinstance(steps, list):
        raise fail("epilogue", f"expected a list of steps, got {steps!r}")
    chain = []
    for step in steps:
        if isinstance(step, str):
            if step not in model.UNARY_EPILOGUES:
                known = ", ".join(model.UNARY_EPILOGUES + model.PARAM_EPILOGUES)
                raise fail("epilogue", f"unknown step {step!r}; steps: {known}")
            chain.append(model.Epilogue(step))
            continue
        if not isinstance(step, Mapping) or len(step) != 1:
            raise fail("epilogue", f"a step is a name or a one-key mapping, got {step!r}")
        ((kind, arg),) = step.items()
        if kind not in model.PARAM_EPILOGUES:
            known = ", ".join(model.PARAM_EPILOGUES)
            raise fail("epilogue", f"unknown step {kind!r}; steps with an argument: {known}")
        if kind == "clamp" and not (
            isinstance(arg, list)
            and len(arg) == 2
            and arg != [None, None]
            and all(a is None or _is_number(a) for a in arg)
        ):
            raise fail("epilogue", f"clamp takes [min, max], numbers or null, got {arg!r}")
        if kind in ("mul", "add") and not _is_number(arg):
            raise fail("epilogue", f"{kind} takes a number, got {arg!r}")
        if kind == "cast" and arg not in ("fp32", "fp16", "bf16"):
            raise fail("epilogue", f"cast takes fp32, fp16 or bf16, got {arg!r}")
        if kind == "add_tensor":
            message = f"add_tensor takes the other tensor's shape, got {arg!r}"
            arg = list(_expressions(arg, fail, "epilogue", message)) if arg else None
            if not arg:
                raise fail("epilogue", message)
        if kind == "dropout_mask" and (
            isinstance(arg, bool) or not isinstance(arg, int | float) or not 0 <= arg < 1
        ):
            raise fail("epilogue", f"dropout_mask takes a drop probability in [0, 1), got {arg!r}")
        chain.append(model.Epilogue(kind, tuple(arg) if isinstance(arg, list) else arg))
    return tuple(chain)


def _config_field(
    fields: _Fields, name: str, check: Callable[[Any], tuple[tuple[str, Any], ...]]
) -> tuple[tuple[str, Any], ...]:
    """A config patch the scenario's seed compiled under, `inductor_config` or `dynamo_config`
    (gemmconf.scenario.inductor_options, .dynamo_options); an error names the line of the entry
    at fault."""
    if name not in fields.raw.fields:
        return ()
    value = fields.get(name)
    try:
        return check(value)
    except OptionProblem as exc:
        if exc.option is None or not isinstance(value, Node):
            raise fields.fail(name, str(exc)) from None
        where = fields.where.at(value, exc.option)  # the entry's own line
        raise model.ScenarioError(where, name, f"{exc} (in {fields.instance_id})") from None


def _compile(value: Any, shape_sets, fail) -> model.CompileSpec:
    if isinstance(value, str):
        value = {"mode": value}
    if not isinstance(value, Mapping):
        raise fail("compile", f"expected a mode ({', '.join(model.COMPILE_MODES)}) or a mapping")
    _known_keys(value, COMPILE_FIELDS, fail, "compile")
    mode = value.get("mode", "static")
    if mode not in model.COMPILE_MODES:
        raise fail("compile", f"mode {mode!r} is not one of {', '.join(model.COMPILE_MODES)}")
    dims = value.get("dims", [])
    if not isinstance(dims, list) or any(d not in model.DIMS for d in dims):
        raise fail("compile", f"dims must be a list of {', '.join(model.DIMS)}, got {dims!r}")
    if mode == "mark_dynamic" and not dims:
        raise fail("compile", "mark_dynamic needs dims, e.g. dims: [M]")
    if mode != "mark_dynamic" and dims:
        raise fail("compile", "dims only apply to mode mark_dynamic")
    max_compiles = value.get("max_compiles")
    if max_compiles is not None and (
        isinstance(max_compiles, bool) or not isinstance(max_compiles, int) or max_compiles < 1
    ):
        raise fail("compile", f"max_compiles must be an integer >= 1, got {max_compiles!r}")
    if mode != "static" and len(shape_sets) < 2:
        raise fail("compile", f"mode {mode} needs 'shapes' with at least 2 shape sets")
    return model.CompileSpec(mode, tuple(dims), max_compiles)


def _compiled_autograd(value: Any, backward: bool, fail) -> model.CompiledAutograd | None:
    """`compiled_autograd: true`, or a mapping of the counts the item must see."""
    if value is False:
        return None
    if value is True:
        value = {}
    if not isinstance(value, Mapping):
        raise fail(
            "compiled_autograd",
            f"expected true, false or a mapping ({', '.join(COMPILED_AUTOGRAD_FIELDS)}), "
            f"got {value!r}",
        )
    if not backward:
        raise fail("compiled_autograd", "compiled autograd runs a backward: needs backward: true")
    _known_keys(value, COMPILED_AUTOGRAD_FIELDS, fail, "compiled_autograd", suggest=True)
    counts = {}
    for key in COMPILED_AUTOGRAD_FIELDS:
        count = value.get(key)
        whole = isinstance(count, int) and not isinstance(count, bool)
        if count is not None and not (whole and count >= 0):
            raise fail("compiled_autograd", f"{key} must be an integer >= 0, got {count!r}")
        counts[key] = count
    return model.CompiledAutograd(**counts)


def _checks(value: Any, where: Where, fail) -> model.Checks:
    if not isinstance(value, Mapping):
        raise fail("checks", f"expected a mapping ({', '.join(CHECK_FIELDS)})")
    _known_keys(value, CHECK_FIELDS, fail, "checks", suggest=True)
    numeric = value.get("numeric", "auto")
    if numeric not in model.NUMERIC_POLICIES:
        raise fail(
            "checks", f"numeric {numeric!r} is not one of {', '.join(model.NUMERIC_POLICIES)}"
        )
    raises, raises_match, or_correct = _raises(value.get("raises"), fail)
    flags = {}
    for key in ("deterministic", "batch_invariant"):
        flags[key] = value.get(key, False)
        if not isinstance(flags[key], bool):
            raise fail("checks", f"{key} must be true or false, got {flags[key]!r}")
    max_ratio = value.get("max_ratio")
    if max_ratio is not None and (
        isinstance(max_ratio, bool) or not isinstance(max_ratio, int | float) or max_ratio <= 0
    ):
        raise fail("checks", f"max_ratio must be a positive number, got {max_ratio!r}")
    blocks = value.get("filecheck", [])
    if not isinstance(blocks, list):
        raise fail("checks", "filecheck is a list of {artifact, check, target?, backends?, when?}")
    specs = tuple(_filecheck(block, where, fail) for block in blocks)
    if raises and specs:
        raise fail("checks", "an error scenario (raises) has no generated code to check")
    if raises and (flags["deterministic"] or flags["batch_invariant"]):
        raise fail("checks", "an error scenario (raises) has no result to compare between calls")
    if or_correct and numeric not in ("auto", "fp64"):
        raise fail(
            "checks",
            f"raises.or_correct judges a returned result against fp64: numeric {numeric!r} "
            "has no place in it",
        )
    return model.Checks(
        numeric,
        raises,
        None if max_ratio is None else float(max_ratio),
        specs,
        raises_match,
        **flags,
        raises_or_correct=or_correct,
    )


def _filecheck(block: Any, where: Where, fail) -> model.FileCheckSpec:
    """One `checks.filecheck` entry; its errors name the entry's own line (its check text's,
    for the FileCheck text)."""
    from gemmconf.codecheck import validate_block

    if not isinstance(block, Mapping):
        raise fail("checks", "each filecheck entry is a mapping")
    for key in block:
        if key not in FILECHECK_FIELDS:
            raise model.ScenarioError(
                where.at(block, key),
                "checks.filecheck",
                f"unknown key {key!r}; known: {', '.join(FILECHECK_FIELDS)}",
            )
    if not isinstance(block.get("artifact"), str) or not isinstance(block.get("check"), str):
        raise model.ScenarioError(
            where.at(block),
            "checks.filecheck",
            "needs 'artifact' (e.g. ttgir) and 'check' (FileCheck text)",
        )
    target = block.get("target")
    if target is not None and target not in HARDWARE:
        raise model.ScenarioError(
            where.at(block, "target"),
            "checks.filecheck.target",
            f"{target!r} is not one of {', '.join(HARDWARE)}",
        )
    text_line = line_of(block, "check@text") or line_of(block, "check")
    text_col = block.key_lines.get("check@col", 1) if isinstance(block, Node) else 1
    source = f"{where.path}:{text_line}:{text_col}"
    problem = validate_block(block["check"], source=source, artifact=block["artifact"])
    if problem:
        raise model.ScenarioError(problem.where, "checks.filecheck.check", problem.message)
    backends = block.get("backends", [])
    if not isinstance(backends, list):
        raise model.ScenarioError(
            where.at(block, "backends"),
            "checks.filecheck.backends",
            "expected a list of backend names",
        )
    when = block.get("when", {})
    if not isinstance(when, Mapping):
        raise model.ScenarioError(
            where.at(block, "when"),
            "checks.filecheck.when",
            "expected a mapping of axis to value id(s)",
        )
    return model.FileCheckSpec(
        artifact=block["artifact"],
        text=block["check"],
        source=source,
        target=target,
        backends=tuple(backends),
        when=tuple((axis, tuple(sorted(as_ids(v, axis)))) for axis, v in when.items()),
    )


def _raises(value: Any, fail) -> tuple[str | None, str | None, bool]:
    """`raises: RuntimeError` or `raises: {type: RuntimeError, match: "regex", or_correct: true}`:
    the class, the message pattern, and whether a right result passes too."""
    if value is None:
        return None, None, False
    match = None
    or_correct = False
    if isinstance(value, Mapping):
        or_correct = value.get("or_correct", False)
        if not isinstance(or_correct, bool):
            raise fail("checks", f"raises.or_correct must be true or false, got {or_correct!r}")
        _known_keys(value, RAISES_FIELDS, fail, "checks", prefix="raises: ")
        match = value.get("match")
        if match is not None:
            if not isinstance(match, str) or not match:
                raise fail("checks", f"raises.match must be a regular expression, got {match!r}")
            try:
                re.compile(match)
                compile_message_pattern(match)
            except re.error as exc:
                raise fail(
                    "checks", f"raises.match {match!r} is not a regular expression: {exc}"
                ) from None
            except PatternError as exc:
                raise fail("checks", f"raises.match {match[:60]!r}: {exc}") from None
        value = value.get("type")
    if value == "NotImplementedError":
        raise fail(
            "checks",
            "raises NotImplementedError: that is how a backend says it does not implement "
            "something, never the rejection an error scenario expects",
        )
    if value not in KNOWN_EXCEPTIONS:
        raise fail("checks", f"raises {value!r} is not one of {', '.join(KNOWN_EXCEPTIONS)}")
    return value, match, or_correct


def _requires(value: Any, fail) -> Requirements:
    if not isinstance(value, Mapping):
        raise fail("requires", f"expected a mapping ({', '.join(REQUIRES_FIELDS)})")
    _known_keys(value, REQUIRES_FIELDS, fail, "requires")
    device = value.get("device", "any")
    if device not in ("any", "cpu", "gpu"):
        raise fail("requires", f"device {device!r} is not one of any, cpu, gpu")
    min_class = value.get("min_class")
    if min_class is not None and min_class not in HARDWARE:
        raise fail("requires", f"min_class {min_class!r} is not one of {', '.join(HARDWARE)}")
    max_class = value.get("max_class")
    if max_class is not None and max_class not in HARDWARE:
        raise fail("requires", f"max_class {max_class!r} is not one of {', '.join(HARDWARE)}")
    features = value.get("features", [])
    if not isinstance(features, list) or any(x not in FEATURES for x in features):
        raise fail("requires", f"features must be a list of {', '.join(FEATURES)}")
    target = value.get("target")
    if target is not None and target not in HARDWARE:
        raise fail("requires", f"target {target!r} is not one of {', '.join(HARDWARE)}")
    memory = value.get("memory_gb")
    if memory is not None and (isinstance(memory, bool) or not isinstance(memory, int | float)):
        raise fail("requires", f"memory_gb must be a number, got {memory!r}")
    try:
        return Requirements(
            device=device,
            min_class=min_class,
            features=tuple(features),
            memory_gb=memory,
            target=target,
            max_class=max_class,
        )
    except ValueError as exc:  # contradictions, e.g. device cpu with min_class sm90
        raise fail("requires", str(exc)) from None


def _check_consistent(
    op: OpSpec, operands, bias, dims, scaling, fail, or_correct: bool = False
) -> None:
    """Reject shapes eager would reject, unless the scenario expects an error (`raises`) and no
    result (`raises.or_correct`: a result must be one the fp64 reference computes)."""
    try:
        shapes = {o.name: [eval_dim(e, dims) for e in o.shape] for o in operands}
        bias_shape = [eval_dim(e, dims) for e in bias] if bias else None
    except ValueError as exc:
        raise fail("operands", str(exc)) from None
    a, b = shapes["a"], shapes["b"]
    if operands[1].layout == "alias" and a != b:
        raise fail(
            "layout",
            f"'alias' passes one tensor as both operands, so a and b need equal "
            f"shapes (a is {a}, b is {b})",
        )
    problem = op.shape_error(a, b)
    groups = dims.get("B", 1)
    if problem is None and scaling is not None:
        problem = RECIPES[scaling].shape_error(m=a[-2], n=op.out_shape(a, b, groups)[-1], k=a[-1])
    if problem is not None:
        hint = (
            "a scenario that allows a result (raises.or_correct) must describe a valid one"
            if or_correct
            else "an error scenario says so with checks.raises"
        )
        raise fail("shape", f"{problem}; {hint}")
    if bias_shape is not None:
        out = op.out_shape(a, b, groups)
        if not _broadcastable(bias_shape, out):
            raise fail("bias", f"bias {bias_shape} does not broadcast to the output {out}")


def _check_sizes(op: OpSpec, operands, bias, epilogue, shape_sets, max_elements: int, fail) -> None:
    """No shape set may make an instance hold more than `max_elements` elements (--max-elements),
    nor an extent past it: a shape of 10^20 rows loaded, and failed each item in an overflow."""
    others = [step.arg for step in epilogue if step.kind == "add_tensor"]
    for index, shape_set in enumerate(shape_sets):
        elements, extent = _elements(op, operands, bias, others, dict(shape_set))
        if max(elements, extent) > max_elements:
            raise fail(
                "shape" if len(shape_sets) == 1 else "shapes",
                f"shape set {index} makes {elements:,} elements (largest extent {extent:,}), "
                f"past the limit of {max_elements:,} per instance (--max-elements)",
            )


def _elements(op: OpSpec, operands, bias, others: list, dims: Mapping[str, int]) -> tuple[int, int]:
    """The elements of one shape set's operands, bias, epilogue tensors and result (what an
    item allocates, roughly), and the largest extent among them. Dims an epilogue tensor names
    but the shape set lacks, and the result of shapes eager rejects, count nothing."""
    shapes = [[eval_dim(e, dims) for e in o.shape] for o in operands]
    for extra in (bias, *others):
        if extra is None:
            continue
        try:
            shapes.append([eval_dim(e, dims) for e in extra])
        except ValueError:
            continue
    # an error scenario's shapes may give no result: eager raises before it allocates one
    with contextlib.suppress(Exception):
        shapes.append(list(op.out_shape(shapes[0], shapes[1], dims.get("B", 1))))
    sizes = [[max(int(x), 0) for x in shape] for shape in shapes]
    return sum(map(math.prod, sizes)), max((x for size in sizes for x in size), default=0)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _only(ops: Sequence[str], what: str) -> str:
    return f"only {', '.join(ops)} take{'s' if len(ops) == 1 else ''} {what}"


def _broadcastable(shape: list[int], out: list[int]) -> bool:
    if len(shape) > len(out):
        return False
    return all(s in (1, o) for s, o in zip(reversed(shape), reversed(out), strict=False))
