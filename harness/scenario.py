"""Scenario files: load, validate, expand (the first step of an item's flow).

A suite file (``suites/**/*.yaml``) holds scenarios. A scenario names an op, its operands, an
epilogue, a compile mode, the checks and the hardware it needs; ``axes`` expand it into the
product of their values, ``exclude`` drops combinations. Every instance gets a stable readable id:
``<suite>/<scenario>[<axis value>-<axis value>...]``.

Validation happens here, at collection, and every error names ``file:line`` and the field:
unknown keys, wrong types, unknown enum values and impossible combinations (inner dimensions that
do not agree, a layout the operand cannot take, a bias on an op that has none). What each op,
dtype and scaling recipe allows comes from the domain package (`gemmconf.gemm`). The schema is
documented for users in ``suites/README.md``; keep the two in step.
"""

from __future__ import annotations

import ast
import itertools
import math
import operator
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from gemmconf.capability import Requirements
from gemmconf.gemm import dtypes
from gemmconf.gemm.ops import OPS as OP_SPECS
from gemmconf.gemm.ops import OpSpec, jagged_dim, ops_where, scaled_mm_v2_scale_layout
from gemmconf.gemm.scaling import RECIPES, SWIZZLES
from gemmconf.markers import MARKERS

OPS = tuple(OP_SPECS)
INPUT_DTYPES = dtypes.OPERAND_DTYPES
OUT_DTYPES = dtypes.OUT_DTYPES
LAYOUTS = (
    "row",
    "t",
    "col",
    "col_padded",
    "offset",
    "padded",
    "padded_odd",
    "expand",
    "alias",
)
SCALINGS = tuple(RECIPES)
COMPILE_MODES = ("static", "dynamic", "mark_dynamic")
VALUE_KINDS = ("default", "nan_in_c", "nan_in_a", "inf_in_a", "near_max", "integers")
NUMERIC_POLICIES = ("auto", "fp64", "exact", "none")
UNARY_EPILOGUES = ("relu", "gelu", "gelu_tanh", "silu", "tanh", "sigmoid", "keep")
PARAM_EPILOGUES = ("clamp", "mul", "add", "add_tensor", "dropout_mask", "cast")
TENSOR_EPILOGUES = ("add_tensor", "dropout_mask")  # steps that take an input of their own
DIMS = ("B", "M", "N", "K")
BIAS_OPS = ops_where(lambda op: op.addend is not None)
ALPHA_BETA_OPS = ops_where(lambda op: op.alpha_beta)
SCALED_OPS = ops_where(lambda op: op.scaled)
FAST_ACCUM_OPS = ops_where(lambda op: op.fast_accum)
OUT_DTYPE_OPS = ops_where(lambda op: op.out_dtype is not None or op.out_dtype_optional)
DIFFERENTIABLE_OPS = ops_where(lambda op: op.differentiable)
GROUPED_OPS = ops_where(lambda op: op.grouped)


class ScenarioError(Exception):
    """A suite file is malformed; the message starts with ``file:line: field:``."""

    def __init__(self, where: str, field_name: str, message: str):
        self.where = where
        self.field_name = field_name
        super().__init__(f"{where}: {field_name}: {message}")


@dataclass(frozen=True)
class Operand:
    name: str
    shape: tuple[str, ...]  # expressions over B, M, N, K
    dtype: str
    layout: str = "row"


@dataclass(frozen=True)
class CompileSpec:
    mode: str = "static"  # static | dynamic | mark_dynamic
    dims: tuple[str, ...] = ()  # named dims marked dynamic (mark_dynamic)
    max_compiles: int | None = None  # None: one per distinct shape set when static, else 1

    @property
    def dynamic(self) -> bool | None:
        """The `dynamic=` argument handed to `Backend.compile`."""
        return {"static": False, "dynamic": True, "mark_dynamic": None}[self.mode]


@dataclass(frozen=True)
class FileCheckSpec:
    artifact: str
    text: str
    source: str  # file:line where the check text starts
    target: str | None = None
    backends: tuple[str, ...] = ()  # empty: every backend
    when: tuple[tuple[str, tuple[str, ...]], ...] = ()  # axis -> accepted value ids


@dataclass(frozen=True)
class Checks:
    numeric: str = "auto"  # auto | fp64 | exact | none
    raises: str | None = None  # exception class name eager raises (error scenarios)
    max_ratio: float | None = None  # overrides the tolerance table's ratio for this scenario
    filecheck: tuple[FileCheckSpec, ...] = ()
    raises_match: str | None = None  # a regex eager's and the backend's messages must match
    deterministic: bool = False  # two calls on the same inputs must be bitwise equal
    batch_invariant: bool = False  # rows of the output must not depend on M


@dataclass(frozen=True)
class Epilogue:
    kind: str
    arg: Any = None


