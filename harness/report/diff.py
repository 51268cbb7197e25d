"""Compare two results files: what a change broke and what it fixed.

Items are matched by (id, backend). When either file holds one item on several devices (a merge
of machines), they are matched by (id, backend, device name) instead, so that an A100 result is
never compared with an H100 one.

- **regression**: failing now (failed, error, xpassed) and not failing before: passed, xfailed,
  skipped, or absent (a newly failing item). These make `gemmconf report diff` exit 1.
- **progression**: failing before and passing now.
- **other change**: any other change of outcome: passed -> skipped (coverage lost), failing ->
  xfailed (an expectation was added), failed -> error, ...; shown, never a failure.
- added / removed items (absent on one side, not failing) are counted, not compared, and
  never fail the diff; a note names the removed ones (a narrower selection, a shard, a run cut
  short), and `--json` lists both (`added_ids`, `removed_ids`).

Runs judged under different expectations files (a fix that also added or removed entries):
their failed <-> xfailed and xpassed changes are the files', not the backend's; a note counts
them, and `without_expectations` (`gemmconf report diff --without-expectations`) compares each
item's own result instead: an xfailed record as failed, an xpassed one as passed.

Runs of different backends (no backend label in common: two configurations of one backend run
under two names, `dynamo:inductor` and `my_gemm:Tuned`) have no item to match: `diff` raises
`NoCommonBackend`, naming both sides' backends, rather than report every item as added and
every failure as new; `relabeled(document, NAME)` (`gemmconf report diff --as NAME`) gives each
run's one backend the same name so that their items are compared.

Closest passes: of the items that passed in both runs with an error above eager's own
(`metrics.err_ratio` > 1 in either run), those nearest their bar (the larger err_ratio against
`metrics.max_ratio`), so that a diff of two seeds, or of two versions of a backend, shows what came
near failing as well as what failed.

Benchmark figures (items that passed in both runs and were timed in both): `vs_cublas` by
default (the ratio to cuBLAS measured in the same run, interleaved, which cancels most of a
machine's drift between runs), or `time_ms`. A figure that moved the wrong way beyond the noise
model of `report.perf.compare` (k x the combined standard error of the two medians, and the
minimum relative change) is **slower**, a benchmark regression; the other way, **faster**. Both
are listed; `gemmconf report diff --fail-on-regression` exits non-zero on a slower item.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from gemmconf import attribution
from gemmconf.record import Record, typed
from gemmconf.report import perf
from gemmconf.report.merge import device_of, seeds, suite_versions
from gemmconf.report.results import FAILING, is_failing

REMOVED_SHOWN = 5  # removed items a note names (--json lists them all)
CLOSEST_SHOWN = 10  # passes nearest their bar that a diff lists
CLOSE_ABOVE = 1.0  # a pass is listed as close when its error exceeded eager's own (err_ratio 1)

Key = tuple[str, ...]


class NoCommonBackend(ValueError):
    """Two runs whose backends share no label: nothing to match an item with."""


def backends_of(document: dict[str, Any]) -> list[str]:
    return sorted({r.backend for r in typed(document["records"])})


def relabeled(document: dict[str, Any], name: str, *, file: str = "the run") -> dict[str, Any]:
    """`document` with its one backend's records named `name` (`report diff --as NAME`); a
    NoCommonBackend naming them where it holds several."""
    labels = backends_of(document)
    if len(labels) > 1:
        raise NoCommonBackend(
            f"--as {name}: {file} holds several backends ({', '.join(labels)}); --as compares "
            "runs of one backend each"
        )
    records = [replace(r, backend=name) for r in typed(document["records"])]
    return {**document, "records": records}


@dataclass(frozen=True)
class Change:
    """One item whose outcome differs between the two runs."""

    kind: str  # "regression" | "progression" | "other"
    id: str
    backend: str
    device: str | None  # only when matching by device
    old: str | None  # outcome before; None: absent
    new: str | None  # outcome now; None: absent
    reason: str  # why it is what it is now (the new record's reason, else the old one's)
    nodeid: str | None = None
    computed_by: str | None = None  # who computed a pass or xpass now (gemmconf.attribution)
    # who computed a pass or xpass before: a regression from a pass PyTorch computed (a gemlite
    # trial: 12 of 14 "regressions" were aten::bmm's passes its adapter stopped claiming)
    old_computed_by: str | None = None


@dataclass(frozen=True)
class Closest:
    """An item that passed in both runs, with its err_ratio in each and the bar it was held to
    (None in results files older than `metrics.max_ratio`)."""

    id: str
    backend: str
    device: str | None
    old: float
    new: float
    max_ratio: float | None

    @property
    def nearness(self) -> float:
        """The larger err_ratio as a share of the bar (of 1.0 where no bar is recorded)."""
        return max(self.old, self.new) / (self.max_ratio or 1.0)


@dataclass
class Diff:
    old_name: str
    new_name: str
    by_device: bool
    regressions: list[Change] = field(default_factory=list)
    progressions: list[Change] = field(default_factory=list)
    other: list[Change] = field(default_factory=list)
    unchanged: int = 0
    added_ids: list[str] = field(default_factory=list)  # "id@backend" (device too, by device)
    removed_ids: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    metric: str = "vs_cublas"  # the benchmark figure compared
    slower: list[perf.PerfChange] = field(default_factory=list)  # benchmark regressions
    faster: list[perf.PerfChange] = field(default_factory=list)
    timed: int = 0  # items timed in both runs
    closest: list[Closest] = field(default_factory=list)  # nearest their bar first
    judged: int = 0  # items that passed in both runs with an err_ratio in each

    @property
    def added(self) -> int:
        return len(self.added_ids)

    @property
    def removed(self) -> int:
        return len(self.removed_ids)

    def as_json(self) -> dict[str, Any]:
        return {
            "old": self.old_name,
            "new": self.new_name,
            "matched_by": list(self.key_fields()),
            "regressions": [asdict(c) for c in self.regressions],
            "progressions": [asdict(c) for c in self.progressions],
            "other": [asdict(c) for c in self.other],
            "unchanged": self.unchanged,
            "added": self.added,
            "removed": self.removed,
            "added_ids": self.added_ids,
            "removed_ids": self.removed_ids,
            "notes": self.notes,
            "closest_passes": [asdict(c) for c in self.closest],
            "benchmark": {
                "metric": self.metric,
                "timed_in_both": self.timed,
                "slower": [c.as_json() for c in self.slower],
                "faster": [c.as_json() for c in self.faster],
            },
        }

    def key_fields(self) -> tuple[str, ...]:
        return ("id", "backend", "device") if self.by_device else ("id", "backend")


def _by_device(documents: Iterable[dict[str, Any]]) -> bool:
    for document in documents:
        seen: set[tuple[str, str]] = set()
        for record in document["records"]:
            pair = (record.id, record.backend)
            if pair in seen:
                return True
            seen.add(pair)
    return False


def _index(document: dict[str, Any], by_device: bool) -> dict[Key, Record]:
    index: dict[Key, Record] = {}
    for record in document["records"]:
        key: Key = (record.id, record.backend)
        if by_device:
            key = (*key, device_of(record, document))
        index[key] = record
    return index


def classify(
    old: str | None,
    new: str | None,
    *,
    old_fails: bool | None = None,
    new_fails: bool | None = None,
) -> str | None:
    """'regression', 'progression', 'other', or None (unchanged, added or removed, not failing).
    `old_fails` / `new_fails`: whether that record fails its run (`results.is_failing`; an
    xpass of a non-strict expectation does not); by default, whether its outcome can."""
    if old == new:
        return None
    old_fails = old in FAILING if old_fails is None else old_fails
    new_fails = new in FAILING if new_fails is None else new_fails
    if new_fails:
        return "other" if old_fails else "regression"
    if old_fails and new == "passed":
        return "progression"
    if old is None or new is None:
        return None
    return "other"


def diff(
    old: dict[str, Any],
    new: dict[str, Any],
    *,
    old_name: str = "OLD",
    new_name: str = "NEW",
    metric: str = "vs_cublas",
    k: float = perf.NOISE_K,
    min_change: float = perf.MIN_CHANGE,
    expectations: bool = True,
) -> Diff:
    """`expectations=False`: each item's own result, the expectations set aside (`own_result`)."""
    if metric not in perf.COMPARED:
        raise ValueError(f"unknown benchmark metric {metric!r}; known: {', '.join(perf.COMPARED)}")
    old = {**old, "records": typed(old["records"])}
    new = {**new, "records": typed(new["records"])}
    if not expectations:
        old["records"] = [own_result(r) for r in old["records"]]
        new["records"] = [own_result(r) for r in new["records"]]
    old_labels, new_labels = backends_of(old), backends_of(new)
    if old_labels and new_labels and not set(old_labels) & set(new_labels):
        raise NoCommonBackend(
            f"the runs share no backend ({old_name}: {', '.join(old_labels)}; {new_name}: "
            f"{', '.join(new_labels)}), so no item of one can be compared with the other's. "
            "Items are matched by id and backend: to compare two configurations of one backend "
            "run under two names, give --as NAME (each run's backend is then named NAME)"
        )
    by_device = _by_device((old, new))
    before, after = _index(old, by_device), _index(new, by_device)
    result = Diff(old_name, new_name, by_device, metric=metric)
    for key in sorted(before.keys() | after.keys()):
        _compare_item(result, key, before.get(key), after.get(key), k=k, min_change=min_change)
    result.closest.sort(key=lambda c: -c.nearness)
    del result.closest[CLOSEST_SHOWN:]
    _note_runs(result, old, new, before, after)
    _note_expectations(result)
    aten = sum(c.old_computed_by == attribution.PYTORCH for c in result.regressions)
    if aten:
        result.notes.append(
            f"{aten} of the {len(result.regressions)} regression(s) were passes PyTorch computed "
            "(aten's kernels, not the backend's): the backend stopped handing those items to aten"
        )
    return result


