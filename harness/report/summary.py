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
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from gemmconf.report.groups import group_failures, summary_lines
from gemmconf.report.quoting import terminal
from gemmconf.report.results import FAILING, count_kinds, is_failing

# column order: what needs attention first
COLUMNS = (
    ("failed", "FAIL"),
    ("error", "ERROR"),
    ("xpassed", "XPASS"),
    ("passed", "pass"),
    ("xfailed", "xfail"),
    ("skipped", "skip"),
)
SHORT = dict(COLUMNS)
MAX_ROWS = 40
MAX_FAILURES = 5
WIDTH = 120

Row = tuple[tuple[str, str, str], Counter]


def render_terminal_summary(
    records: list[dict[str, Any]],
    capability: Any,
    *,
    max_rows: int = MAX_ROWS,
    max_failures: int = MAX_FAILURES,
    specs: Mapping[str, str] | None = None,
    seed: int | None = None,
) -> list[str]:
    """The summary's lines; `specs` (label -> the --backend text that named it) and `seed` make
    the repro commands of the failure groups."""
    total = Counter(r["outcome"] for r in records)
    lines = [
        "",
        f"gemmconf summary: {len(records)} items on {capability.name} "
        f"({capability.hardware_class})",
    ]
    groups = summary_lines(group_failures(records), specs=specs, seed=seed, width=WIDTH)
    lines += [terminal(line) for line in groups]  # their reasons are a backend's text
    shown, folded, by_dtype = _rows(records, max_rows)
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

    lines += _kind_lines(records)
    hardware_skips = Counter(
        r["skip_class"] for r in records if r["outcome"] == "skipped" and r.get("skip_class")
    )
    if hardware_skips:
        classes = ", ".join(f"{n} need {c}" for c, n in sorted(hardware_skips.items()))
        line = f"  skipped for hardware: {sum(hardware_skips.values())} ({classes});"
        hint = "--require-hardware CLASS turns these into failures"
        lines += [f"{line} {hint}"] if len(line) + len(hint) < WIDTH else [line, f"    {hint}"]
    # the backend's own failures first, then those eager is expected to fail too
    failing = sorted(
        (r for r in records if is_failing(r)), key=lambda r: bool(r.get("eager_fails"))
    )
    # then the xpasses of non-strict expectations: no failure, but worth a line each
    listed = failing + [r for r in records if r["outcome"] == "xpassed" and not is_failing(r)]
    for record in listed[:max_failures]:
        head = f"  {SHORT[record['outcome']]} {record.get('id')}@{record.get('backend')}"
        if record.get("kind"):
            head += f" ({record['kind']})"
        reason = " ".join(str(record.get("reason") or "").split())
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


def _kind_lines(records: list[dict[str, Any]]) -> list[str]:
    """Per backend, its failing items by kind, then its expected failures by kind."""
    lines = []
    titled: tuple[tuple[str, tuple[str, ...] | None], ...] = (
        ("failing", None),
        ("expected to fail", ("xfailed",)),
    )
    for title, outcomes in titled:
        parts = []
        for backend in sorted({str(r.get("backend")) for r in records}):
            counts = count_kinds([r for r in records if r.get("backend") == backend], outcomes)
            if counts:
                parts.append(f"{backend}: " + ", ".join(f"{k} {n}" for k, n in counts.items()))
        if parts:
            line = f"  {title} by kind: " + "; ".join(parts)
            lines += (
                [line]
                if len(line) <= WIDTH
                else [f"  {title} by kind:"] + [f"    {part}" for part in parts]
            )
    inherited = []
    for backend in sorted({str(r.get("backend")) for r in records}):
        failing = [r for r in records if r.get("backend") == backend and is_failing(r)]
        shared = sum(1 for r in failing if r.get("eager_fails"))
        if shared:
            inherited.append(f"{backend} {shared} of its {len(failing)}")
    if inherited:  # a backend that leaves the op to aten fails where eager does
        lines.append(
            "  failing where eager is expected to fail too (aten's own gaps, inherited): "
            + "; ".join(inherited)
        )
    return lines


def _rows(records: list[dict[str, Any]], max_rows: int) -> tuple[list[Row], list[Row], bool]:
    """The rows to show, the rows folded away, and whether rows are per dtype: every row when
    they fit, else the failing ones (the rest folded into one line); when nothing fails, rows
    per op where per dtype they do not fit, rather than a table of the fold line alone."""
    for by_dtype in (True, False):
        rows: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
        for record in records:
            dtype = str(record.get("dtype")) if by_dtype else "(all)"
            rows[(str(record.get("backend")), str(record.get("op")), dtype)][record["outcome"]] += 1
        shown = sorted(rows.items())
        if len(shown) <= max_rows:
            return shown, [], by_dtype
        failing = [(k, c) for k, c in shown if any(c[o] for o in FAILING)]
        if failing and len(failing) <= max_rows:
            return failing, [(k, c) for k, c in shown if not any(c[o] for o in FAILING)], by_dtype
    return failing, [(k, c) for k, c in shown if not any(c[o] for o in FAILING)], False


def _cell(value: int) -> str:
    return str(value) if value else "."
