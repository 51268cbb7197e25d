"""Shape expressions: ``K``, ``K+1``, ``2*M``, ``16`` over the dims B, M, N, K.

An expression is at most `MAX_EXPRESSION_CHARS` long (the suite's longest is ``K + 16``): a
20,000-term sum ended a run in a RecursionError inside Python's parser: past it, or nested
deeper than Python's parser goes, an expression is a ValueError."""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Mapping

MAX_EXPRESSION_CHARS = 200

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
        return walk(_parsed(str(expr)))
    except SyntaxError as exc:
        raise ValueError(f"unsupported shape expression {expr!r}") from exc


@functools.lru_cache(maxsize=4096)
def _parsed(expr: str) -> ast.Expression:
    """An expression's tree, parsed once per process (a suite repeats a few dozen of them some
    40,000 times); the trees are only read."""
    if len(expr) > MAX_EXPRESSION_CHARS:
        raise ValueError(
            f"shape expression of {len(expr):,} characters, past the limit of "
            f"{MAX_EXPRESSION_CHARS}: {expr[:40]!r}..."
        )
    try:
        return ast.parse(expr, mode="eval")
    except (RecursionError, MemoryError):  # nesting Python's parser refuses to build
        raise ValueError(f"shape expression nested too deep: {expr[:40]!r}...") from None


@functools.lru_cache(maxsize=4096)
def _names(expr: str) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(_parsed(expr)) if isinstance(n, ast.Name))


def expr_names(expr: str | int) -> set[str]:
    if isinstance(expr, int):
        return set()
    return set(_names(str(expr)))
