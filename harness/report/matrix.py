"""`gemmconf report matrix`: many runs on one page, families x (backend, hardware class).

Each input is a results file of any run (one backend or several, one machine each, a shard, a
merge), read and checked by `merge.load` like every report's input. A record's place:

- its **family**, the suite file it comes from, named as its folder and file under `suites/`
  (`dense/first`, `fp8/scaled_mm`): its `source` path, else its `suite` name. Rows are grouped by
  folder (`dense`, `fp8`, ...), which is how suites/ lays the suite out;
- its **column**, (backend label, hardware class, device name): the hardware class from its
  environment (the run's where it has none), and the device so that two machines of one class
  (an H100 and an H200, both sm90) stay two columns. Records of one column from several files
  add up (shards of one run); the same item twice in one column is an error naming both files,
  unless `later_wins`.

A cell counts its records by `CATEGORIES`: passes the backend computed, passes PyTorch computed
for it (gemmconf.attribution's `computed_by`), passes where no one observed who computed them
(files written before the field), the backend's own failures, failures inherited from eager or
torch.compile, expected failures (xfail), harness errors and skips. Every failing record is
listed below the matrix under its cell, with its reason and two commands: the pytest command
that runs it again and `gemmconf repro`, which writes it as a standalone file.

The page is static HTML (no script runs; the counts are also embedded as JSON for tools), and
everything from a file is escaped for where it goes: HTML text by jinja2's autoescape, a
command's every value as one shell word that no option takes for its own, a reason's control
characters as escapes (gemmconf.report.quoting).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from gemmconf import attribution, ids
from gemmconf.record import Record, device_name, typed
from gemmconf.report import merge, results, templating
from gemmconf.report.page import backend_specs, shown_command
from gemmconf.report.quoting import terminal

# A cell's counts, in the order the page shows them: (key, label, mark in a cell, meaning)
CATEGORIES = (
    ("own_passed", "own passes", "\u2713", "passed, computed by the backend (wholly or partly)"),
    ("pytorch_passed", "computed by PyTorch", "\u2713pt",
     "passed, but PyTorch's aten kernels computed it"),
    ("unobserved_passed", "passes, computer not recorded", "\u2713?",
     "passed; the file does not say who computed it (runs before computed_by was recorded)"),
    ("own_failed", "own failures", "\u2717", "failed (or xpassed strictly): the backend's own"),
    ("inherited", "inherited", "\u2717inh",
     "failed or xfailed, inherited from eager or torch.compile"),
    ("xfailed", "expected failures", "xf", "xfailed: a known failure its expectations list"),
    ("error", "harness errors", "err", "gemmconf's own fault, not the backend's"),
    ("skipped", "skipped", "skip", "not run on this machine (hardware) or by its expectations"),
)  # fmt: skip
CATEGORY_KEYS = tuple(key for key, *_ in CATEGORIES)
LISTED = ("own_failed", "inherited", "error")  # the categories whose items are listed
# backends a matrix is read against come first, in this order; the rest by name
BASELINES = ("eager", "reference", "inductor")
HARDWARE_ORDER = ("cpu", "sm80", "sm89", "sm90", "sm100", "sm120")
ITEMS_PER_CELL = 200  # failing items listed under one cell; the rest are counted
ITEMS_TOTAL = 5000  # on the whole page: a stranger's file of 100,000 failures stays readable
MAX_CELLS = 100_000  # a page of the whole suite has some 30 rows by 10 columns
REASON_CHARS = 400  # of a reason's first line
ENVIRONMENT_SHOWN = ("torch", "triton", "cuda")  # then every other version-like entry
ENVIRONMENT_HARDWARE = ("device", "device_name", "capability", "hardware_class", "fp8", "tma",
                        "memory_bytes")  # fmt: skip


@dataclass(frozen=True, order=True)
class Column:
    """Where a record's counts go across the page: one backend on one machine."""

    hardware_class: str
    backend: str
    device: str

    def sort_key(self) -> tuple[int, str, int, str, str]:
        klass = (
            HARDWARE_ORDER.index(self.hardware_class)
            if self.hardware_class in HARDWARE_ORDER
            else len(HARDWARE_ORDER)
        )
        base = next(  # inductor's configurations (inductor-max-autotune:TRITON) beside it
            (
                i
                for i, name in enumerate(BASELINES)
                if re.fullmatch(rf"{name}([-:].*)?", self.backend)
            ),
            len(BASELINES),
        )
        return (klass, self.hardware_class, base, self.backend, self.device)


