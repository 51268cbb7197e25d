"""The scenario model: what one expanded scenario is (`ScenarioInstance` and its parts), the
vocabulary a suite file may use (ops, dtypes, layouts, epilogues, value kinds; what each op and
recipe allows comes from `gemmconf.gemm`), and what an instance implies (markers, features)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from gemmconf.capability import Requirements
from gemmconf.gemm import dtypes
from gemmconf.gemm.ops import OPS as OP_SPECS
from gemmconf.gemm.ops import OpSpec, jagged_dim, ops_where
from gemmconf.gemm.scaling import RECIPES, Recipe

OPS = tuple(OP_SPECS)
INPUT_DTYPES = dtypes.OPERAND_DTYPES
OUT_DTYPES = dtypes.OUT_DTYPES
LAYOUTS = (
    "row",
    "t",
    "col",
    "col_padded",
    "col_padded64",
    "offset",
    "padded",
    "padded_odd",
    "expand",
    "alias",
)
SCALINGS = tuple(RECIPES)
COMPILE_MODES = ("static", "dynamic", "mark_dynamic")
VALUE_KINDS = (
    "default",
    "nan_in_c",
    "nan_in_a",
    "inf_in_a",
    "near_max",
    "integers",
    "tf32_exact",
)
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
class CompiledAutograd:
    """A backward scenario's backward run under compiled autograd (`compiled_autograd:`), and
    what the seed asserts it counts over the item's calls (None: not checked)."""

    captures: int | None = None  # backward graphs compiled autograd captured
    compiles: int | None = None  # of those graphs, the ones dynamo compiled for the backend


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
    # an error scenario where eager's rejection is its own limit, not the op's contract: a
    # backend also passes by returning the right result (judged against fp64 alone)
    raises_or_correct: bool = False


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
    compiled_autograd: CompiledAutograd | None = None  # the backward under compiled autograd
    # inductor config options the seed patched, (dotted name, scalar) in the file's order: the
    # inductor backends compile and call under them, other backends ignore them
    inductor_config: tuple[tuple[str, Any], ...] = ()
    # torch._dynamo.config options the seed compiled under (an allow-list, scenario.
    # dynamo_options): every torch.compile-based backend compiles and calls under them
    dynamo_config: tuple[tuple[str, Any], ...] = ()
    # Resolved once, when the instance is made: what every later step would otherwise look up by
    # name or derive again (the program's parameters, the GEMM's result dtype).
    input_names: tuple[str, ...] = field(init=False, repr=False, compare=False)
    gemm_dtype: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_names", _input_names(self))
        gemm_dtype = self.spec.result_dtype_for(self.operand("a").dtype, self.out_dtype)
        object.__setattr__(self, "gemm_dtype", gemm_dtype)

    @property
    def spec(self) -> OpSpec:
        """The op's entry in the domain table (gemmconf.gemm.ops)."""
        return OP_SPECS[self.op]

    @property
    def conditions(self) -> frozenset[str]:
        """Which of `gemmconf.gemm.ops.WHEN` hold: a jagged grouped GEMM (not 3-D x 3-D), a
        recipe with a global scale."""
        present = set()
        ranks = len(self.operand("a").shape), len(self.operand("b").shape)
        if self.spec.grouped and jagged_dim(*ranks) is not None:
            present.add("jagged")
        if self.recipe is not None and self.recipe.global_scale:
            present.add("global_scale")
        return frozenset(present)

    @property
    def recipe(self) -> Recipe | None:
        """The scaling recipe's entry (gemmconf.gemm.scaling); None for unscaled GEMMs."""
        return None if self.scaling is None else RECIPES[self.scaling]

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


def _input_names(instance: ScenarioInstance) -> tuple[str, ...]:
    """The program's positional parameters, in order: the op's, the output gradient of a
    backward scenario (`grad`), then one per add_tensor or dropout_mask step."""
    names = instance.spec.parameters(
        has_bias=instance.bias is not None, present=instance.conditions
    )
    if instance.backward:
        names += ("grad",)
    steps = [step for step in instance.epilogue if step.kind in TENSOR_EPILOGUES]
    return names + tuple(f"other{i}" for i, _ in enumerate(steps))


def implied_requirements(instance: ScenarioInstance) -> Requirements:
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
