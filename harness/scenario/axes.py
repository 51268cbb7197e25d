"""Axis value ids: the readable pieces of an instance id (``bf16``, ``127x65x33``, ``alpha0``),
and the ids an `exclude` or `when` entry accepts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gemmconf.scenario.model import DIMS


def value_id(value: Any, axis: str | None = None) -> str:
    """A short readable id for an axis value (used in item ids, expectations and reports).

    Numbers, booleans and None carry their axis name (``alpha0``, ``use_fast_accum``,
    ``no_bias``) so that ids stay readable; shapes read ``127x65x33`` (``4b64x64x64`` batched).
    """
    if isinstance(value, Mapping):
        if "id" in value:
            return str(value["id"])
        if set(value) <= set(DIMS):
            return shape_id(value)
        return "-".join(value_id(v, k) for k, v in value.items())
    if isinstance(value, bool):
        return (axis or "on") if value else (f"no_{axis}" if axis else "off")
    if value is None:
        return f"no_{axis}" if axis else "none"
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, Mapping) and set(v) <= set(DIMS) for v in value):
            return "_".join(shape_id(v) for v in value)
        if axis == "epilogue" or axis is None:
            return "+".join(value_id(v) for v in value) if value else "none"
        return f"{axis}_" + "".join(str(v) for v in value)
    if isinstance(value, int | float) and axis:
        return f"{axis}{value:g}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def shape_id(dims: Mapping[str, Any]) -> str:
    order = [d for d in DIMS if d in dims]
    text = "x".join(str(dims[d]) for d in order if d != "B")
    return f"{dims['B']}b{text}" if "B" in dims else text


def as_ids(value: Any, axis: str | None = None) -> set[str]:
    """The ids an exclude/when entry accepts: a value id (or a value), or a list of them."""
    values = value if isinstance(value, list) else [value]
    return {v if isinstance(v, str) else value_id(v, axis) for v in values}