@dataclass(frozen=True)
class Run:
    """One input file, as the page's header lists it."""

    number: int
    path: str
    backends: tuple[str, ...]
    devices: tuple[str, ...]
    hardware_classes: tuple[str, ...]
    versions: tuple[tuple[str, str], ...]  # (name, version) from its environment(s)
    finished: str | None
    complete: bool
    exit_status: Any
    suite_version: str | None
    seed: Any
    command: str | None
    commit: str | None
    records: int


@dataclass(frozen=True)
class Item:
    """A failing record as the page lists it."""

    id: str
    category: str
    outcome: str
    kind: str
    inherited: str | None
    reason: str
    rerun: str  # the pytest command that runs it again
    standalone: (
        str  # `gemmconf repro ...`: it as a file (`ids.standalone_needs` says what it needs)
    )
    run: int  # the number of the file it comes from


@dataclass
class Cell:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORY_KEYS, 0))
    items: list[Item] = field(default_factory=list)
    unlisted: int = 0  # failing items past the page's budget

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def failing(self) -> int:
        return sum(self.counts[key] for key in LISTED)


@dataclass(frozen=True)
class Matrix:
    runs: tuple[Run, ...]
    columns: tuple[Column, ...]
    families: tuple[str, ...]  # sorted: folder, then file
    cells: Mapping[tuple[str, Column], Cell]
    column_runs: Mapping[Column, tuple[int, ...]]  # the files each column's records come from
    column_versions: Mapping[Column, tuple[str, ...]]  # "torch 2.11.0+cu130, triton 3.6.0"

    def totals(self, column: Column) -> dict[str, int]:
        found = dict.fromkeys(CATEGORY_KEYS, 0)
        for family in self.families:
            cell = self.cells.get((family, column))
            for key in CATEGORY_KEYS:
                found[key] += cell.counts[key] if cell else 0
        return found


def family_of(record: Record) -> str:
    """`dense/first` for a record of suites/dense/first.yaml: the suite file, relative to the
    suite folder (a checkout's run records `suites/dense/first.yaml:3`, `gemmconf run`'s
    `dense/first.yaml:3`), without its suffix; the suite's name where no source is recorded."""
    source = record.source
    if source:
        path = source.rsplit(":", 1)[0] if re.search(r":\d+$", source) else source
        parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
        if "suites" in parts[:-1]:
            parts = parts[len(parts) - parts[::-1].index("suites") :]
        if parts:
            parts[-1] = re.sub(r"\.ya?ml$", "", parts[-1])
            return "/".join(parts)
    return record.suite or "(no suite)"


def folder_of(family: str) -> str:
    return family.split("/", 1)[0] if "/" in family else ""


def category_of(record: Record) -> str:
    """Which of `CATEGORIES` a record counts in."""
    outcome = record.outcome
    if outcome == "skipped":
        return "skipped"
    if outcome == "error":
        return "error"
    if results.is_failing(record) or outcome == "xfailed":
        if attribution.is_inherited(record):
            return "inherited"
        return "xfailed" if outcome == "xfailed" else "own_failed"
    who = record.computed_by  # a pass, or a non-strict xpass (fails nothing)
    if who in (attribution.BACKEND, attribution.MIXED):
        return "own_passed"
    return "pytorch_passed" if who == attribution.PYTORCH else "unobserved_passed"


def environment_of(record: Record | None, document: Mapping[str, Any]) -> dict[str, Any]:
    """A record's environment, else its run's (a mapping, whatever the file holds there)."""
    for found in (record and record.environment, document.get("environment")):
        if isinstance(found, dict) and found:
            return found
    return {}


def device_of(environment: Mapping[str, Any]) -> str:
    """The device name (`record.device_name`), "unknown device" where the run gives none."""
    return device_name(environment) or "unknown device"


