"""`gemmconf expect`: a results file judged again under expectations files, nothing run.

Each record keeps its own result (a failure's kind and reason, or a pass) and is put to the first
entry that matches it on the record's hardware class and torch version, in the files' order, as a
run does (`gemmconf.expectations.outcome`). What comes back: the counts of the outcomes the run
would have under those files, the records whose outcome would change, the ones left unexplained
(a failure no entry expects, a pass a strict xfail entry denies) and the entries that decided
no record. Written for the author of an expectations file after a long GPU run: whether the file
explains the run is a matter of seconds, not of running it again.

Skipped records did not run and stay skipped (an entry's `skip` skips a record that ran); an
error is the harness's and stays one. A file names the backend it is for; the records of
backends no file names are counted apart. Entries are not checked against the suite here (the
run does that): an entry may name items this results file does not hold.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gemmconf.expectations import Expectation, ExpectationFile, ExpectationTable, outcome
from gemmconf.record import Record
from gemmconf.report.groups import group_failures, summary_lines
from gemmconf.scenario.facts import Facts

RAN = ("passed", "failed", "xfailed", "xpassed")  # the outcomes of an item that ran and was judged
LEFT = ("failed", "xpassed (strict)")  # outcomes that fail a run
LISTED = 20  # unexplained records listed one a line; past it, grouped by cause (--json: all)
UNMATCHED_SHOWN = 10  # entries that match no record, listed in the text (--json: all)
ORDER = ("passed", "xfailed", "xpassed", "skipped", "error", "failed", "xpassed (strict)")


@dataclass(frozen=True)
class Change:
    id: str
    backend: str
    was: str
    now: str
    kind: str | None
    reason: str  # the failure's reason, first line ("" for a pass)
    entry: str | None  # the deciding entry's file:line, None where none matched


@dataclass
class Rejudged:
    files: tuple[str, ...]
    specs: dict[str, str]  # the run's backend specs and seed: the repro lines of the groups
    seed: int | None
    counts: dict[str, Counter[str]] = field(default_factory=dict)  # by backend, under the files
    before: dict[str, Counter[str]] = field(default_factory=dict)  # by backend, as the run had
    changes: list[Change] = field(default_factory=list)  # records whose outcome would change
    left: list[Change] = field(default_factory=list)  # unexplained, changed or not
    # every judged record as the run would record it under the files (errors left out: the
    # harness's, no file explains them), for grouping what is left by cause
    view: list[Record] = field(default_factory=list)
    unmatched: list[Expectation] = field(default_factory=list)  # entries no record matched
    other_backends: Counter[str] = field(default_factory=Counter)  # records no file is for

    def to_json(self) -> dict[str, Any]:
        return {
            "files": list(self.files),
            "counts": {b: dict(c) for b, c in self.counts.items()},
            "before": {b: dict(c) for b, c in self.before.items()},
            "changed": [vars(c) for c in self.changes],
            "unexplained": [vars(c) for c in self.left],
            "unmatched_entries": [f"{e.source} {e.pattern}" for e in self.unmatched],
            "other_backends": dict(self.other_backends),
        }


def _outcome_of(record: Record) -> str:
    """The record's outcome as the run counted it ("xpassed (strict)" for a strict XPASS)."""
    if record.outcome == "xpassed" and record.xpass == "strict":
        return "xpassed (strict)"
    return record.outcome


def _failure(record: Record) -> tuple[str | None, str] | None:
    """A failed or xfailed record's own failure, (kind, reason); None for any other."""
    if record.outcome in ("failed", "xfailed"):
        return record.kind, record.reason or ""
    return None


def _facts(record: Record) -> Facts:
    axes = tuple(sorted((str(k), str(v)) for k, v in (record.axes or {}).items()))
    return Facts(
        record.id,
        record.suite or "",
        record.scenario or "",
        record.op or "",
        record.dtype or "",
        tuple(record.markers or ()),
        axes,
    )


def rejudge(results: dict[str, Any], files: Sequence[ExpectationFile]) -> Rejudged:
    """`results` (a results document as `gemmconf.report.merge.load` reads it: its records
    typed, its specs and seed checked) judged again under `files` (module docstring)."""
    entries: dict[str, tuple[Expectation, ...]] = {}
    for file in files:  # the files' order within a backend, as --expectations gives them
        entries[file.backend] = entries.get(file.backend, ()) + file.entries
    facts = {record.id: _facts(record) for record in results["records"]}
    tables = {b: ExpectationTable(b, listed, facts) for b, listed in entries.items()}
    specs = results.get("backend_specs") or {}
    judged = Rejudged(tuple(f.shown for f in files), specs, results.get("seed"))
    used: set[int] = set()
    for record in results["records"]:
        table = tables.get(record.backend)
        if table is None:
            judged.other_backends[record.backend] += 1
            continue
        was = _outcome_of(record)
        now, entry = _now(record, table, was)
        if entry is not None:
            used.add(id(entry))
        judged.before.setdefault(record.backend, Counter())[was] += 1
        judged.counts.setdefault(record.backend, Counter())[now] += 1
        kind, reason = _failure(record) or (None, "")
        first_line = reason.split("\n", 1)[0]
        source = entry.source if entry is not None else None
        change = Change(record.id, record.backend, was, now, kind, first_line, source)
        if now != was:
            judged.changes.append(change)
        if now in LEFT:
            judged.left.append(change)
        if now != "error":
            judged.view.append(dataclasses.replace(record, **_viewed(now, record)))
    judged.unmatched = [e for t in tables.values() for e in t.entries if id(e) not in used]
    return judged


