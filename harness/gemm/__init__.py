"""The one place that knows GEMMs: ops (`ops.OPS`), dtypes (`dtypes.DTYPES`) and fp8 scaling
recipes (`scaling.RECIPES`). It imports torch and nothing else of gemmconf, so the harness, the
reference backend and outside backends can all derive from it (docs/adding-an-op.md)."""

from gemmconf.gemm.dtypes import DTYPES, DType
from gemmconf.gemm.ops import OPS, OperandSpec, OpSpec
from gemmconf.gemm.scaling import RECIPES, Recipe, classify

__all__ = ["DTYPES", "OPS", "RECIPES", "DType", "OpSpec", "OperandSpec", "Recipe", "classify"]
