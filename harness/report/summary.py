"""The compact terminal summary printed at the end of every run.

One table: a row per (backend, op, dtype), a column per outcome (failing outcomes first, columns
that are zero everywhere left out), zeros printed as "." so that what is not a pass stands out.
It opens with the run's failures grouped by cause (`gemmconf.report.groups`), largest group
first, each with a representative and the command that writes its standalone repro.
A run of thousands of items stays on one screen: past `max_rows` rows, the rows without a failing
item fold into one line (their counts still shown); if the failing rows alone are too many, rows
become (backend, op). Then the failing (and expected-to-fail) items of each backend by failure
kind, so that "unsupported" and "wrong values" are never one number; the hardware skips by the
class they need; and the first few failing items with their kind and reason, one line each.

Who computed each pass and whose failure each failure is (gemmconf.attribution): the passes a
backend's own code computed are counted apart from those PyTorch computed for it, and failures
inherited from eager or torch.compile apart from the backend's own (a column of their own;
`count_inherited` counts them in), listed after them.
"""

from __future__ import annotations

import functools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gemmconf import attribution
from gemmconf.record import Record, typed
from gemmconf.report.groups import group_failures, summary_lines
from gemmconf.report.quoting import terminal
from gemmconf.report.results import FAILING, count_kinds, is_failing

# column order: what needs attention first
COLUMNS = (
    ("failed", "FAIL"),
    ("error", "ERROR"),
    ("xpassed", "XPASS"),
    # an expected failure that passed, PyTorch computing it (a fix that falls back to aten)
    ("xpassed_by_pytorch", "XPASS (PyTorch)"),
    ("inherited", "inherited"),  # failed, inherited from eager or torch.compile (attribution)
    ("passed", "pass"),
    # passed, but PyTorch computed it: the backend's call ran aten's own GEMM (attribution)
    ("passed_by_pytorch", "pass (PyTorch)"),
    ("xfailed", "xfail"),
    ("skipped", "skip"),
)
SHORT = dict(COLUMNS)
SHOWN_FIRST = (
    *FAILING,
    "xpassed_by_pytorch",
    "inherited",
)  # rows with these are shown, the others may fold
MAX_ROWS = 40
MAX_FAILURES = 5
WIDTH = 120

Row = tuple[tuple[str, str, str], Counter]


def render_terminal_summary(
    records: Iterable[Record | Mapping[str, Any]],
    capability: Any,
    *,
    max_rows: int = MAX_ROWS,
    max_failures: int = MAX_FAILURES,
    specs: Mapping[str, str] | None = None,
    seed: int | None = None,
    count_inherited: bool = False,
) -> list[str]:
    """The summary's lines; `specs` (label -> the --backend text that named it) and `seed` make
    the repro commands of the failure groups; `count_inherited` counts inherited failures
    among the backends' own (FAIL), where by default they have a column of their own."""
    records = typed(records)
    column = functools.partial(_column, count_inherited=count_inherited)
    total = Counter(column(r) for r in records)
    lines = [
        "",
        f"gemmconf summary: {len(records)} items on {capability.name} "
        f"({capability.hardware_class})",
    ]
    groups = summary_lines(group_failures(records), specs=specs, seed=seed, width=WIDTH)
    lines += [terminal(line) for line in groups]  # their reasons are a backend's text
    shown, folded, by_dtype = _rows(records, max_rows, column)
    columns = [(key, title) for key, title in COLUMNS if total[key]]

    table = [["backend", "op", "dtype" if by_dtype else "dtypes", *(title for _, title in columns)]]
    table += [[*key, *(_cell(counts[k]) for k, _ in columns)] for key, counts in shown]
    fold_label = ""
    if folded:
        rest = sum((counts for _, counts in folded), Counter())
        fold_label = f"({len(folded)} more rows, none failing)"
        table.append([fold_label, "", "", *(_cell(rest[k]) for k, _ in columns)])
    table.append(["total", "", "", *(_cell(total[k]) for k, _ in columns)])

    widths = [
        max(len(row[i]) for row in table if row[0] != fold_label or i > 0)
        for i in range(len(table[0]))
    ]
    widths[2] += max(0, len(fold_label) - (widths[0] + widths[1] + widths[2] + 4))
    for row in table:
        if folded and row[0] == fold_label:
            text = fold_label.ljust(widths[0] + widths[1] + widths[2] + 4)
        else:
            text = "  ".join(c.ljust(w) for c, w in zip(row[:3], widths[:3], strict=True))
        numbers = "  ".join(c.rjust(w) for c, w in zip(row[3:], widths[3:], strict=True))
        lines.append(f"  {text}  {numbers}".rstrip())

    lines += _kind_lines(records, count_inherited)
    lines += _computed_lines(records)
    lines += _borderline_lines(records)
    lines += _longest_lines(records)
    hardware_skips = Counter(
        r.skip_class for r in records if r.outcome == "skipped" and r.skip_class
    )
    if hardware_skips:
        classes = ", ".join(f"{n} need {c}" for c, n in sorted(hardware_skips.items()))
        line = f"  skipped for hardware: {sum(hardware_skips.values())} ({classes});"
        hint = "--require-hardware CLASS turns these into failures"
        lines += [f"{line} {hint}"] if len(line) + len(hint) < WIDTH else [line, f"    {hint}"]
    return lines + _failure_lines(records, max_failures)


