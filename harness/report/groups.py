"""A run's failures grouped by cause, largest group first: what the terminal summary and the
conformance page open with (a trial's 1,105 failures were 10 causes, from 617 items down to 2).

Failures share a group when they are of one backend, one failure kind, one attribution (the
backend's own, or inherited from eager or torch.compile: gemmconf.attribution), and one reason
signature: the first line of the reason with what differs between items of one cause taken out
(numbers, shapes, the dtype row of the tolerance), and the same of the first error diagnostic
the worker printed on stderr, where it printed one (`Record.printed_error`: IREE's "JIT
compilation failed. See diagnostics." stood for four compiler errors in a trial of 2026-11-30,
one group of 311 items). A group says what its items have in common beyond that: their ops, and
each scenario axis whose failing values are only some of the values the run had for those
scenarios (`bias M1, N (of 4)`: the items with the other bias shapes passed), the axes its most
items have first; an axis that only some of the group's items have says how many (`zero m0, n0
(of 4; in 2 of the 350 items)`: an OpenVINO trial, 2026-11-30, whose 350 crashes of padded
layouts read as zero-size ones). Each group names one representative, its smallest item, and
the command that writes that item's standalone repro.

Only records are read (the "Reports read only records" contract): the terminal summary and the
page group the same records the same way.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gemmconf import attribution
from gemmconf.ids import NO_STANDALONE, standalone_command
from gemmconf.record import Record, typed
from gemmconf.report.results import is_failing

# What varies between the items of one cause, in the order it is taken out of a reason
_SIGNATURE_RULES = (
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "#"),  # addresses (not the 0xbf16 of 1x40xbf16)
    # MLIR's shaped types by their element type: memref<64x64xbf16>, tensor<?x0xf32>, memref<*xf32>
    (re.compile(r"\b(memref|tensor|vector)<(?:(?:\d+|\?|\*)x)*"), r"\1<"),
    (re.compile(r"'[^']*\[[^']*\]'"), "'ID'"),  # a quoted item id
    # torch's legacy tensor type names: CPUBFloat16Type, torch.HalfTensor, torch.cuda.FloatTensor
    (
        re.compile(
            r"\b(?:torch\.(?:cuda\.)?)?(?:CPU|CUDA)?(?:BFloat16|Half|Float|Double|Int|Long|Short"
            r"|Char|Byte|Bool|ComplexFloat|ComplexDouble)(?:Type|Tensor)\b"
        ),
        "T",
    ),
    (re.compile(r"\b(?:fp64|fp32|tf32|fp16|bf16|fp8_fast_accum|fp8|e4m3fn|e5m2|int8)\b"), "T"),
    # ... and its scalar type names as torch's checks print them ("but got Half and BFloat16",
    # "Float and Double": a gemlite trial, 2026-12-02: one cause, six groups)
    (re.compile(r"\b(?:BFloat16|Half|Float|Double|ComplexFloat|ComplexDouble)\b"), "T"),
    (re.compile(r"\b(?:float|bfloat|int)(?:8|16|32|64)\b"), "T"),  # torch dtype names
    # C++ element type names in torch's messages (c10::BFloat16, c10::Half, float, signed char)
    (re.compile(r"\bc10::\w+|\b(?:(?:un)?signed )?char\b|\b(?:double|float|half)\b"), "T"),
    (re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"), "#"),  # numbers, shapes' parts
    (re.compile(r"#(?:\s*[x,]\s*#)+"), "#"),  # 64x64x64, (4, 7)
    # a shape set's sizes by name, whichever dimensions the op has: (M=# N=# K=#), (B=# M=# ...)
    (re.compile(r"\((?:\s*[A-Z][A-Za-z0-9_]*=#)+\s*\)"), "(#)"),
    # where in the item a numeric failure was: the judgment's "(bf16, K=40, output [1])",
    # "(bf16, longest sum 65, output [0], the forward result)", "(..., the gradient of a)": one
    # cause over an item's outputs (a torchao trial: one precision loss in four groups)
    (re.compile(r"\(T, (?:[A-Z]=#|longest sum #)(?:, [^()]*)?\)"), "(T, …)"),
    (re.compile(r"\s+"), " "),
)
_CALL = re.compile(r"\b[A-Za-z_][\w.]*\((?!\))")  # a name and "(" with arguments after it
# where in an item a failure happened: " on shape set 0 (M=4 N=4 K=4)" (gemmconf.outcome's stages)
_WHERE = re.compile(r" on shape set \d+ \([^)]*\)")
# An exception whose message is only the repr of another, `InterpreterError: TypeError(…)`,
# before the error it was raised from: Triton's interpreter wraps an error once per @triton.jit
# helper it passed through (`InterpreterError(repr(e))`), so one cause read as one group per
# call depth (the reference backend on triton 3.6 without a GPU, 2026-12-02: 2,684 and 53).
_WRAPPED_REPR = re.compile(r": (?:[A-Za-z_][\w.]*\(…\)\s*)+(?=\(raised from )")
SIGNATURE_CHARS = 160  # of a reason's first line: past it, messages differ in detail only
PRINTED_CHARS_SHOWN = 240  # of a printed diagnostic, in a group's title
_ERROR_WORD = re.compile(r"(?:fatal )?error:", re.IGNORECASE)
# where an MLIR diagnostic's message ends and the operation it quotes begins: `: %0 = "op"(...)`
# or `: "op"(...)`
_QUOTED_OPERATION = re.compile(r": (?=[%\"])")
# An axis with more failing values than this is a pattern only where they are at most half of
# its values (8 padded layouts of 23); else most of a long axis failing is none
PATTERN_VALUES = 6
# Terminal lines a group's title, or what its items share, may take before it is cut: a title cut
# at one line showed "crash: Backend raised during the call: torch._inductor.select_algorithm..."
# for 470 failures of an inductor CPP-template trial (2026-12-01), its message out of sight
SUMMARY_LINES = 3


@dataclass(frozen=True)
class FailureGroup:
    """Failures of one backend with one cause (module docstring), largest first in a list."""

    backend: str
    kind: str
    inherited: str | None  # "eager" or "torch.compile" (gemmconf.attribution); None: its own
    signature: str
    ids: tuple[str, ...]  # every failing item's record id, in id order
    representative: Record  # the group's smallest record
    pattern: tuple[str, ...]  # what the items have in common: "op addmm", "bias M1, N (of 4)"
    # the members' err_ratio (smallest, median, largest), where two or more have one: the title
    # is the smallest item's reason, and a group of 452 headed "err_ratio 24.77" had a median
    # of 2e4 (a torchao trial, 2026-12-02)
    err_ratios: tuple[float, float, float] | None = None
    err_ratio_count: int = 0
    # who computed the members' calls, where aten's kernels had a hand (attribution.failures_text)
    computed: str | None = None

    @property
    def size(self) -> int:
        return len(self.ids)

    @property
    def reason(self) -> str:
        """The representative's reason, first line: the group's cause in the backend's words,
        without the shape set it happened on (`_WHERE`: every item has its own, and in a title
        cut to a terminal's width the shape would take the room of the error)."""
        reason = self.representative.reason or self.kind or "failed"
        if self.kind == "xpassed" and reason.strip() in ("", "xpassed"):
            # an xpass judged again (`gemmconf expect`) has no reason of its own: say what it is
            # (a gemlite trial read "91 failures (xpassed): xpassed")
            return "passed, where a strict xfail entry expects it to fail (a stale entry?)"
        if not reason.strip():
            return self.kind
        return _WHERE.sub("", " ".join(reason.splitlines()[0].split()))

    @property
    def printed(self) -> str | None:
        """The first error diagnostic the representative's worker printed, where it printed one
        (`Record.printed_error`), from its "error:" on (MLIR's location before it names our
        program, and took the room of the cause: a torch-mlir trial, 2026-12-01)."""
        printed = self.representative.printed_error
        if printed is None:
            return None
        at = _ERROR_WORD.search(printed)
        return (printed[at.start() :] if at else printed)[:PRINTED_CHARS_SHOWN]

    @property
    def printed_stream(self) -> str:
        """Where `printed` was printed: "stderr" or "stdout"."""
        return self.representative.printed_stream or "stderr"

    @property
    def cause(self) -> str:
        """The reason, and the printed diagnostic where there is one."""
        if self.printed is None:
            return self.reason
        return f"{self.reason} ({self.printed_stream}: {self.printed})"

    def title(self, *, printed: bool = True) -> str:
        """`18 failures (wrong values): Tensor-likes are not close! ...` (`printed`: with the
        printed diagnostic, which the terminal gives a line of its own)."""
        noun = "failure" if self.size == 1 else "failures"
        inherited = f", inherited from {self.inherited}" if self.inherited else ""
        cause = self.cause if printed else self.reason
        return f"{self.size} {noun} ({self.kind}{inherited}): {cause}"

    def repro_command(self, spec: str | None = None, seed: int | None = None) -> str:
        """`gemmconf repro ID --backend SPEC`: the representative's standalone repro."""
        return standalone_command(
            self.representative.id,
            spec or self.backend,
            seed=seed,
            target_arch=self.representative.target_arch or None,
        )

    @property
    def has_repro(self) -> bool:
        """Whether a standalone repro can be written for the representative (`_has_repro`;
        `_smallness` picks a member that has one, if any does)."""
        return _has_repro(self.representative)

    @property
    def rerun_node(self) -> str:
        """The representative's node id (`pytest NODEID` in a checkout runs it again)."""
        return self.representative.nodeid or self.representative.id

    def repro_line(self, spec: str | None = None, seed: int | None = None) -> str:
        """`repro: gemmconf repro ...`, or where no member has one, the node id that runs the
        representative again."""
        if self.has_repro:
            return f"repro: {self.repro_command(spec, seed)}"
        return f"no standalone repro; its node id runs it again: {self.rerun_node}"


def signature(reason: str | None) -> str:
    """A reason's first line with numbers, shapes, addresses, dtype names and the arguments of
    the calls it quotes taken out, and an exception whose message only wraps another's repr
    left as its type where the reason names the error it was raised from."""
    text = (reason or "").strip().splitlines()[0] if (reason or "").strip() else ""
    for pattern, replacement in _SIGNATURE_RULES:
        text = pattern.sub(replacement, text)
    return _WRAPPED_REPR.sub(": ", _without_call_arguments(text)).strip()[:SIGNATURE_CHARS]


def _without_call_arguments(text: str) -> str:
    """`R.add(lv1, inp_2)` and `R.Tensor((#), dtype="T")` as `R.add(…)` and `R.Tensor(…)`: a
    compiler that quotes its IR names the values of each program apart (a TVM trial, 2026-12-01:
    one cause in five groups by `lv`, `lv1` and `inp_2`). A call is a name right before "(";
    its arguments end at the matching ")" (or the end of the line)."""
    out, index = [], 0
    for call in _CALL.finditer(text):
        if call.start() < index:
            continue  # inside arguments already taken out
        depth, end = 0, len(text)
        for position in range(call.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[position], 0)
            if depth == 0:
                end = position + 1
                break
        out.append(text[index : call.end()] + "…)")
        index = end
    return "".join(out) + text[index:]


def group_failures(records: Sequence[Record | Mapping[str, Any]]) -> list[FailureGroup]:
    """The failing records (`results.is_failing`) grouped by cause: the backend's own groups
    first, largest first, then the inherited ones; ties in id order."""
    records = typed(records)
    clusters: dict[tuple[str, str, str | None, str, str], list[Record]] = {}
    for record in records:
        if not is_failing(record):
            continue
        key = (
            record.backend,
            record.kind or record.outcome,
            record.inherited if attribution.is_inherited(record) else None,
            signature(record.reason),
            _printed_key(record.printed_error),
        )
        clusters.setdefault(key, []).append(record)
    groups = [
        FailureGroup(
            backend=backend,
            kind=kind,
            inherited=inherited,
            signature=sign,
            ids=tuple(sorted(r.id for r in members)),
            representative=min(members, key=_smallness),
            pattern=pattern(members, records),
            computed=attribution.failures_text(members),
            **_err_ratios(members),
        )
        for (backend, kind, inherited, sign, _), cluster in clusters.items()
        for members in _by_dtype_where_apart(cluster)
    ]
    return sorted(groups, key=lambda g: (g.inherited is not None, -g.size, g.backend, g.ids[0]))


# A group's dtypes whose errors differ by more than this factor are groups of their own: a
# gemlite trial (2026-12-02) had int8 weights' loss and a bf16 kernel's garbage (err_ratio 1e9 to
# 1e16) in one "wrong values" group of 419, titled by its smallest item. An err_ratio is measured
# against the dtype's own precision, so one cause errs about UNIT_ROUNDOFF times more in fp32
# than in bf16 (a torchao trial: fp32 about 2e4, bf16 about 5, one int8 product): dtypes are
# compared by err_ratio times that unit.
DTYPES_APART = 100.0
# each dtype name's unit roundoff (torch.finfo(...).eps / 2; TF32's 10-bit mantissa), here
# because the reports do not import torch (pyproject's import contracts)
UNIT_ROUNDOFF = {
    "fp64": 2.0**-53,
    "fp32": 2.0**-24,
    "tf32": 2.0**-11,
    "fp16": 2.0**-11,
    "bf16": 2.0**-8,
    "e4m3fn": 2.0**-4,
    "e5m2": 2.0**-3,
}


def _by_dtype_where_apart(members: list[Record]) -> list[list[Record]]:
    """The members as one group, or split between dtypes where one's errors are more than
    DTYPES_APART times another's, both as errors (the median err_ratio times the dtype's unit
    roundoff, dtypes in that order) and as err_ratios (an error that scales with each dtype's
    precision, the same err_ratio in all, is one cause); a dtype without a unit or an err_ratio
    stays with the first group. Only err_ratios over their bar count: a group failing on
    something else (NaN/Inf positions: a FlagGems trial's NaN kept where beta = 0, its finite
    elements' err_ratios under the bar and dtype-apart, 2026-12-02) is one cause."""
    by_dtype: dict[str, list[Record]] = {}
    for record in members:
        by_dtype.setdefault(record.dtype or "", []).append(record)
    medians: dict[str, float] = {}
    for dtype, group in by_dtype.items():
        ratios = [float(r.metric.err_ratio) for r in _judged(group) if _over_bar(r)]
        if ratios and dtype in UNIT_ROUNDOFF:
            medians[dtype] = statistics.median(ratios)
    sizes = {d: m * UNIT_ROUNDOFF[d] for d, m in medians.items()}
    if len(sizes) < 2:
        return [members]

    def apart(smaller: str, larger: str) -> bool:  # both as errors and as err_ratios
        return all(
            measure[larger] > DTYPES_APART * max(measure[smaller], 1e-300)
            for measure in (sizes, medians)
        )

    ordered = sorted(sizes, key=sizes.__getitem__)
    clusters = [[*by_dtype[ordered[0]]]]
    for smaller, larger in itertools.pairwise(ordered):
        if apart(smaller, larger):
            clusters.append([])
        clusters[-1] += by_dtype[larger]
    clusters[0] += [r for d, group in by_dtype.items() if d not in sizes for r in group]
    return clusters


def _judged(members: Sequence[Record]) -> list[Record]:
    """The members with a finite err_ratio."""
    return [
        r for r in members if r.metric.err_ratio is not None and math.isfinite(r.metric.err_ratio)
    ]


def _over_bar(record: Record) -> bool:
    """A judged member whose err_ratio is over its bar (a bar of None: never)."""
    return record.metric.err_ratio > (record.metric.max_ratio or math.inf)


def _err_ratios(members: Sequence[Record]) -> dict[str, Any]:
    """The members' err_ratio spread (FailureGroup.err_ratios), where two or more have one and
    some are over their bar: a group of NaN/Inf positions or of attributes fails otherwise."""
    judged = _judged(members)
    ratios = sorted(float(r.metric.err_ratio) for r in judged)
    over = any(_over_bar(r) for r in judged)
    if len(ratios) < 2 or not over:
        return {}
    return {
        "err_ratios": (ratios[0], statistics.median(ratios), ratios[-1]),
        "err_ratio_count": len(ratios),
    }


def _printed_key(printed: str | None) -> str:
    """A printed diagnostic's message as a group key: its signature, without where it was
    (`source.mlir:6:14: error: `) and without the operation an MLIR diagnostic prints after it
    (`...'torch.constant.bool': %0 = ... {value = true}` differs by the value). The rest of the
    message stays: `JIT session error: Symbols not found: [ __truncdfhf2 ]` and `[ __truncsfbf2 ]`
    are two missing symbols (a torch-mlir trial, 2026-12-01: one group of 12 named the first)."""
    if printed is None:
        return ""
    message = re.split(r"error:\s*", printed, maxsplit=1, flags=re.IGNORECASE)[-1]
    return signature(_QUOTED_OPERATION.split(message, maxsplit=1)[0])


def _has_repro(record: Record) -> bool:
    """Whether a standalone repro can be written for a failing record: where none can, its
    details say so (`ids.NO_STANDALONE`)."""
    return NO_STANDALONE not in (record.details or "")


def _smallness(record: Record) -> tuple[bool, bool, float, str]:
    """The representative's order: an item with a standalone repro before one without, an item
    with elements before a zero-size one, then the smallest."""
    sizes = [v for v in (record.dims or {}).values() if isinstance(v, int | float)]
    size = math.prod(sizes) if sizes else math.inf
    return (not _has_repro(record), size == 0, size, record.id)


def pattern(members: Sequence[Record], records: Sequence[Record]) -> tuple[str, ...]:
    """What `members` have in common, beyond their cause: their ops, and each axis whose values
    among them are only some of those the run had for the same scenarios and backend."""
    scenarios = {(r.suite, r.scenario, r.backend) for r in members}
    population = [r for r in records if (r.suite, r.scenario, r.backend) in scenarios]
    found = [f"op {_listed(sorted({str(r.op) for r in members}))}"]
    axes = sorted({"dtype"} | {axis for r in members for axis in (r.axes or {})})
    having = {axis: _having(members, axis) for axis in axes}
    for axis in sorted(axes, key=lambda axis: -having[axis]):
        failing = _values(members, axis)
        every = _values(population, axis)
        if failing != every and len(failing) <= max(PATTERN_VALUES, len(every) / 2):
            some = having[axis] < len(members)
            part = f"; in {having[axis]} of the {len(members)} items" if some else ""
            found.append(f"{axis} {_listed(sorted(failing))} (of {len(every)}{part})")
    if len(found) == 1:
        names = sorted({f"{r.suite}/{r.scenario}" for r in members})
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        share = (
            "every item"
            if len(members) == len(population)
            else (f"{len(members)} of the {len(population)} items")
        )
        found.append(f"{share} of {shown}")
    return tuple(found)


def _listed(values: Sequence[str]) -> str:
    shown = ", ".join(values[:PATTERN_VALUES])
    return shown + (
        f" and {len(values) - PATTERN_VALUES} more" if len(values) > PATTERN_VALUES else ""
    )


def _having(records: Sequence[Record], axis: str) -> int:
    """How many of `records` have `axis` (every record has a dtype)."""
    if axis == "dtype":
        return len(records)
    return sum(1 for r in records if r.axes and axis in r.axes)


def _values(records: Sequence[Record], axis: str) -> set[str]:
    """The values of `axis` among `records`; the dtype of every record (a scenario that fixes it
    has no such axis), of other axes those of the records that have the axis."""
    if axis == "dtype":
        return {str(r.dtype) for r in records}
    return {str(r.axes[axis]) for r in records if r.axes and axis in r.axes}


def summary_lines(
    groups: Sequence[FailureGroup],
    *,
    specs: Mapping[str, str] | None = None,
    seed: int | None = None,
    limit: int = 8,
    width: int = 120,
) -> list[str]:
    """The groups for a terminal: three lines each (the title, what the items share, the
    command that writes the representative's repro) and a fourth with the diagnostic the
    worker printed where there is one, at most `limit` groups, then a line for the rest. A
    title or a list of what the items share that is wider than `width` goes on over at most
    SUMMARY_LINES lines (indented deeper), then is cut."""
    if not groups:
        return []
    total = sum(g.size for g in groups)
    lines = [f"  failures by cause ({total} in {len(groups)} group{'s' * (len(groups) != 1)}):"]

    def wrapped(line: str) -> list[str]:
        """`line` over at most SUMMARY_LINES lines of `width`, continued eight spaces in."""
        return textwrap.wrap(
            line,
            width,
            subsequent_indent=" " * 8,
            break_on_hyphens=False,
            max_lines=SUMMARY_LINES,
            placeholder="...",
        ) or [line]  # nothing to wrap (no pattern): the line as before

    for group in groups[:limit]:
        head = f"    {group.title(printed=False)}"
        if len(groups) > 1 or len({g.backend for g in groups}) > 1:
            head = f"    {group.backend}: {group.title(printed=False)}"
        lines += wrapped(head)
        if group.printed is not None:  # what tells groups of one generic message apart
            lines += wrapped(f"      {group.printed_stream}: {group.printed}")
        lines += wrapped(f"      {'; '.join(group.pattern)}")
        if group.err_ratios is not None:
            low, median, high = group.err_ratios
            lines.append(
                f"      err_ratio {low:.3g} to {high:.3g}, median {median:.3g} "
                f"(of {group.err_ratio_count} items)"
            )
        if group.computed is not None:
            lines += wrapped(f"      {group.computed}")
        spec = (specs or {}).get(group.backend)
        lines.append(f"      {group.repro_line(spec, seed)}")  # whole: it is pasted
    rest = groups[limit:]
    if rest:
        lines.append(
            f"    ... and {len(rest)} more group(s) of {sum(g.size for g in rest)} failure(s) "
            "(all on the run's conformance page, and `gemmconf report groups RESULTS.json`)"
        )
    return lines


def page_groups(
    groups: Sequence[FailureGroup],
    *,
    specs: Mapping[str, str] | None = None,
    seed: int | None = None,
) -> list[dict[str, Any]]:
    """The groups as the conformance page shows them (JSON-ready)."""
    return [
        {
            "backend": g.backend,
            "kind": g.kind,
            "inherited": g.inherited,
            "size": g.size,
            "title": g.title(),
            "cause": g.cause,
            "pattern": list(g.pattern),
            "err_ratios": None if g.err_ratios is None else list(g.err_ratios),
            "computed": g.computed,
            "representative": g.representative.id,
            "repro": g.repro_command((specs or {}).get(g.backend), seed) if g.has_repro else None,
            "rerun": None if g.has_repro else g.rerun_node,
            "ids": list(g.ids),
        }
        for g in groups
    ]