@dataclass(frozen=True)
class ScenarioInstance:
    """One expanded scenario: everything needed to build inputs and the function under test."""

    suite: str
    name: str
    id: str
    axes: tuple[tuple[str, str], ...]  # (axis, value id) in file order
    source: str  # file:line of the scenario
    op: str
    dtype: str
    operands: tuple[Operand, ...]
    shape_sets: tuple[tuple[tuple[str, int], ...], ...]  # each ((dim, size), ...)
    bias: tuple[str, ...] | None = None
    bias_dtype: str | None = None
    alpha: float = 1.0
    beta: float = 1.0
    epilogue: tuple[Epilogue, ...] = ()
    scaling: str | None = None
    use_fast_accum: bool = False
    out_dtype: str | None = None
    compile: CompileSpec = field(default_factory=CompileSpec)
    values: str = "default"
    checks: Checks = field(default_factory=Checks)
    requires: Requirements = field(default_factory=Requirements)
    markers: tuple[str, ...] = ()
    seed_test: str | None = None
    doc: str | None = None
    swizzle: str | None = None  # F.scaled_mm: the scales' layout ("none", "32_4_4")
    group_sizes: tuple[str, ...] | None = None  # grouped ops: each group's share of the jagged dim
    backward: bool = False  # the program also returns the gradients (an output gradient `grad`)

    def dims(self, index: int = 0) -> dict[str, int]:
        return dict(self.shape_sets[index])

    def operand(self, name: str) -> Operand:
        for operand in self.operands:
            if operand.name == name:
                return operand
        raise KeyError(name)

    @property
    def max_k(self) -> int:
        return max(dict(s).get("K", 1) for s in self.shape_sets)

    @property
    def has_zero_size(self) -> bool:
        return any(size == 0 for shape_set in self.shape_sets for _, size in shape_set)

    def axis_record(self) -> dict[str, str]:
        return dict(self.axes)


# --- YAML with line numbers -------------------------------------------------------------------


class _Node(dict):
    """A YAML mapping that remembers the line of itself and of each key."""

    line: int
    key_lines: dict[str, int]


class _LineLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _Node:
    mapping = _Node()
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.key_lines[key] = key_node.start_mark.line + 1
        if isinstance(value_node, yaml.ScalarNode) and value_node.style in ("|", ">"):
            # Block scalars start on the line after their key; FileCheck diagnostics need it.
            mapping.key_lines[f"{key}@text"] = value_node.start_mark.line + 2
            mapping.key_lines[f"{key}@col"] = _block_indent(value_node.start_mark) + 1
    return mapping


def _block_indent(mark: yaml.Mark) -> int:
    """The indentation of a block scalar's text: its first non-blank line after the indicator."""
    text = mark.buffer or ""
    start = text.find("\n", mark.pointer) + 1
    while 0 < start < len(text):
        end = text.find("\n", start)
        line = text[start : end if end >= 0 else len(text)]
        if line.strip(" \0"):
            return len(line) - len(line.lstrip(" "))
        start = end + 1 if end >= 0 else 0
    return 0


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _line_of(node: Any, key: str | None = None) -> int | None:
    if isinstance(node, _Node):
        if key is not None and key in node.key_lines:
            return node.key_lines[key]
        return node.line
    return None


class _Where:
    """Builds `file:line` strings for errors from the node being read."""

    def __init__(self, path: str):
        self.path = path

    def at(self, node: Any, key: str | None = None) -> str:
        line = _line_of(node, key)
        return f"{self.path}:{line}" if line else self.path

    def error(self, node: Any, key: str, message: str, field_name: str | None = None):
        return ScenarioError(self.at(node, key), field_name or key, message)


# --- shape expressions ------------------------------------------------------------------------

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}


def eval_dim(expr: str | int, dims: Mapping[str, int]) -> int:
    """Evaluate a shape expression such as ``K``, ``K+1``, ``2*M`` or ``16``."""
    if isinstance(expr, int):
        return expr

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in dims:
                raise ValueError(f"dimension {node.id!r} is not set (have {', '.join(dims)})")
            return dims[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        raise ValueError(f"unsupported shape expression {expr!r}")

    try:
        return walk(ast.parse(str(expr), mode="eval"))
    except SyntaxError as exc:
        raise ValueError(f"unsupported shape expression {expr!r}") from exc


def _expr_names(expr: str | int) -> set[str]:
    if isinstance(expr, int):
        return set()
    return {n.id for n in ast.walk(ast.parse(str(expr), mode="eval")) if isinstance(n, ast.Name)}


# --- axis value ids -------------------------------------------------------------------------


def value_id(value: Any, axis: str | None = None) -> str:
    """A short readable id for an axis value (used in item ids, expectations and reports).

    Numbers, booleans and None carry their axis name (``alpha0``, ``use_fast_accum``,
    ``no_bias``) so that ids stay readable; shapes read ``127x65x33`` (``4b64x64x64`` batched).
    """
    if isinstance(value, Mapping):
        if "id" in value:
            return str(value["id"])
        if set(value) <= set(DIMS):
            return _shape_id(value)
        return "-".join(value_id(v, k) for k, v in value.items())
    if isinstance(value, bool):
        return (axis or "on") if value else (f"no_{axis}" if axis else "off")
    if value is None:
        return f"no_{axis}" if axis else "none"
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, Mapping) and set(v) <= set(DIMS) for v in value):
            return "_".join(_shape_id(v) for v in value)
        if axis == "epilogue" or axis is None:
            return "+".join(value_id(v) for v in value) if value else "none"
        return f"{axis}_" + "".join(str(v) for v in value)
    if isinstance(value, int | float) and axis:
        return f"{axis}{value:g}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _shape_id(dims: Mapping[str, Any]) -> str:
    order = [d for d in DIMS if d in dims]
    text = "x".join(str(dims[d]) for d in order if d != "B")
    return f"{dims['B']}b{text}" if "B" in dims else text


