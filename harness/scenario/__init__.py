"""Scenario files: load, validate, expand (the first step of an item's flow).

A suite file (``suites/**/*.yaml``) holds scenarios. A scenario names an op, its operands, an
epilogue, a compile mode, the checks and the hardware it needs; ``axes`` expand it into the
product of their values, ``exclude`` drops combinations. Every instance gets a stable readable id:
``<suite>/<scenario>[<axis value>-<axis value>...]``.

Validation happens at collection, and every error names ``file:line`` and the field: unknown
keys, wrong types, unknown enum values and impossible combinations (inner dimensions that do not
agree, a layout the operand cannot take, a bias on an op that has none). What each op, dtype and
scaling recipe allows comes from the domain package (`gemmconf.gemm`).

One module per job:
- `model`: `ScenarioInstance` and its parts, the vocabulary, what an instance implies;
- `source`: YAML read with the line of every mapping and key (expectation files use it too);
- `expressions`: shape expressions (``K + 1``);
- `axes`: axis value ids, the pieces of an instance id;
- `schema`: the field tables and the validation of one scenario into an instance;
- `expansion`: a suite file expanded over its axes (`load_suite`), and `discover`.
- `facts`: what an expectation entry can name about an instance, and every suite file's facts
  kept across processes (`suite_facts`).
"""

from gemmconf.scenario.axes import value_id
from gemmconf.scenario.expansion import MAX_INSTANCES, discover, load_suite
from gemmconf.scenario.expressions import eval_dim
from gemmconf.scenario.model import (
    ALPHA_BETA_OPS,
    BIAS_OPS,
    COMPILE_MODES,
    DIFFERENTIABLE_OPS,
    DIMS,
    FAST_ACCUM_OPS,
    GROUPED_OPS,
    INPUT_DTYPES,
    LAYOUTS,
    NUMERIC_POLICIES,
    OPS,
    OUT_DTYPE_OPS,
    OUT_DTYPES,
    PARAM_EPILOGUES,
    SCALED_OPS,
    SCALINGS,
    TENSOR_EPILOGUES,
    UNARY_EPILOGUES,
    VALUE_KINDS,
    Checks,
    CompiledAutograd,
    CompileSpec,
    Epilogue,
    FileCheckSpec,
    Operand,
    ScenarioError,
    ScenarioInstance,
    implied_markers,
)
from gemmconf.scenario.schema import (
    AXIS_FIELDS,
    CHECK_FIELDS,
    COMPILE_FIELDS,
    FEATURES,
    FILE_FIELDS,
    FILECHECK_FIELDS,
    HARDWARE,
    KNOWN_EXCEPTIONS,
    MAX_ELEMENTS,
    OPERAND_FIELDS,
    RAISES_FIELDS,
    REQUIRES_FIELDS,
    SCENARIO_FIELDS,
    group_extents,
)
from gemmconf.scenario.source import SUITE_SUFFIXES, LineLoader, Node, load_yaml

__all__ = [
    "ALPHA_BETA_OPS",
    "AXIS_FIELDS",
    "BIAS_OPS",
    "CHECK_FIELDS",
    "COMPILE_FIELDS",
    "COMPILE_MODES",
    "DIFFERENTIABLE_OPS",
    "DIMS",
    "FAST_ACCUM_OPS",
    "FEATURES",
    "FILECHECK_FIELDS",
    "FILE_FIELDS",
    "GROUPED_OPS",
    "HARDWARE",
    "INPUT_DTYPES",
    "KNOWN_EXCEPTIONS",
    "LAYOUTS",
    "MAX_ELEMENTS",
    "MAX_INSTANCES",
    "NUMERIC_POLICIES",
    "OPERAND_FIELDS",
    "OPS",
    "OUT_DTYPES",
    "OUT_DTYPE_OPS",
    "PARAM_EPILOGUES",
    "RAISES_FIELDS",
    "REQUIRES_FIELDS",
    "SCALED_OPS",
    "SCALINGS",
    "SCENARIO_FIELDS",
    "SUITE_SUFFIXES",
    "TENSOR_EPILOGUES",
    "UNARY_EPILOGUES",
    "VALUE_KINDS",
    "Checks",
    "CompileSpec",
    "CompiledAutograd",
    "Epilogue",
    "FileCheckSpec",
    "LineLoader",
    "Node",
    "Operand",
    "ScenarioError",
    "ScenarioInstance",
    "discover",
    "eval_dim",
    "group_extents",
    "implied_markers",
    "load_suite",
    "load_yaml",
    "value_id",
]