def own_result(record: Record) -> Record:
    """The record as its item's own result, without the expectations it ran under: an expected
    failure is a failure, a pass an entry expected to fail (xpassed) a pass."""
    if record.outcome == "xfailed":
        return replace(record, outcome="failed")
    if record.outcome == "xpassed":
        return replace(record, outcome="passed", xpass=None)
    return record


EXPECTATIONS_MOVES = {("failed", "xfailed"), ("xfailed", "failed")}


def _note_expectations(result: Diff) -> None:
    """Count the changes that an expectations file made rather than the backend (an entry added
    or removed: failed <-> xfailed; an entry for an item that now passes: xpassed)."""
    changes = [*result.regressions, *result.progressions, *result.other]
    theirs = sum(
        (c.old, c.new) in EXPECTATIONS_MOVES
        or (c.old is not None and c.new is not None and "xpassed" in (c.old, c.new))
        for c in changes
    )
    if theirs:
        result.notes.append(
            f"{theirs} of the {len(changes)} change(s) are between an expected and an "
            "unexpected outcome (failed <-> xfailed, or an xpass): the runs were judged under "
            "different expectations, or the backend now passes items its file expects to fail; "
            "--without-expectations compares each item's own result"
        )


def _compare_item(
    result: Diff,
    key: Key,
    was: Record | None,
    now: Record | None,
    *,
    k: float,
    min_change: float,
) -> None:
    """Compare one item's records (None: absent from that run) into `result`."""
    by_device = result.by_device
    old_outcome = was.outcome if was else None
    new_outcome = now.outcome if now else None
    if was is not None and now is not None and old_outcome == new_outcome == "passed":
        _compare_timing(result, key, was, now, by_device, k=k, min_change=min_change)
        _note_closeness(result, key, was, now, by_device)
    kind = classify(
        old_outcome,
        new_outcome,
        old_fails=was is not None and is_failing(was),
        new_fails=now is not None and is_failing(now),
    )
    if kind is None:
        if was is None:
            result.added_ids.append(_label(key, by_device))
        elif now is None:
            result.removed_ids.append(_label(key, by_device))
        else:
            result.unchanged += 1
        return
    source = now or was
    change = Change(
        kind=kind,
        id=key[0],
        backend=key[1],
        device=key[2] if by_device else None,
        old=old_outcome,
        new=new_outcome,
        reason=(now.reason if now else None) or (was.reason if was else None) or "",
        nodeid=source.nodeid if source else None,
        computed_by=now.computed_by if now and new_outcome in ("passed", "xpassed") else None,
        old_computed_by=(was.computed_by if was and old_outcome in ("passed", "xpassed") else None),
    )
    {
        "regression": result.regressions,
        "progression": result.progressions,
        "other": result.other,
    }[kind].append(change)


