"""The interface every item check has (`Check`) and what it returns (`Findings`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gemmconf.codecheck import CodeCheckResult
from gemmconf.item import ItemRun
from gemmconf.oracle import Verdict
from gemmconf.outcome import Problem


@dataclass(frozen=True)
class Findings:
    """What one check found: problems (appended in order), lead problems (put before all found
    so far: they explain the rest), metrics, notes, and what the outcome keeps as data."""

    problems: tuple[Problem, ...] = ()
    lead: tuple[Problem, ...] = ()
    metrics: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    code_checks: tuple[CodeCheckResult, ...] = ()
    code_excerpt: str | None = None


NOTHING = Findings()


class Check(Protocol):
    """One check of an item after the backend's first calls: `applies` says whether it runs on
    this item (its scenario's checks, the device), `run` looks and says what it found. A check
    may call the backend again (`item.backend_call`, `item.draw`) and read what earlier checks
    found (`item.problems`, `item.metrics`); it changes nothing of the item's but what it owns."""

    name: str

    def applies(self, item: ItemRun) -> bool: ...

    def run(self, item: ItemRun) -> Findings: ...
