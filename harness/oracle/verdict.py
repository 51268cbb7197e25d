"""The oracle's verdict (`Verdict`: every check made and the numbers behind it, never a bare
bool) and its words: `Verdict.message`, the one formatter, torch.testing-style, whose first line
stands alone."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# The checks about an output's values (a failure of one is "wrong values"); every other check is
# about its attributes (dtype, shape, device, layout, strides: "wrong layout").
VALUE_CHECKS = ("values", "nonfinite", "precision")


@dataclass(frozen=True)
class Check:
    """One attribute or value check; `output` locates it in a multi-output result."""

    name: str
    passed: bool
    message: str
    output: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """The numeric verdict on one output, or on all outputs of a function (`parts`)."""

    passed: bool
    checks: tuple[Check, ...]
    max_abs_err: float | None
    max_rel_err: float | None
    err_ratio: float | None
    eager_abs_err: float | None
    floor: float | None
    allowed_abs_err: float | None  # max_ratio * max(eager error, floor); one ulp more per element
    mismatches: int
    numel: int
    worst_index: tuple[int, ...] | None  # of the greatest absolute difference
    policy: str = ""
    max_ratio: float | None = None
    k: int | None = None
    k_name: str = "K"  # what `k` is: a backward item's is the longest sum its outputs take
    mode: str = "reference"  # "reference" (vs fp64), "eager" (no reference), "exact"
    worst_allowed: float | None = None  # what was allowed at worst_index
    rel_index: tuple[int, ...] | None = None  # of the greatest relative difference
    output: tuple[Any, ...] = ()  # where this output sits in a multi-output result
    parts: tuple[Verdict, ...] = ()  # per-output verdicts of a multi-output result
    eager_wrong: int = 0  # eager NaN/Inf elements the fp64 reference refuted (module docstring)
    label: str = ""  # what this output is, from judge's `names` ("the gradient of b")

    @property
    def attributes_failed(self) -> bool:
        """Whether a check of the output's attributes (dtype, shape, device, layout, strides,
        type) failed, not only of its values: kind "wrong layout"."""
        return any(not c.passed and c.name not in VALUE_CHECKS for c in self.checks)

    def metrics(self) -> dict[str, float | None]:
        """The error metrics a result record carries."""
        return {
            "max_abs_err": self.max_abs_err,
            "max_rel_err": self.max_rel_err,
            "err_ratio": self.err_ratio,
        }

    def message(self, *, what: str = "", repro: str = "") -> str:
        """torch.testing-style text; the first line stands alone."""
        return _format(self, what=what, repro=repro)


def path_text(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p!r}]" for p in path) or "[]"


def num_text(x: float, *, exact: bool = False) -> str:
    if math.isnan(x) or math.isinf(x):
        return str(x)
    if exact and float(x).is_integer():
        return str(int(x))
    text = f"{x:.4g}"
    return text if ("." in text or "e" in text) else text + ".0"


def _headline(v: Verdict) -> tuple[str, list[str], Check | None]:
    """The verdict's first line (without context), its context, and the check it reports."""
    context = [v.policy] if v.policy else []
    if v.k is not None:
        context.append(f"K={v.k}" if v.k_name == "K" else f"{v.k_name} {v.k}")
    failed = [c for c in v.checks if not c.passed]
    attribute = next((c for c in failed if c.name not in VALUE_CHECKS), None)
    if attribute is None:
        return _values_headline(v, failed, context)
    if any(c.name in VALUE_CHECKS for c in failed):  # a wrong dtype says more than its numbers
        head, context, _ = _values_headline(v, failed, context)
        return f"{attribute.message} {head}", context, attribute
    return attribute.message, [], attribute