def hardware_class_of(environment: Mapping[str, Any]) -> str:
    """The hardware class a run recorded; for files without it, from the device and its
    compute capability ("9.0" is sm90)."""
    klass = environment.get("hardware_class")
    if isinstance(klass, str) and klass:
        return klass
    if environment.get("device") == "cpu":
        return "cpu"
    capability = str(environment.get("capability") or "")
    if re.fullmatch(r"\d+\.\d+", capability):
        return "sm" + capability.replace(".", "")
    return "unknown"


def column_of(record: Record, document: Mapping[str, Any]) -> Column:
    environment = environment_of(record, document)
    return Column(
        hardware_class=hardware_class_of(environment),
        backend=record.backend,
        device=device_of(environment),
    )


def _versions(environment: Mapping[str, Any]) -> list[tuple[str, str]]:
    """torch, triton, CUDA, then every other entry that is not about the hardware (a backend
    package's version, where a run records one)."""
    names = [n for n in ENVIRONMENT_SHOWN if environment.get(n)]
    names += sorted(
        n
        for n in environment
        if n not in ENVIRONMENT_SHOWN and n not in ENVIRONMENT_HARDWARE and environment.get(n)
    )
    return [(str(n), _text(environment[n])) for n in names]


def _package_versions(document: Mapping[str, Any], backend: str) -> list[tuple[str, str]]:
    """(distribution, version) of the packages the run recorded for a backend's code
    (`backend_packages`), where it recorded them."""
    packages = document.get("backend_packages")
    named = packages.get(backend) if isinstance(packages, Mapping) else None
    if not isinstance(named, Mapping):
        return []
    return [(str(n), _text(v)) for n, v in named.items()]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


# ---- commands ---------------------------------------------------------------------------------
# Every value in a command comes from a results file, which anyone may have written: each is one
# shell word (single quotes, inside which a shell expands nothing), and none can pass for an
# option (a leading "-" becomes "./-" or "--opt=-..."), as on the conformance page.

_BARE = re.compile(r"[A-Za-z0-9_@%+:,./-][A-Za-z0-9_@%+=:,./-]*")


