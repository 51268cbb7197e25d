"""Shape expressions: ``K``, ``K+1``, ``2*M``, ``16`` over the dims B, M, N, K."""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Mapping

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
    return ast.parse(expr, mode="eval")


@functools.lru_cache(maxsize=4096)
def _names(expr: str) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(_parsed(expr)) if isinstance(n, ast.Name))


def expr_names(expr: str | int) -> set[str]:
    if isinstance(expr, int):
        return set()
    return set(_names(str(expr)))
