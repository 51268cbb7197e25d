"""An item's verdict: the outcome its reports decide (`Decision`, made by the items feature where
the item ran) and the one results record built from it (a `gemmconf.record.Record`, as JSON),
which the recording feature writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gemmconf.outcome import ItemOutcome, render
from gemmconf.record import Metrics, Record


@dataclass(frozen=True)
class Decision:
    """An item's outcome, decided from what its run found (items.ScenarioItem.decide)."""

    outcome: str  # passed | failed | xfailed | xpassed | skipped | error
    run: ItemOutcome | None = None  # what run_item found, when the item ran
    kind: str | None = None  # None: the run's own kind (a passed or skipped item has none)
    reason: str | None = None  # None: the run's rendered reason
    note: str | None = None  # a paragraph the record's details end with (eager fails it too)
    xpass: str | None = None  # an xpassed item's expectation: "strict" (fails) or "non-strict"
    eager_fails: bool = False  # a failed or xfailed item eager's expectations fail here too
    inherited: str | None = None  # whose failure it is, where not the backend's (attribution)


def build_record(
    static: dict[str, Any], decision: Decision, *, duration_s: float, environment: dict[str, Any]
) -> dict[str, Any]:
    """The item's record: its scenario fields (`static`: the item's own record, built at
    collection), the decided outcome, and what the run found."""
    run = decision.run
    message = render(run) if run is not None and not run.passed else None
    reason = decision.reason or (message.reason if message is not None else None)
    # every failed or xfailed record has details, even where they are the one-line reason
    details = None if message is None else _capped(message.details, DETAILS_CHARS)
    if run is not None and run.passed and run.notes:  # a pass with words: borderline shape sets
        details = _capped("\n\n".join(run.notes), DETAILS_CHARS)
    if decision.note:
        details = f"{details}\n\n{decision.note}" if details else decision.note
    record = Record(
        **static,  # what the item is (items.ScenarioItem.record), and its skip_class if any
        outcome=decision.outcome,
        duration_s=round(run.duration_s if run is not None and run.duration_s else duration_s, 4),
        environment=environment,
        phase_s=None if run is None else run.phase_s,
        kind=decision.kind or (run.kind if run is not None else None),
        reason=reason,
        details=details,
        metrics=Metrics(dict(run.metrics)) if run is not None and run.metrics else None,
        code_excerpt=None if run is None else run.code_excerpt,
        suite_error=run is not None and run.suite_error,
        xpass=decision.xpass,
        eager_fails=decision.eager_fails,
        computed_by=run.computed_by if run is not None and decision.outcome != "error" else None,
        inherited=decision.inherited,
    )
    return record.to_json()


DETAILS_CHARS = 8000  # a failed record's `details`: every failed check, tracebacks included


def _capped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... ({len(text) - limit} more characters in pytest's output)"