def _note_runs(
    result: Diff,
    old: dict[str, Any],
    new: dict[str, Any],
    before: dict[Key, Record],
    after: dict[Key, Record],
) -> None:
    """Notes on the runs as wholes: suite versions, clocks, seeds, removed items, incomplete."""
    old_name, new_name = result.old_name, result.new_name
    if suite_versions(old) != suite_versions(new):
        result.notes.append(
            "the runs used different suite versions "
            f"({', '.join(sorted(suite_versions(old)))} -> "
            f"{', '.join(sorted(suite_versions(new)))}): scenarios may have "
            "changed as well as the backend"
        )
    result.notes.extend(_clock_notes(before, after))
    if seeds(old) != seeds(new):
        result.notes.append(
            f"the runs drew their inputs with different seeds ({', '.join(sorted(seeds(old)))} "
            f"-> {', '.join(sorted(seeds(new)))}): a verdict near its tolerance is decided by "
            "the item's own confirmation draws, the same for every seed, but an error or time "
            "can still move with the draw; compare runs of one seed to gate a change"
        )
    if result.removed_ids:  # not compared, so not a regression: say which, for a gate to see
        shown = ", ".join(result.removed_ids[:REMOVED_SHOWN])
        more = result.removed - REMOVED_SHOWN
        result.notes.append(
            f"{result.removed} item(s) of {old_name} are not in {new_name} (a narrower "
            f"selection, a shard, or a run cut short), so their verdicts were not compared: "
            f"{shown}" + (f" and {more} more (--json lists them all)" if more > 0 else "")
        )
    for name, document in ((old_name, old), (new_name, new)):
        if document.get("complete") is not True:
            result.notes.append(
                f"{name} is from an incomplete run: items it lacks count as "
                "removed or added, not as changes"
            )