def shell_word(text: str) -> str:
    """`text` as one shell word; bare only where no shell reads anything into it."""
    if _BARE.fullmatch(text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


def _option(name: str, value: str) -> str:
    return f"{name}={shell_word(value)}" if value.startswith("-") else f"{name} {shell_word(value)}"


def rerun_command(nodeid: str, spec: str, seed: int, target_arch: str | None) -> str:
    """The pytest command that runs one item again, from the folder the run ran in."""
    node = "./" + nodeid if nodeid.startswith("-") else nodeid
    words = ["pytest", "'" + node.replace("'", "'\\''") + "'", _option("--backend", spec)]
    words.append(_option("--seed", str(seed)))
    if target_arch:
        words.append(_option("--target-arch", target_arch))
    return " ".join(words)


def standalone_command(item_id: str, spec: str, seed: int, target_arch: str | None) -> str:
    """`gemmconf repro ID --backend SPEC`: the item as a standalone file
    (gemmconf.ids.standalone_command, with every value quoted as `shell_word` says)."""
    options = [_option("--backend", spec)]
    if seed:
        options.append(_option("--seed", str(seed)))
    if target_arch:
        options.append(_option("--target-arch", target_arch))
    if item_id.startswith("-"):  # after "--" nothing is an option
        return " ".join(["gemmconf", "repro", *options, "--", shell_word(item_id)])
    return " ".join(["gemmconf", "repro", shell_word(item_id), *options])


def _seed_of(record: Record, document: Mapping[str, Any]) -> int:
    for value in (record.seed, document.get("seed")):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def _item(
    record: Record,
    document: Mapping[str, Any],
    specs: Mapping[str, str],
    category: str,
    run: int,
) -> Item:
    label = record.backend
    spec = specs.get(label, label)
    seed = _seed_of(record, document)
    target = record.target_arch or document.get("target_arch")
    nodeid = record.nodeid or ids.node_id(record.source or "", record.id, label)
    reason = (record.reason or "").strip()
    first = reason.splitlines()[0] if reason else ""
    if len(first) > REASON_CHARS:
        first = first[:REASON_CHARS] + " ..."
    return Item(
        id=record.id,
        category=category,
        outcome=record.outcome,
        kind=record.kind or record.outcome,
        inherited=record.inherited if category == "inherited" else None,
        reason=terminal(first),
        rerun=rerun_command(nodeid, spec, seed, target),
        standalone=standalone_command(record.id, spec, seed, target),
        run=run,
    )


# ---- building the matrix ----------------------------------------------------------------------


class _Builder:
    """Adds the records of one file after another, checking that no column gets an item twice."""

    def __init__(self, later_wins: bool) -> None:
        self.later_wins = later_wins
        self.placed: dict[tuple[Column, str], tuple[str, str, int]] = {}  # -> family, file, run
        self.records: dict[tuple[Column, str], tuple[Record, Mapping, Mapping, int]] = {}

    def add(self, path: str, document: Mapping[str, Any], run: int) -> None:
        specs = backend_specs(dict(document))
        for record in typed(document["records"]):
            column = column_of(record, document)
            key = (column, record.id)
            if key in self.placed and not self.later_wins:
                earlier = self.placed[key][1]
                raise results.ResultsError(
                    f"{path}: {record.id} on {column.backend} ({column.device}) is also in "
                    f"{earlier}: give each backend's run on a machine once (shards of one run "
                    "add up; two runs of one item do not), or pass --later-wins to keep the "
                    "file named later"
                )
            self.placed[key] = (family_of(record), path, run)
            self.records[key] = (record, document, specs, run)

    def cells(self) -> dict[tuple[str, Column], Cell]:
        cells: dict[tuple[str, Column], Cell] = {}
        listed = 0
        for key in sorted(self.records, key=lambda k: (k[0].sort_key(), k[1])):
            record, document, specs, run = self.records[key]
            family = self.placed[key][0]
            cell = cells.setdefault((family, key[0]), Cell())
            category = category_of(record)
            cell.counts[category] += 1
            if category not in LISTED:
                continue
            if len(cell.items) < ITEMS_PER_CELL and listed < ITEMS_TOTAL:
                cell.items.append(_item(record, document, specs, category, run))
                listed += 1
            else:
                cell.unlisted += 1
        for cell in cells.values():  # own failures first, then inherited, then harness errors
            cell.items.sort(key=lambda item: (LISTED.index(item.category), item.id))
        return cells


def _run_of(number: int, path: str, document: Mapping[str, Any]) -> Run:
    records = typed(document["records"])
    distinct: dict[str, dict[str, Any]] = {}  # a run's environments, once each
    for record in records or [None]:
        environment = environment_of(record, document)
        distinct.setdefault(json.dumps(environment, sort_keys=True, default=str), environment)
    environments = list(distinct.values())
    versions = list(dict.fromkeys(entry for e in environments for entry in _versions(e)))
    for backend in sorted({r.backend for r in records}):
        versions += [v for v in _package_versions(document, backend) if v not in versions]
    source = document.get("gemmconf")
    commit = (
        document.get("commit")
        or (source.get("commit") if isinstance(source, Mapping) else None)
        or environment_of(None, document).get("commit")
    )
    return Run(
        number=number,
        path=path,
        backends=tuple(sorted({r.backend for r in records})),
        devices=tuple(sorted({device_of(e) for e in environments})),
        hardware_classes=tuple(sorted({hardware_class_of(e) for e in environments})),
        versions=tuple(versions),
        finished=_text(document["finished"]) if document.get("finished") else None,
        complete=document.get("complete") is True,
        exit_status=document.get("exit_status"),
        suite_version=_text(document["suite_version"]) if document.get("suite_version") else None,
        seed=document.get("seed"),
        command=shown_command(document.get("command")),
        commit=_text(commit) if commit else None,
        records=len(records),
    )


def build(inputs: Sequence[tuple[str, Mapping[str, Any]]], *, later_wins: bool = False) -> Matrix:
    """The matrix of (name, document) pairs, in order (numbered from 1 on the page)."""
    if not inputs:
        raise results.ResultsError("no results file given")
    builder = _Builder(later_wins)
    runs = []
    for number, (path, document) in enumerate(inputs, 1):
        builder.add(path, document, number)
        runs.append(_run_of(number, path, document))
    column_runs: dict[Column, set[int]] = {}
    column_versions: dict[Column, dict[str, None]] = {}  # insertion-ordered sets
    for (column, _), (record, document, _, run) in builder.records.items():
        column_runs.setdefault(column, set()).add(run)
        entries = _versions(environment_of(record, document))
        entries += _package_versions(document, record.backend)
        versions = ", ".join(f"{n} {v}" for n, v in entries)
        column_versions.setdefault(column, {})[versions] = None
    cells = builder.cells()
    families = sorted({family for family, _ in cells}, key=lambda f: (folder_of(f), f))
    columns = sorted(column_runs, key=Column.sort_key)
    if len(families) * len(columns) > MAX_CELLS:
        raise results.ResultsError(
            f"{len(families):,} families x {len(columns):,} columns (backend, machine) are more "
            f"than {MAX_CELLS:,} cells for one page: give fewer results files"
        )
    return Matrix(
        runs=tuple(runs),
        columns=tuple(columns),
        families=tuple(families),
        cells=cells,
        column_runs={c: tuple(sorted(column_runs[c])) for c in columns},
        column_versions={c: tuple(v for v in column_versions[c] if v) for c in columns},
    )


def load(paths: Sequence[str | Path], *, later_wins: bool = False) -> Matrix:
    """Read each file with `merge.load` (errors name the file), then `build`."""
    seen: dict[Path, str] = {}
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in seen:
            raise results.ResultsError(f"{path}: given twice (also as {seen[resolved]})")
        seen[resolved] = str(path)
    return build([(str(p), merge.load(p)) for p in paths], later_wins=later_wins)


# ---- the page ---------------------------------------------------------------------------------


def matrix_data(matrix: Matrix) -> dict[str, Any]:
    """The counts as the page embeds them (JSON, for tools; the page itself needs no script)."""
    return {
        "categories": list(CATEGORY_KEYS),
        "columns": [
            {
                "backend": c.backend,
                "hardware_class": c.hardware_class,
                "device": c.device,
                "runs": list(matrix.column_runs[c]),
            }
            for c in matrix.columns
        ],
        "families": list(matrix.families),
        "cells": [
            [
                None
                if (cell := matrix.cells.get((f, c))) is None
                else [cell.counts[k] for k in CATEGORY_KEYS]
                for c in matrix.columns
            ]
            for f in matrix.families
        ],
        "runs": [{"number": r.number, "file": r.path, "records": r.records} for r in matrix.runs],
    }


def render(matrix: Matrix, *, title: str = "") -> str:
    """The whole page as one string."""
    classes: list[tuple[str, int]] = []  # (hardware class, columns) for the header's first row
    for column in matrix.columns:
        if classes and classes[-1][0] == column.hardware_class:
            classes[-1] = (column.hardware_class, classes[-1][1] + 1)
        else:
            classes.append((column.hardware_class, 1))
    folders: dict[str, list[str]] = {}
    for family in matrix.families:
        folders.setdefault(folder_of(family), []).append(family)
    sections = [
        (fi, ci, family, column, cell)
        for ci, column in enumerate(matrix.columns)
        for fi, family in enumerate(matrix.families)
        if (cell := matrix.cells.get((family, column))) is not None and cell.failing
    ]
    template = templating.environment().get_template("matrix.html.j2")
    return template.render(
        sections=sections,
        family_index={family: i for i, family in enumerate(matrix.families)},
        title=title or "gemmconf matrix",
        matrix=matrix,
        classes=classes,
        folders=folders,
        categories=CATEGORIES,
        labels={key: label for key, label, *_ in CATEGORIES},
        listed=LISTED,
        inherited_text=attribution.INHERITED_TEXT,
        totals={c: matrix.totals(c) for c in matrix.columns},
        css=templating.stylesheet("matrix.css"),
        data=jinja2.utils.markupsafe.Markup(templating.script_json(matrix_data(matrix))),
        items_per_cell=ITEMS_PER_CELL,
    )


def write_page(
    paths: Sequence[str | Path], out: str | Path, *, later_wins: bool = False, title: str = ""
) -> tuple[Path, Matrix]:
    """Load the results files (errors name the file) and write the page atomically."""
    matrix = load(paths, later_wins=later_wins)
    html = render(matrix, title=title)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out)
    return out, matrix