def _failure_lines(records: list[Record], max_failures: int) -> list[str]:
    """The first failing items, one line each: the backends' own failures first, then those
    eager is expected to fail too, then the inherited ones; then the non-strict xpasses."""
    failing = sorted(
        (r for r in records if is_failing(r)),
        key=lambda r: (attribution.is_inherited(r), r.eager_fails),
    )
    # then the xpasses of non-strict expectations: no failure, but worth a line each
    listed = failing + [r for r in records if r.outcome == "xpassed" and not is_failing(r)]
    lines = []
    for record in listed[:max_failures]:
        head = f"  {SHORT[record.outcome]} {record.id}@{record.backend}"
        if record.kind:
            head += f" ({record.kind})"
        if attribution.is_inherited(record):
            head += f" [inherited from {record.inherited}]"
        reason = " ".join((record.reason or "").split())
        room = max(WIDTH - len(head) - 3, 40)  # like pytest's short summary: one line each
        if len(reason) > room:
            reason = reason[: room - 3] + "..."
        lines.append(terminal(f"{head} - {reason}" if reason else head))  # a backend's text
    if len(listed) > max_failures:
        more = len(failing) - max_failures
        what = f"{more} more failing items" if more > 0 else "more non-strict xpasses"
        lines.append(
            f"  ... and {what} (all on the run's conformance page, or gemmconf report html "
            "RESULTS.json)"
        )
    return lines


def _column(record: Record, *, count_inherited: bool) -> str:
    """The table column a record counts in: its outcome, "inherited" for a failure inherited
    from eager or torch.compile (unless those count among the backend's own), and
    "passed_by_pytorch" for a pass PyTorch computed (a graph with no GEMM handed to the
    backend: a torch-mlir trial, 2026-12-01, saw its `pass` column count such passes), and
    "xpassed_by_pytorch" for an XPASS PyTorch computed (a torchao trial, 2026-12-02: its fixes,
    all fallbacks to aten, read as the backend's XPASSes)."""
    if record.outcome == "failed" and not count_inherited and attribution.is_inherited(record):
        return "inherited"
    if record.outcome in ("passed", "xpassed") and record.computed_by == attribution.PYTORCH:
        return f"{record.outcome}_by_pytorch"
    return record.outcome


def _lines(title: str, parts: list[str]) -> list[str]:
    """`title` and its parts on one line where it fits, else one part a line under it."""
    line = f"  {title} " + "; ".join(parts)
    if len(line) <= WIDTH:
        return [line]
    return [f"  {title}"] + [f"    {part}" for part in parts]


def _by_kind(records: list[Record], outcomes: tuple[str, ...] | None = None) -> list[str]:
    """Per backend, "backend: kind n, kind n" of its records of `outcomes` (count_kinds)."""
    parts = []
    for backend in sorted({r.backend for r in records}):
        counts = count_kinds([r for r in records if r.backend == backend], outcomes)
        if counts:
            parts.append(f"{backend}: " + ", ".join(f"{k} {n}" for k, n in counts.items()))
    return parts


def _kind_lines(records: list[Record], count_inherited: bool) -> list[str]:
    """Per backend, its failing items by kind (its own, unless `count_inherited`), its
    inherited failures by whom from, its expected failures by kind, and the failures eager is
    expected to share that are the backend's own all the same."""
    counted = [r for r in records if count_inherited or not _inherited_failure(r)]
    lines = _lines("failing by kind:", parts) if (parts := _by_kind(counted)) else []
    parts = []
    for backend in sorted({r.backend for r in records}):
        found = attribution.inherited_failures(r for r in records if r.backend == backend)
        if found:
            whom = "; ".join(f"{attribution.INHERITED_TEXT[k]}: {n}" for k, n in found.items())
            parts.append(f"{backend} {sum(found.values())} ({whom})")
    if parts:
        counted_in = (
            "counted above, --count-inherited"
            if count_inherited
            else "not counted above; --count-inherited counts them in"
        )
        lines += _lines(f"inherited failures ({counted_in}):", parts)
    if parts := _by_kind(records, ("xfailed",)):
        lines += _lines("expected to fail by kind:", parts)
    shared = []
    for backend in sorted({r.backend for r in records}):
        failing = [r for r in records if r.backend == backend and is_failing(r)]
        own = sum(1 for r in failing if r.eager_fails and not attribution.is_inherited(r))
        if own:
            shared.append(f"{backend} {own} of its {len(failing)}")
    if shared:  # eager fails them too, but PyTorch did not compute them for the backend
        lines.append(
            "  failing where eager is expected to fail too, not inherited (the backend computed "
            "them, or failed otherwise than eager's entry expects, or was not observed): "
            + "; ".join(shared)
            + " (records with eager_fails true and no inherited; each one's details name "
            "eager's expected failure)"
        )
    return lines