def _compare_timing(
    result: Diff,
    key: Key,
    was: Record,
    now: Record,
    by_device: bool,
    *,
    k: float,
    min_change: float,
) -> None:
    old_metrics, new_metrics = was.metric, now.metric
    if result.metric not in old_metrics or result.metric not in new_metrics:
        return
    result.timed += 1
    moved = perf.compare(old_metrics, new_metrics, result.metric, k=k, min_change=min_change)
    if moved is None:
        return
    kind, before, after, change, noise = moved
    entry = perf.PerfChange(
        kind=kind,
        id=key[0],
        backend=key[1],
        device=key[2] if by_device else None,
        metric=result.metric,
        old=before,
        new=after,
        change=change,
        noise=noise,
    )
    (result.slower if kind == "slower" else result.faster).append(entry)


def _note_closeness(result: Diff, key: Key, was: Record, now: Record, by_device: bool) -> None:
    old_ratio, new_ratio = was.metric.err_ratio, now.metric.err_ratio
    if old_ratio is None or new_ratio is None:
        return
    result.judged += 1
    if max(old_ratio, new_ratio) <= CLOSE_ABOVE:
        return
    result.closest.append(
        Closest(
            id=key[0],
            backend=key[1],
            device=key[2] if by_device else None,
            old=float(old_ratio),
            new=float(new_ratio),
            max_ratio=now.metric.max_ratio or was.metric.max_ratio,
        )
    )