def _viewed(now: str, record: Record) -> dict[str, Any]:
    """The record's outcome and xpass as the file judges it, for the view reports group. A
    pass a non-strict entry expected to fail is a non-strict xpass, whatever the run said (a
    torchao trial: 82 such grouped as failures, the record's own xpass being None)."""
    if now in LEFT[1:]:
        return {"outcome": "xpassed", "xpass": "strict"}
    if now == "xpassed":
        return {"outcome": "xpassed", "xpass": "non-strict"}
    return {"outcome": now, "xpass": record.xpass if now == record.outcome else None}


def _now(record: Record, table: ExpectationTable, was: str) -> tuple[str, Expectation | None]:
    """(the record's outcome under `table`, the entry that decided it)."""
    if record.outcome not in RAN:
        return was, None  # skipped (did not run) or an error (the harness's): not judged again
    environment = record.environment or {}
    failure = _failure(record)
    entry = table.deciding(
        record.id, environment.get("hardware_class"), environment.get("torch"), failure
    )
    now, xpass = outcome(entry, failure)
    return ("xpassed (strict)" if xpass == "strict" else now), entry


def lines(judged: Rejudged) -> list[str]:
    """What `gemmconf expect` prints."""
    out = [f"under {', '.join(judged.files)}:"]
    for backend in sorted(judged.counts):
        now, before = judged.counts[backend], judged.before[backend]
        out.append(f"  {backend}: {sum(now.values()):,} records: {_counted(now)}")
        if now != before:
            out.append(f"    the run had: {_counted(before)}")
    moved = Counter((c.was, c.now) for c in judged.changes)
    if moved:
        out.append(
            f"  {len(judged.changes):,} would change: "
            + ", ".join(f"{n:,} {a} -> {b}" for (a, b), n in moved.most_common())
        )
    for backend, n in sorted(judged.other_backends.items()):
        out.append(f"  {backend}: {n:,} records, no file given for this backend: not judged")
    out.extend(_unexplained(judged))
    if judged.unmatched:  # stale entries, or (in a shard, a narrower run) items not in this run
        count = len(judged.unmatched)
        out.append(f"  entries that decided no record of this run ({count:,}):")
        out.extend(f"    {e.source} {e.pattern}" for e in judged.unmatched[:UNMATCHED_SHOWN])
        if count > UNMATCHED_SHOWN:
            out.append(f"    ... and {count - UNMATCHED_SHOWN:,} more (--json lists them all)")
    return out


def _unexplained(judged: Rejudged) -> list[str]:
    """The records left unexplained: each on a line, or, past LISTED of them, by cause
    (`gemmconf.report.groups`, each group with its repro, patterns over the whole run)."""
    if not judged.left:
        return ["  every failure is explained and no strict xfail entry is contradicted"]
    out = [f"  not explained ({len(judged.left):,}):"]
    if len(judged.left) > LISTED:  # a long list reads as its causes, as `report groups`
        groups = group_failures(judged.view)
        out += summary_lines(groups, specs=judged.specs, seed=judged.seed, limit=len(groups))
        # which entries the passes contradict (an optimum-quanto trial: 236 strict xpasses of an
        # entry narrowed to a crash, that entry named in --json alone); a pass meets the first
        # matching entry whatever its kind and message
        denied = Counter(c.entry for c in judged.left if c.now == "xpassed (strict)" and c.entry)
        for entry, n in denied.most_common():
            out.append(f"    {n:,} pass(es) contradict the strict xfail entry at {entry}")
        return [*out, "    (--json lists every one)"]
    for c in judged.left:
        why = f"{c.kind}: {c.reason}" if c.kind else "passed; a strict entry expects a failure"
        where = ""
        if c.entry and c.now == "failed":  # matched, but expects another kind or reason
            where = f" [{c.entry} expects another failure]"
        elif c.entry:
            where = f" [{c.entry}]"
        out.append(f"    {c.now:<16} {c.id} ({c.backend}) {why[:160]}{where}")
    return out


def _counted(counts: Counter[str]) -> str:
    shown = [f"{counts[k]:,} {k}" for k in ORDER if counts.get(k)]
    shown += [f"{n:,} {k}" for k, n in sorted(counts.items()) if k not in ORDER]
    return ", ".join(shown) or "none"