def _inherited_failure(record: Record) -> bool:
    return record.outcome == "failed" and attribution.is_inherited(record)


def _computed_lines(records: list[Record]) -> list[str]:
    """Per backend, its passes by who computed them: `2,261 passed (7 computed by the backend,
    2,254 by PyTorch)`. Nothing for records without `computed_by` alone (older files)."""
    if not any(r.computed_by for r in records):
        return []
    parts = []
    for backend in sorted({r.backend for r in records}):
        own = [r for r in records if r.backend == backend]
        counts = attribution.passes_by_computer(own)
        if counts:
            parts.append(f"{backend} {attribution.passes_text(own)}")
    return _lines("who computed the passes:", parts) if parts else []


def _borderline_lines(records: list[Record]) -> list[str]:
    """Per backend, its passes with a shape set left undecided at the bar (gemmconf.drawing):
    they pass, their error is at the bar, and a lossy backend's author reads them apart."""
    parts = []
    for backend in sorted({r.backend for r in records}):
        passed = [r for r in records if r.backend == backend and r.outcome == "passed"]
        borderline = sum(1 for r in passed if r.metric.borderline)
        if borderline:
            parts.append(f"{backend} {borderline} of its {len(passed)} passes")
    title = "borderline passes (error at the bar, fresh draws undecided; details give the rounds):"
    return _lines(title, parts) if parts else []


# An item that took at least this share of the items' time, and LONGEST_S seconds, is named (a
# gemlite trial, 2026-12-02: one near-bar item in Triton's interpreter took 718 s, 42% of the
# run's item time, and nothing said which)
LONGEST_SHARE = 0.2
LONGEST_S = 60.0
LONGEST_SHOWN = 3


def _longest_lines(records: list[Record]) -> list[str]:
    """The items that took most of the run's item time, each with its longest phase and, where
    its verdict was decided near the bar, its rounds of fresh draws (gemmconf.drawing)."""
    total = math.fsum(r.duration_s or 0.0 for r in records)
    longest = sorted(
        (r for r in records if (r.duration_s or 0.0) >= max(LONGEST_S, LONGEST_SHARE * total)),
        key=lambda r: -(r.duration_s or 0.0),
    )[:LONGEST_SHOWN]
    parts = []
    for record in longest:
        share = 100.0 * (record.duration_s or 0.0) / total
        why = []
        if record.phase_s:
            phase, seconds = max(record.phase_s.items(), key=lambda p: p[1])
            why.append(f"{phase} {seconds:.0f} s")
        if (record.metric.rounds or 0) > 1:  # one round: decided far from the bar
            why.append(f"{record.metric.rounds} rounds of fresh draws near its bar")
        detail = f" ({'; '.join(why)})" if why else ""
        parts.append(
            f"{record.id}@{record.backend} {record.duration_s:.0f} s, {share:.0f}% of the "
            f"items' time{detail}"
        )
    return _lines("longest items:", parts) if parts else []


def _rows(
    records: list[Record], max_rows: int, column: Callable[[Record], str]
) -> tuple[list[Row], list[Row], bool]:
    """The rows to show, the rows folded away, and whether rows are per dtype: every row when
    they fit, else the failing ones (the rest folded into one line); when nothing fails, rows
    per op where per dtype they do not fit, rather than a table of the fold line alone."""
    for by_dtype in (True, False):
        rows: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
        for record in records:
            dtype = str(record.dtype) if by_dtype else "(all)"
            rows[(record.backend, str(record.op), dtype)][column(record)] += 1
        shown = sorted(rows.items())
        if len(shown) <= max_rows:
            return shown, [], by_dtype
        failing = [(k, c) for k, c in shown if any(c[o] for o in SHOWN_FIRST)]
        if failing and len(failing) <= max_rows:
            rest = [(k, c) for k, c in shown if not any(c[o] for o in SHOWN_FIRST)]
            return failing, rest, by_dtype
    return failing, [(k, c) for k, c in shown if not any(c[o] for o in SHOWN_FIRST)], False


def _cell(value: int) -> str:
    return str(value) if value else "."