def _clock_notes(before: dict[Key, Record], after: dict[Key, Record]) -> list[str]:
    """A note when the two runs' GPUs ran at clearly different SM clocks (median over items)."""

    def median_clock(index: dict[Key, Record]) -> float | None:
        clocks = sorted(
            float(r.metric.gpu_sm_clock_mhz) for r in index.values() if r.metric.gpu_sm_clock_mhz
        )
        return clocks[len(clocks) // 2] if clocks else None

    old_clock, new_clock = median_clock(before), median_clock(after)
    if old_clock and new_clock and abs(new_clock - old_clock) > perf.MIN_CHANGE * old_clock:
        return [
            f"the GPUs ran at different SM clocks (median {old_clock:.0f} -> {new_clock:.0f} "
            "MHz while timed): times moved with them; vs_cublas cancels most of it"
        ]
    return []


def _label(key: tuple[Any, ...], by_device: bool) -> str:
    """An item's key as one string: `id@backend`, and `[device]` when matched by device."""
    return f"{key[0]}@{key[1]}" + (f" [{key[2]}]" if by_device else "")


def render(result: Diff, *, width: int = 120) -> list[str]:
    """The readable report: one table per kind of change, then the counts."""
    lines = [
        f"gemmconf diff: {result.old_name} -> {result.new_name} "
        f"(matched by {', '.join(result.key_fields())})"
    ]
    for title, changes, why in (
        ("REGRESSIONS", result.regressions, "reason"),
        ("PROGRESSIONS", result.progressions, "why it failed before"),
        ("OTHER CHANGES", result.other, "reason"),
    ):
        lines.append("")
        lines.append(f"{title} ({len(changes)})")
        if changes:
            lines.extend(_table(changes, result.by_device, width, why))
    lines.append("")
    transitions = Counter(
        f"{c.old or 'absent'} -> {c.new or 'absent'}"
        for c in result.regressions + result.progressions + result.other
    )
    if transitions:
        lines.append(
            "transitions: " + ", ".join(f"{n} {t}" for t, n in sorted(transitions.items()))
        )
    if result.closest:
        lines.extend(_closest_table(result))
        lines.append("")
    elif result.judged:
        lines.append(
            f"CLOSEST PASSES: none of the {result.judged} judged items that passed in both runs "
            "had an error above eager's own (err_ratio > 1) in either run"
        )
        lines.append("")
    if result.timed:
        lines.extend(_perf_tables(result))
        lines.append("")
    lines.append(
        f"{len(result.regressions)} regression(s), {len(result.progressions)} "
        f"progression(s), {len(result.other)} other change(s); {result.unchanged} "
        f"unchanged, {result.added} added, {result.removed} removed"
    )
    if result.timed:
        lines.append(
            f"benchmark ({result.metric}, {result.timed} items timed in both runs): "
            f"{len(result.slower)} slower, {len(result.faster)} faster beyond the noise"
        )
    lines.extend(f"note: {note}" for note in result.notes)
    return lines


# the comparison's preamble of a wrong-values reason, which the table leaves out: it would take
# the room the err_ratio needs (the reason is cut to the terminal's width)
_PREAMBLES = ("Tensor-likes are not close! ", "Tensor-likes are not equal! ")


def _shown_reason(reason: str) -> str:
    text = " ".join(reason.split())
    for preamble in _PREAMBLES:
        if text.startswith(preamble) and len(text) > len(preamble):
            return text[len(preamble) :]
    return text


def _shown_outcome(outcome: str | None, computed_by: str | None) -> str:
    """An outcome with "(PyTorch)" where PyTorch computed the pass: a progression that a
    fallback to aten made is not the backend's kernels getting it right (a torchao trial), nor
    is a regression from such a pass the loss of one of theirs (a gemlite trial)."""
    shown = outcome or "absent"
    return f"{shown} (PyTorch)" if computed_by == attribution.PYTORCH else shown


def _table(changes: list[Change], by_device: bool, width: int, why: str) -> list[str]:
    headers = ["id", "backend", *(["device"] if by_device else []), "old", "new", why]
    rows = [
        [
            c.id,
            c.backend,
            *([c.device or ""] if by_device else []),
            _shown_outcome(c.old, c.old_computed_by),
            _shown_outcome(c.new, c.computed_by),
            _shown_reason(c.reason),
        ]
        for c in changes
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers[:-1])]
    used = sum(widths) + 2 * len(widths) + 2
    room = max(width - used, 30)

    def line(cells: list[str]) -> str:
        fixed = "  ".join(f"{cell:<{w}}" for cell, w in zip(cells, widths, strict=False))
        reason = cells[-1] if len(cells[-1]) <= room else cells[-1][: room - 3] + "..."
        return f"  {fixed}  {reason}".rstrip()

    return [line(headers), *(line(r) for r in rows)]