def _values_headline(
    v: Verdict, failed: list[Check], context: list[str]
) -> tuple[str, list[str], Check | None]:
    values = next((c for c in failed if c.name == "values"), None)
    specials = next((c for c in failed if c.name == "nonfinite"), None)
    precision = next((c for c in failed if c.name == "precision"), None)
    if precision is not None and values is None:
        return precision.message, context, precision
    if values is not None and v.mode == "exact":
        return "Tensor-likes are not equal!", context, values
    if values is not None and v.mode == "eager":
        return "Tensor-likes are not close!", ["no fp64 reference", *context], values
    if values is not None:
        ratio = f"err_ratio {num_text(v.err_ratio or 0.0)} > {num_text(v.max_ratio or 0.0)} allowed"
        return f"Tensor-likes are not close! {ratio}", context, values
    if specials is not None:
        return "Tensor-likes are not close! NaN/Inf positions differ from eager", context, None
    if v.max_abs_err is None:
        return "Attributes match; no values to compare", context, None
    if v.mode == "exact":
        return "Tensor-likes are equal", context, None
    if v.mode == "eager":
        return "Tensor-likes are close to eager", ["no fp64 reference", *context], None
    ratio = f"err_ratio {num_text(v.err_ratio or 0.0)} <= {num_text(v.max_ratio or 0.0)} allowed"
    return f"Tensor-likes are close: {ratio}", context, None


def _body(v: Verdict, reported: Check | None) -> list[str]:
    lines = []
    if v.max_abs_err is not None and v.max_rel_err is not None:
        share = 100.0 * v.mismatches / v.numel if v.numel else 0.0
        lines.append(f"Mismatched elements: {v.mismatches} / {v.numel} ({share:.1f}%)")
        lines += [c.message for c in v.checks if c.name == "nonfinite" and not c.passed]
        exact = v.mode == "exact"
        greatest = f"Greatest absolute difference: {num_text(v.max_abs_err, exact=exact)}"
        greatest += f" at index {v.worst_index}"
        if not exact and v.worst_allowed is not None:
            greatest += f" (up to {num_text(v.worst_allowed)} allowed there)"
        lines.append(greatest)
        lines.append(
            f"Greatest relative difference: {num_text(v.max_rel_err)} at index {v.rel_index}"
        )
        if v.mode == "reference" and v.eager_abs_err is not None and v.floor is not None:
            trusted = v.allowed_abs_err is None or v.allowed_abs_err >= (v.max_ratio or 0.0) * (
                v.eager_abs_err
            )
            of = "max of these" if trusted else "the floor (eager's error not trusted here)"
            lines.append(
                f"Eager's own error against fp64: {num_text(v.eager_abs_err)}; "
                f"floor {num_text(v.floor)}; "
                f"allowed {num_text(v.max_ratio or 0.0)} x {of} = "
                f"{num_text(v.allowed_abs_err or 0.0)} (or one output ulp, where larger)"
            )
        elif v.mode == "eager" and v.floor is not None:
            lines.append(
                f"No fp64 reference: compared with eager within {num_text(v.max_ratio or 0.0)} x "
                f"floor {num_text(v.floor)} + rtol * |expected|"
            )
    lines += [
        c.message
        for c in v.checks
        if not c.passed and c is not reported and c.name not in ("values", "nonfinite")
    ]
    lines += [c.message for c in v.checks if c.name == "eager"]
    return lines


def _format(verdict: Verdict, *, what: str, repro: str) -> str:
    parts = verdict.parts or (verdict,)
    shown = [p for p in parts if not p.passed] or list(parts)
    lines: list[str] = []
    for part in shown:
        head, context, reported = _headline(part)
        where = f"output {path_text(part.output)}" if part.output else ""
        if where and part.label:
            where += f", {part.label}"
        if where:
            context = [*context, where]
        if context:
            head = f"{head.rstrip('.')} ({', '.join(context)})"
        lines.append(head)
        lines += _body(part, reported)
        if where and not part.passed:
            lines.append(f"The failure occurred for {where}.")
    if what:
        lines.append(f"Compared: {what}")
    if repro:
        lines.append(f"Reproduce: {repro}")
    return "\n".join(lines)
