"""Expected outcomes per backend: ``suites/expectations/<backend>.yaml``, or the file the
backend's own package ships (the backend's optional ``expectations`` attribute, a path), used when
the suite has no file for it: a suite's file wins, so a user can override a package's table.

A file lists id patterns (``*`` matches any run of characters, ``?`` one character; brackets are
literal, since ids contain them) with a status, ``xfail`` or ``skip``, a reason and optionally an
issue link. Rules, each an error at start-up naming file:line:

- a pattern that matches no instance of the whole suite is an error (a stale or mistyped entry
  would otherwise hide nothing and mean nothing);
- two entries matching the same id: the first one wins, and that is allowed (narrow before wide);
- an xfail item that passes is a failure (strict), so fixed bugs get their entries removed;
  ``strict: false`` is for bugs that show only on some runs (wrong values that change from run
  to run): a pass is then reported as XPASS, not a failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from gemmconf.scenario import ScenarioError, _LineLoader, _Node

STATUSES = ("xfail", "skip")
ENTRY_FIELDS = ("match", "status", "reason", "issue", "strict")


@dataclass(frozen=True)
class Expectation:
    pattern: str
    status: str
    reason: str
    issue: str | None
    source: str  # file:line
    strict: bool = True  # an xfail that passes fails the item

    def text(self) -> str:
        link = f" ({self.issue})" if self.issue else ""
        return f"{self.reason}{link} [{self.source}]"


@dataclass(frozen=True)
class ExpectationTable:
    backend: str
    entries: tuple[tuple[Expectation, re.Pattern[str]], ...]

    def lookup(self, instance_id: str) -> Expectation | None:
        for entry, regex in self.entries:
            if regex.fullmatch(instance_id):
                return entry
        return None


def path_for(directory: Path, backend: str) -> Path:
    """``inductor-max-autotune:TRITON`` → ``inductor-max-autotune-TRITON.yaml``."""
    return directory / (re.sub(r"[^A-Za-z0-9_.-]", "-", backend) + ".yaml")


def compile_pattern(pattern: str) -> re.Pattern[str]:
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile("".join(parts))


def packaged_file(backend: object) -> Path | None:
    """The expectations file a backend's package ships: its optional `expectations` attribute."""
    declared = getattr(backend, "expectations", None)
    return Path(declared) if declared else None


def load(
    directory: Path,
    backend: str,
    all_ids: Iterable[str],
    root: Path | None = None,
    *,
    packaged: Path | None = None,
) -> ExpectationTable:
    """The backend's table: the suite's file, else the `packaged` one, else empty. Validates
    every entry against `all_ids`, the ids of the whole suite."""
    path = path_for(directory, backend)
    if not path.exists() and packaged is not None:
        if not packaged.is_file():
            raise ScenarioError(
                str(packaged),
                "expectations",
                f"backend {backend!r} declares this file; it is missing",
            )
        path = packaged
    if not path.exists():
        return ExpectationTable(backend, ())
    shown = str(path.relative_to(root)) if root and path.is_relative_to(root) else str(path)
    try:
        document = yaml.load(path.read_text(), Loader=_LineLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        raise ScenarioError(
            f"{shown}:{mark.line + 1 if mark else '?'}", "yaml", str(exc.problem)
        ) from None
    if not isinstance(document, _Node):
        raise ScenarioError(shown, "file", "expected a mapping with 'backend' and 'expectations'")
    for key in document:
        if key not in ("backend", "expectations"):
            raise ScenarioError(
                f"{shown}:{document.key_lines[key]}",
                key,
                "unknown key; known: backend, expectations",
            )
    if document.get("backend") != backend:
        raise ScenarioError(
            f"{shown}:{document.line}",
            "backend",
            f"the file is for backend {backend!r} but says {document.get('backend')!r}",
        )
    raw_entries = document.get("expectations") or []
    if not isinstance(raw_entries, list):
        raise ScenarioError(f"{shown}:{document.line}", "expectations", "expected a list")
    ids = list(all_ids)
    entries = []
    for raw in raw_entries:
        line = raw.line if isinstance(raw, _Node) else document.line
        where = f"{shown}:{line}"
        if not isinstance(raw, dict):
            raise ScenarioError(where, "expectations", "each entry is a mapping")
        for key in raw:
            if key not in ENTRY_FIELDS:
                raise ScenarioError(
                    f"{shown}:{raw.key_lines[key]}",
                    key,
                    f"unknown key; known: {', '.join(ENTRY_FIELDS)}",
                )
        pattern, status, reason = raw.get("match"), raw.get("status", "xfail"), raw.get("reason")
        if not isinstance(pattern, str) or not pattern:
            raise ScenarioError(where, "match", "needs an id pattern, e.g. 'dense/mm[*-fp16-*]'")
        if status not in STATUSES:
            raise ScenarioError(where, "status", f"{status!r} is not one of {', '.join(STATUSES)}")
        if not isinstance(reason, str) or not reason.strip():
            raise ScenarioError(where, "reason", "every expectation needs a reason")
        strict = raw.get("strict", True)
        if not isinstance(strict, bool):
            raise ScenarioError(
                f"{shown}:{raw.key_lines['strict']}",
                "strict",
                f"expected true or false, got {strict!r}",
            )
        regex = compile_pattern(pattern)
        if not any(regex.fullmatch(i) for i in ids):
            raise ScenarioError(
                where,
                "match",
                f"pattern {pattern!r} matches no scenario "
                "instance of the suite (remove it or fix the id)",
            )
        entries.append(
            (Expectation(pattern, status, reason.strip(), raw.get("issue"), where, strict), regex)
        )
    return ExpectationTable(backend, tuple(entries))