def _closest_table(result: Diff) -> list[str]:
    headers = [*_key_headers(result.by_device), "old", "new", "bar"]
    rows = [
        [
            *_key_cells(c, result.by_device),
            f"{c.old:.2f}",
            f"{c.new:.2f}",
            "?" if c.max_ratio is None else f"{c.max_ratio:.2f}",
        ]
        for c in result.closest
    ]
    title = (
        f"CLOSEST PASSES (of the {result.judged} judged items that passed in both runs, the "
        f"{len(rows)} nearest their bar with an error above eager's own: err_ratio in each run, "
        "and the bar)"
    )
    lines = [title, *(f"  {line}".rstrip() for line in _aligned([headers, *rows]))]
    if any(c.max_ratio is not None and c.nearness > 1 for c in result.closest):
        lines.append(
            "  (an err_ratio above its bar is a borderline pass: fresh draws could not tell the "
            "error above the bar; the record's details give its rounds)"
        )
    return lines


def _perf_tables(result: Diff) -> list[str]:
    lines = []
    unit = "x cuBLAS" if result.metric == "vs_cublas" else "ms"
    for title, changes in (
        ("SLOWER (benchmark regressions)", result.slower),
        ("FASTER", result.faster),
    ):
        lines += ["", f"{title} ({len(changes)}, {result.metric})"]
        if not changes:
            continue
        headers = [*_key_headers(result.by_device), "old", "new"]
        rows = [[*_key_cells(c, result.by_device), f"{c.old:.4g}", f"{c.new:.4g}"] for c in changes]
        header, *cells = _aligned([headers, *rows])
        lines.append(f"  {header}  change (noise: k x combined standard error, {unit})")
        for c, row in zip(changes, cells, strict=True):
            noise = f"±{c.noise:.3g}" if c.noise else "no spread recorded"
            lines.append(f"  {row}  {c.change:+.1%} ({noise})")
    return lines


def _key_headers(by_device: bool) -> list[str]:
    return ["id", "backend", *(["device"] if by_device else [])]


def _key_cells(entry: Closest | perf.PerfChange, by_device: bool) -> list[str]:
    """An item's id, backend and (matched by device) device, as a table's first cells."""
    return [entry.id, entry.backend, *([entry.device or ""] if by_device else [])]


def _aligned(rows: list[list[str]]) -> list[str]:
    """Each row's cells, each padded to its column's widest, two spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in rows]