# --- the field schema -----------------------------------------------------------------------

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
    "compile",
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
RAISES_FIELDS = ("type", "match")
FILECHECK_FIELDS = ("artifact", "check", "target", "backends", "when")
REQUIRES_FIELDS = ("device", "min_class", "max_class", "features", "memory_gb", "target")
COMPILE_FIELDS = ("mode", "dims", "max_compiles")
OPERAND_FIELDS = ("shape", "dtype", "layout")
KNOWN_EXCEPTIONS = ("RuntimeError", "ValueError", "TypeError", "IndexError", "AssertionError")
HARDWARE = ("sm80", "sm89", "sm90", "sm100", "sm120")
FEATURES = ("fp8", "tma")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.]*$")


@dataclass
class _Raw:
    """A scenario's fields after axis values are merged in, with where each came from."""

    fields: dict[str, Any]
    nodes: dict[str, Any]  # field -> the mapping node that held it (for line numbers)


SUITE_SUFFIXES = (".yaml", ".yml")  # suite and expectations files alike
MAX_INSTANCES = 100_000  # per scenario: past it, a typo in an axis, not a suite (--max-items)


def load_suite(
    path: str | Path, root: str | Path | None = None, *, max_instances: int = MAX_INSTANCES
) -> list[ScenarioInstance]:
    """Read one suite file and return its expanded, validated instances. A scenario whose axes
    would expand past `max_instances` is an error, before any is built."""
    path = Path(path)
    shown = str(path.relative_to(root)) if root and path.is_relative_to(root) else str(path)
    where = _Where(shown)
    try:
        document = yaml.load(path.read_text(), Loader=_LineLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ScenarioError(f"{shown}{line}", "yaml", str(exc.problem or exc)) from None
    if not isinstance(document, _Node):
        raise ScenarioError(shown, "file", "a suite file is a mapping with a 'scenarios' list")
    _reject_unknown(document, FILE_FIELDS, where, "suite file")
    suite = document.get("suite", path.stem)
    if not isinstance(suite, str) or not NAME_RE.match(suite):
        raise where.error(document, "suite", f"expected a lower-case name, got {suite!r}")
    defaults = document.get("defaults", _Node())
    if not isinstance(defaults, Mapping):
        raise where.error(document, "defaults", "expected a mapping of scenario fields")
    _reject_unknown(defaults, AXIS_FIELDS, where, "defaults")
    scenarios = document.get("scenarios")
    if not isinstance(scenarios, list) or not scenarios:
        raise where.error(document, "scenarios", "expected a non-empty list of scenarios")

    instances: list[ScenarioInstance] = []
    seen_ids: dict[str, str] = {}
    seen_names: set[str] = set()
    for scenario in scenarios:
        if not isinstance(scenario, _Node):
            raise ScenarioError(
                where.at(document, "scenarios"), "scenarios", "each scenario is a mapping"
            )
        name = scenario.get("name")
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise where.error(
                scenario, "name", f"expected a lower-case name ([a-z0-9_.]), got {name!r}"
            )
        if name in seen_names:
            raise where.error(scenario, "name", f"duplicate scenario name {name!r}")
        seen_names.add(name)
        for instance in _expand(suite, scenario, defaults, where, max_instances):
            if instance.id in seen_ids:
                raise ScenarioError(
                    instance.source,
                    "axes",
                    f"duplicate id {instance.id} (also at {seen_ids[instance.id]})",
                )
            seen_ids[instance.id] = instance.source
            instances.append(instance)
    return instances


def _reject_unknown(node: Mapping, allowed: Sequence[str], where: _Where, what: str) -> None:
    for key in node:
        if key not in allowed:
            close = _closest(str(key), allowed)
            hint = f" (did you mean {close!r}?)" if close else ""
            raise where.error(
                node, key, f"unknown key in {what}{hint}; known: {', '.join(allowed)}"
            )


def _closest(word: str, options: Sequence[str]) -> str | None:
    import difflib

    match = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return match[0] if match else None


def _expand(
    suite: str, scenario: _Node, defaults: Mapping, where: _Where, max_instances: int
) -> Iterator[ScenarioInstance]:
    _reject_unknown(scenario, SCENARIO_FIELDS, where, f"scenario {scenario['name']!r}")
    axes = scenario.get("axes", _Node())
    if not isinstance(axes, Mapping):
        raise where.error(scenario, "axes", "expected a mapping of axis name to a list of values")
    axis_values: list[tuple[str, list[Any]]] = []
    for axis, values in axes.items():
        if not isinstance(values, list) or not values:
            raise where.error(axes, axis, "an axis is a non-empty list of values")
        if axis not in AXIS_FIELDS:
            # A named case axis: each value is a mapping of fields (with an optional id).
            for value in values:
                if not isinstance(value, Mapping):
                    raise where.error(
                        axes,
                        axis,
                        f"{axis!r} is not a scenario field, so each "
                        "value must be a mapping of fields (a named case axis)",
                    )
                _reject_unknown(value, (*AXIS_FIELDS, "id"), where, f"axis {axis!r}")
        ids = [value_id(v, axis) for v in values]
        duplicated = {i for i in ids if ids.count(i) > 1}
        if duplicated:
            raise where.error(
                axes,
                axis,
                f"values give the same id {sorted(duplicated)}: give them distinct 'id's",
            )
        axis_values.append((axis, values))

    product = math.prod(len(values) for _, values in axis_values)
    if product > max_instances:
        raise where.error(
            scenario,
            "axes" if "axes" in scenario else "name",
            f"the axes expand to {product:,} instances, past the limit of {max_instances:,} "
            "per scenario: split the scenario, or raise the limit (--max-items)",
        )
    excludes = scenario.get("exclude", [])
    if not isinstance(excludes, list):
        raise where.error(scenario, "exclude", "expected a list of {axis: value} mappings")
    axis_names = [a for a, _ in axis_values]
    for rule in excludes:
        if not isinstance(rule, Mapping) or not rule:
            raise where.error(scenario, "exclude", "each rule is a mapping of axis to value(s)")
        for axis in rule:
            if axis not in axis_names:
                raise where.error(
                    rule,
                    axis,
                    f"exclude names an axis the scenario does not "
                    f"have; axes: {', '.join(axis_names) or 'none'}",
                    "exclude",
                )

    used_rules: set[int] = set()
    for combo in itertools.product(*(values for _, values in axis_values)):
        chosen = {axis: value for (axis, _), value in zip(axis_values, combo, strict=True)}
        chosen_ids = {axis: value_id(value, axis) for axis, value in chosen.items()}
        excluded = False
        for index, rule in enumerate(excludes):
            if all(chosen_ids[a] in _as_ids(v, a) for a, v in rule.items()):
                used_rules.add(index)
                excluded = True
        if excluded:
            continue
        fields: dict[str, Any] = {}
        nodes: dict[str, Any] = {}
        for key, value in defaults.items():
            fields[key], nodes[key] = value, defaults
        for key, value in scenario.items():
            if key not in ("axes", "exclude"):
                fields[key], nodes[key] = value, scenario
        for axis, value in chosen.items():
            if axis in AXIS_FIELDS:
                fields[axis], nodes[axis] = value, axes
            else:
                for key, sub in value.items():
                    if key != "id":
                        fields[key], nodes[key] = sub, value
        axes_ids = tuple(chosen_ids.items())
        suffix = "-".join(i for _, i in axes_ids)
        instance_id = f"{suite}/{scenario['name']}" + (f"[{suffix}]" if suffix else "")
        yield _build(suite, instance_id, axes_ids, _Raw(fields, nodes), scenario, where)
    for index, rule in enumerate(excludes):
        if index not in used_rules:
            raise where.error(
                rule,
                next(iter(rule)),
                "this exclude rule matches no combination of the axes (a typo in a value?)",
                "exclude",
            )


def _as_ids(value: Any, axis: str | None = None) -> set[str]:
    """The ids an exclude/when entry accepts: a value id (or a value), or a list of them."""
    values = value if isinstance(value, list) else [value]
    return {v if isinstance(v, str) else value_id(v, axis) for v in values}


def _build(
    suite: str,
    instance_id: str,
    axes: tuple[tuple[str, str], ...],
    raw: _Raw,
    scenario: _Node,
    where: _Where,
) -> ScenarioInstance:
    f = raw.fields

    def fail(key: str, message: str) -> ScenarioError:
        node = raw.nodes.get(key, scenario)
        return ScenarioError(
            where.at(node, key if key in node else None), key, f"{message} (in {instance_id})"
        )

    def pick(key: str, options: Sequence[str], default: Any = None) -> Any:
        value = f.get(key, default)
        if value is not None and value not in options:
            close = _closest(str(value), options)
            hint = f" (did you mean {close!r}?)" if close else ""
            raise fail(key, f"{value!r} is not one of {', '.join(options)}{hint}")
        return value

    def number(key: str, default: float) -> float:
        value = f.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise fail(key, f"expected a number, got {value!r}")
        return float(value)

    op = pick("op", OPS)
    if op is None:
        raise fail("op", f"every scenario needs an op ({', '.join(OPS)})")
    spec = OP_SPECS[op]
    dtype = pick("dtype", INPUT_DTYPES, spec.default_dtype)

    shape_sets = _shape_sets(f, fail)
    operands = _operands(spec, dtype, f, fail)
    dims_used = set().union(*(_expr_names(e) for o in operands for e in o.shape))

    bias = f.get("bias")
    if bias is not None:
        if op not in BIAS_OPS:
            raise fail("bias", f"{op} takes no bias (ops with one: {', '.join(BIAS_OPS)})")
        if not isinstance(bias, list) or not all(isinstance(e, str | int) for e in bias):
            raise fail("bias", f"expected a shape such as [M, N], [N] or [1, N], got {bias!r}")
        bias = tuple(bias)
        dims_used |= set().union(*(_expr_names(e) for e in bias))
    elif spec.addend is not None and not spec.addend.optional:
        raise fail(
            "bias", f"{op} needs a bias shape (its input {spec.addend.name.upper()}), e.g. [M, N]"
        )
    for key in ("alpha", "beta"):
        if key in f and op not in ALPHA_BETA_OPS:
            raise fail(key, f"{op} has no {key} (ops with one: {', '.join(ALPHA_BETA_OPS)})")
    alpha, beta = number("alpha", 1.0), number("beta", 1.0)

    scaling = pick("scaling", SCALINGS)
    if spec.scaled and scaling is None:
        raise fail("scaling", f"{op} needs a scaling recipe ({', '.join(SCALINGS)})")
    if not spec.scaled and scaling is not None:
        raise fail("scaling", _only(SCALED_OPS, "a scaling recipe"))
    use_fast_accum = f.get("use_fast_accum", False)
    if not isinstance(use_fast_accum, bool):
        raise fail("use_fast_accum", f"expected true or false, got {use_fast_accum!r}")
    if use_fast_accum and not spec.fast_accum:
        raise fail("use_fast_accum", _only(FAST_ACCUM_OPS, "use_fast_accum"))
    out_dtype = pick("out_dtype", OUT_DTYPES)
    if out_dtype is not None and spec.out_dtype is None and not spec.out_dtype_optional:
        raise fail("out_dtype", _only(OUT_DTYPE_OPS, "out_dtype (use a cast epilogue elsewhere)"))
    if out_dtype is None:
        out_dtype = spec.out_dtype
    if scaling is not None:
        recipe = RECIPES[scaling]
        if op not in recipe.ops:
            takes = ", ".join(name for name, r in RECIPES.items() if op in r.ops)
            raise fail("scaling", f"{op} does not take {scaling} scaling (takes: {takes})")
        wanted = recipe.element
        for operand in operands:
            if wanted is not None and operand.dtype != wanted:
                raise fail(
                    "dtype", f"{scaling} scaling makes {wanted} operands, not {operand.dtype}"
                )
            if wanted is None and dtypes.DTYPES[operand.dtype].kind != "fp8":
                raise fail("dtype", f"{scaling} scaling quantizes to fp8, not {operand.dtype}")
    swizzle = pick("swizzle", SWIZZLES)
    if swizzle is not None and spec.scale_layout is not scaled_mm_v2_scale_layout:
        raise fail("swizzle", "only scaled_mm_v2 (F.scaled_mm) takes swizzle")
    if swizzle is None and op == "scaled_mm_v2" and scaling is not None:
        swizzle = RECIPES[scaling].swizzle
    backward = f.get("backward", False)
    if not isinstance(backward, bool):
        raise fail("backward", f"expected true or false, got {backward!r}")
    if backward and not spec.differentiable:
        raise fail("backward", _only(DIFFERENTIABLE_OPS, "backward: true"))
    group_sizes = _group_sizes(f.get("group_sizes"), spec, fail)
    if group_sizes is not None:
        dims_used |= set().union(*(_expr_names(e) for e in group_sizes))
    bias_dtype = pick("bias_dtype", INPUT_DTYPES)

    epilogue = _epilogue(f.get("epilogue", []), fail)
    compile_spec = _compile(f.get("compile", "static"), shape_sets, fail)
    for dim in compile_spec.dims:
        if dim not in dims_used:
            raise fail("compile", f"mark_dynamic names dim {dim!r}, which no operand uses")
    values = pick("values", VALUE_KINDS, "default")
    if values == "nan_in_c" and bias is None:
        raise fail("values", "nan_in_c needs a bias/C operand")
    checks = _checks(f.get("checks", {}), raw.nodes.get("checks", scenario), where, fail)
    if checks.batch_invariant and "M" not in [str(e) for e in operands[0].shape]:
        raise fail("checks", "batch_invariant slices rows of a: a needs a dim that is M")
    requires = _requires(f.get("requires", {}), fail)
    markers = f.get("markers", [])
    if not isinstance(markers, list) or not all(isinstance(m, str) for m in markers):
        raise fail("markers", f"expected a list of marker names, got {markers!r}")
    for marker in markers:
        if marker not in MARKERS:
            raise fail("markers", f"unknown marker {marker!r}; known: {', '.join(MARKERS)}")
    for key in ("doc", "seed"):
        if key in f and not isinstance(f[key], str):
            raise fail(key, f"expected text, got {f[key]!r}")

    for index, shape_set in enumerate(shape_sets):
        known = dict(shape_set)
        missing = sorted(dims_used - set(known))
        if missing:
            raise fail(
                "shape" if len(shape_sets) == 1 else "shapes",
                f"shape set {index} does not set {', '.join(missing)}",
            )
        if checks.raises is None:
            _check_consistent(spec, operands, bias, known, scaling, fail)
        if spec.grouped:
            _check_groups(operands, group_sizes, known, fail, strict=checks.raises is None)

    instance = ScenarioInstance(
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
        markers=tuple(markers),
        seed_test=f.get("seed"),
        doc=f.get("doc"),
        swizzle=swizzle,
        group_sizes=group_sizes,
        backward=backward,
    )
    return replace(instance, requires=_implied_requirements(instance))


def _group_sizes(value: Any, spec: OpSpec, fail) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not spec.grouped:
        raise fail("group_sizes", _only(GROUPED_OPS, "group_sizes"))
    if not isinstance(value, list) or not all(isinstance(e, str | int) for e in value):
        raise fail("group_sizes", f"expected a list of sizes or expressions, got {value!r}")
    for expr in value:
        try:
            _expr_names(expr)
        except SyntaxError:
            raise fail("group_sizes", f"bad expression {expr!r}") from None
    return tuple(value)


def group_extents(
    instance_operands: Sequence[Operand], group_sizes: Sequence[str | int] | None, dims: Mapping
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
            raise fail(key, f"expected a mapping of dims ({', '.join(DIMS)}), got {raw!r}")
        for dim, size in raw.items():
            if dim not in DIMS:
                raise fail(key, f"unknown dim {dim!r}; dims are {', '.join(DIMS)}")
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise fail(key, f"{dim} must be a size >= 0, got {size!r}")
        sets.append(tuple((d, raw[d]) for d in DIMS if d in raw))
    return tuple(sets)


def _operands(op: OpSpec, dtype: str, f: Mapping, fail) -> tuple[Operand, ...]:
    overrides = f.get("operands", {})
    if not isinstance(overrides, Mapping):
        raise fail("operands", "expected a mapping of operand name to {shape, dtype, layout}")
    names = [o.name for o in op.laid_out]
    for name, spec in overrides.items():
        if name not in names:
            raise fail("operands", f"{op.name} has operands {', '.join(names)}; not {name!r}")
        if not isinstance(spec, Mapping):
            raise fail("operands", f"operand {name!r}: expected a mapping")
        for key in spec:
            if key not in OPERAND_FIELDS:
                raise fail(
                    "operands",
                    f"operand {name!r}: unknown key {key!r}; known: {', '.join(OPERAND_FIELDS)}",
                )
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
            shape = spec["shape"]
            if not isinstance(shape, list) or not all(isinstance(e, str | int) for e in shape):
                raise fail("operands", f"operand {name!r}: shape must be a list of expressions")
            for expr in shape:
                try:
                    _expr_names(expr)
                except SyntaxError:
                    raise fail("operands", f"operand {name!r}: bad expression {expr!r}") from None
            shape = tuple(shape)
        operand_dtype = spec.get("dtype", dtype)
        if operand_dtype not in INPUT_DTYPES:
            raise fail(
                "operands",
                f"operand {name!r}: dtype {operand_dtype!r} is not one of "
                f"{', '.join(INPUT_DTYPES)}",
            )
        layout = spec.get("layout", layouts[name])
        if _base_layout(layout) not in LAYOUTS:
            raise fail(
                "operands",
                f"operand {name!r}: layout {layout!r} is not one of {', '.join(LAYOUTS)}",
            )
        if layout.startswith("expand") and len(shape) < 3:
            raise fail(
                "layout",
                f"operand {name!r} is {len(shape)}-D; 'expand' (stride-0 batch) needs a batch dim",
            )
        operands.append(Operand(name, tuple(shape), operand_dtype, layout))
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
        if value not in LAYOUTS:
            raise fail(
                "layout",
                f"{value!r} is not a layout ({', '.join(LAYOUTS)}) nor a "
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
            if _base_layout(layout) not in LAYOUTS:
                raise fail("layout", f"{layout!r} is not a layout ({', '.join(LAYOUTS)})")
            layouts[name] = layout
        return layouts
    raise fail("layout", f"expected a layout name, an n/t code or a mapping, got {value!r}")


def _epilogue(steps: Any, fail) -> tuple[Epilogue, ...]:
    if not isinstance(steps, list):
        raise fail("epilogue", f"expected a list of steps, got {steps!r}")
    chain = []
    for step in steps:
        if isinstance(step, str):
            if step not in UNARY_EPILOGUES:
                raise fail(
                    "epilogue",
                    f"unknown step {step!r}; steps: {', '.join(UNARY_EPILOGUES + PARAM_EPILOGUES)}",
                )
            chain.append(Epilogue(step))
            continue
        if not isinstance(step, Mapping) or len(step) != 1:
            raise fail("epilogue", f"a step is a name or a one-key mapping, got {step!r}")
        ((kind, arg),) = step.items()
        if kind not in PARAM_EPILOGUES:
            raise fail(
                "epilogue",
                f"unknown step {kind!r}; steps with an argument: {', '.join(PARAM_EPILOGUES)}",
            )
        if kind == "clamp" and not (isinstance(arg, list) and len(arg) == 2):
            raise fail("epilogue", f"clamp takes [min, max], got {arg!r}")
        if kind in ("mul", "add") and (isinstance(arg, bool) or not isinstance(arg, int | float)):
            raise fail("epilogue", f"{kind} takes a number, got {arg!r}")
        if kind == "cast" and arg not in ("fp32", "fp16", "bf16"):
            raise fail("epilogue", f"cast takes fp32, fp16 or bf16, got {arg!r}")
        if kind == "add_tensor" and not (isinstance(arg, list) and arg):
            raise fail("epilogue", f"add_tensor takes the other tensor's shape, got {arg!r}")
        if kind == "dropout_mask" and (
            isinstance(arg, bool) or not isinstance(arg, int | float) or not 0 <= arg < 1
        ):
            raise fail("epilogue", f"dropout_mask takes a drop probability in [0, 1), got {arg!r}")
        chain.append(Epilogue(kind, tuple(arg) if isinstance(arg, list) else arg))
    return tuple(chain)


def _compile(value: Any, shape_sets, fail) -> CompileSpec:
    if isinstance(value, str):
        value = {"mode": value}
    if not isinstance(value, Mapping):
        raise fail("compile", f"expected a mode ({', '.join(COMPILE_MODES)}) or a mapping")
    for key in value:
        if key not in COMPILE_FIELDS:
            raise fail("compile", f"unknown key {key!r}; known: {', '.join(COMPILE_FIELDS)}")
    mode = value.get("mode", "static")
    if mode not in COMPILE_MODES:
        raise fail("compile", f"mode {mode!r} is not one of {', '.join(COMPILE_MODES)}")
    dims = value.get("dims", [])
    if not isinstance(dims, list) or any(d not in DIMS for d in dims):
        raise fail("compile", f"dims must be a list of {', '.join(DIMS)}, got {dims!r}")
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
    return CompileSpec(mode, tuple(dims), max_compiles)


def _checks(value: Any, node: Any, where: _Where, fail) -> Checks:
    from gemmconf.codecheck import validate_block

    if not isinstance(value, Mapping):
        raise fail("checks", f"expected a mapping ({', '.join(CHECK_FIELDS)})")
    for key in value:
        if key not in CHECK_FIELDS:
            close = _closest(str(key), CHECK_FIELDS)
            hint = f" (did you mean {close!r}?)" if close else ""
            raise fail("checks", f"unknown key {key!r}{hint}; known: {', '.join(CHECK_FIELDS)}")
    numeric = value.get("numeric", "auto")
    if numeric not in NUMERIC_POLICIES:
        raise fail("checks", f"numeric {numeric!r} is not one of {', '.join(NUMERIC_POLICIES)}")
    raises, raises_match = _raises(value.get("raises"), fail)
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
    specs = []
    for block in blocks:
        if not isinstance(block, Mapping):
            raise fail("checks", "each filecheck entry is a mapping")
        for key in block:
            if key not in FILECHECK_FIELDS:
                raise ScenarioError(
                    where.at(block, key),
                    "checks.filecheck",
                    f"unknown key {key!r}; known: {', '.join(FILECHECK_FIELDS)}",
                )
        if not isinstance(block.get("artifact"), str) or not isinstance(block.get("check"), str):
            raise ScenarioError(
                where.at(block),
                "checks.filecheck",
                "needs 'artifact' (e.g. ttgir) and 'check' (FileCheck text)",
            )
        target = block.get("target")
        if target is not None and target not in HARDWARE:
            raise ScenarioError(
                where.at(block, "target"),
                "checks.filecheck.target",
                f"{target!r} is not one of {', '.join(HARDWARE)}",
            )
        text_line = _line_of(block, "check@text") or _line_of(block, "check")
        text_col = block.key_lines.get("check@col", 1) if isinstance(block, _Node) else 1
        source = f"{where.path}:{text_line}:{text_col}"
        problem = validate_block(block["check"], source=source, artifact=block["artifact"])
        if problem:
            raise ScenarioError(problem.where, "checks.filecheck.check", problem.message)
        backends = block.get("backends", [])
        if not isinstance(backends, list):
            raise ScenarioError(
                where.at(block, "backends"),
                "checks.filecheck.backends",
                "expected a list of backend names",
            )
        when = block.get("when", {})
        if not isinstance(when, Mapping):
            raise ScenarioError(
                where.at(block, "when"),
                "checks.filecheck.when",
                "expected a mapping of axis to value id(s)",
            )
        specs.append(
            FileCheckSpec(
                artifact=block["artifact"],
                text=block["check"],
                source=source,
                target=target,
                backends=tuple(backends),
                when=tuple((axis, tuple(sorted(_as_ids(v, axis)))) for axis, v in when.items()),
            )
        )
    if raises and specs:
        raise fail("checks", "an error scenario (raises) has no generated code to check")
    if raises and (flags["deterministic"] or flags["batch_invariant"]):
        raise fail("checks", "an error scenario (raises) has no result to compare between calls")
    return Checks(
        numeric,
        raises,
        None if max_ratio is None else float(max_ratio),
        tuple(specs),
        raises_match,
        **flags,
    )


def _raises(value: Any, fail) -> tuple[str | None, str | None]:
    """`raises: RuntimeError` or `raises: {type: RuntimeError, match: "regex"}`."""
    if value is None:
        return None, None
    match = None
    if isinstance(value, Mapping):
        for key in value:
            if key not in RAISES_FIELDS:
                raise fail(
                    "checks", f"raises: unknown key {key!r}; known: {', '.join(RAISES_FIELDS)}"
                )
        match = value.get("match")
        if match is not None:
            if not isinstance(match, str) or not match:
                raise fail("checks", f"raises.match must be a regular expression, got {match!r}")
            try:
                re.compile(match)
            except re.error as exc:
                raise fail(
                    "checks", f"raises.match {match!r} is not a regular expression: {exc}"
                ) from None
        value = value.get("type")
    if value == "NotImplementedError":
        raise fail(
            "checks",
            "raises NotImplementedError: that is how a backend says it does not implement "
            "something, never the rejection an error scenario expects",
        )
    if value not in KNOWN_EXCEPTIONS:
        raise fail("checks", f"raises {value!r} is not one of {', '.join(KNOWN_EXCEPTIONS)}")
    return value, match


def _requires(value: Any, fail) -> Requirements:
    if not isinstance(value, Mapping):
        raise fail("requires", f"expected a mapping ({', '.join(REQUIRES_FIELDS)})")
    for key in value:
        if key not in REQUIRES_FIELDS:
            raise fail("requires", f"unknown key {key!r}; known: {', '.join(REQUIRES_FIELDS)}")
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


def _check_consistent(op: OpSpec, operands, bias, dims, scaling, fail) -> None:
    """Reject shapes eager would reject, unless the scenario expects an error (`raises`)."""
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
        raise fail("shape", f"{problem}; an error scenario says so with checks.raises")
    if bias_shape is not None:
        out = op.out_shape(a, b, groups)
        if not _broadcastable(bias_shape, out):
            raise fail("bias", f"bias {bias_shape} does not broadcast to the output {out}")


def _only(ops: Sequence[str], what: str) -> str:
    return f"only {', '.join(ops)} take{'s' if len(ops) == 1 else ''} {what}"


def _broadcastable(shape: list[int], out: list[int]) -> bool:
    if len(shape) > len(out):
        return False
    return all(s in (1, o) for s, o in zip(reversed(shape), reversed(out), strict=False))


def _implied_requirements(instance: ScenarioInstance) -> Requirements:
    """Features an instance needs whatever its file says (fp8 inputs need fp8 GEMM support)."""
    req = instance.requires
    features = set(req.features)
    if any(dtypes.is_quantized(o.dtype) for o in instance.operands):
        features.add("fp8")
    if features == set(req.features):
        return req
    return replace(req, features=tuple(sorted(features)))


def implied_markers(instance: ScenarioInstance) -> list[str]:
    """Markers of an item: its op, hardware class, features and the file's extra markers."""
    from gemmconf.capability import hardware_class_of

    markers = [OP_SPECS[instance.op].marker, hardware_class_of(instance.requires)]
    markers += list(instance.requires.features)
    if instance.requires.target:
        markers.append(instance.requires.target)
    if instance.compile.mode != "static":
        markers.append("dynamic")
    if instance.has_zero_size:
        markers.append("zero_size")
    if instance.checks.raises:
        markers.append("error_case")
    if instance.checks.filecheck:
        markers.append("codecheck")
    recipe = RECIPES.get(instance.scaling or "")
    if recipe is not None and recipe.microscaling:
        markers.append("mx" if recipe.kind == "mx" else "nvfp4")
    if instance.backward:
        markers.append("backward")
    if OP_SPECS[instance.op].writes:
        markers.append("out")
    markers += instance.markers
    return list(dict.fromkeys(markers))


def discover(paths: Sequence[str | Path], root: str | Path) -> list[Path]:
    """Suite files under the given paths (directories are searched for *.yaml and *.yml)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(
                x
                for x in p.rglob("*")
                if x.suffix in SUITE_SUFFIXES
                and x.is_file()
                and "expectations" not in x.relative_to(p).parts
            )
        elif p.suffix in SUITE_SUFFIXES:
            found.append(p)
    return found
