"""Join results files (shards, backends, machines) into one results file.

The rules, which `gemmconf report merge --help` repeats:

- Every input is read with `results.read`: a file that is not ours, truncated or of another
  version is a `ResultsError` naming it.
- **Suite version.** Each file states the suite it ran as its top-level `suite_version` (a hash of
  every suite and expectation file, written by the plugin; a merged file of mixed suites lists
  them in `suite_versions`). Files of different suite versions are refused unless `allow_mixed`:
  a report over two versions of a scenario would count one item twice or compare unlike things.
  A file without a suite version counts as "unknown"; files that all lack it merge, with a warning
  that nothing could be checked.
- **Duplicates.** A record is identified by (id, backend, device name): the same item on two
  machines is two records, both kept. The same key in two files means a shard ran twice or a
  file was given twice; that is an error, unless `later_wins`, where the file named later on the
  command line replaces the earlier record (re-running a flaky shard).
- **Top level.** `complete` only when every input is complete; `exit_status` the largest;
  `finished` the latest; `backends` the union in order; `seed`, `target_arch` and `environment`
  are kept when every input agrees and are None otherwise, and then each record carries its own
  `seed` and `target_arch` so that its repro command stays right. `merged_from` lists the inputs.
- **Shards.** A warning where the inputs are shards (`--shard i/n`) of one split but not all of
  them, or shards of different splits.
- **Never ran.** `never_ran` lists the items (id, backend) that were skipped in every record of
  the merge, on every machine that has them, with each machine's skip reason: what no machine
  of the merge tested.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gemmconf.record import Record, RecordError, device_name, typed
from gemmconf.report import results

UNKNOWN = "unknown"


class MergeError(ValueError):
    """The inputs cannot be merged as asked (mixed suite versions, duplicate records)."""


def device_of(record: Record, document: dict[str, Any] | None = None) -> str:
    """The device name a record ran on: its own environment, else its file's."""
    return device_name(record.environment or (document or {}).get("environment") or {})


def suite_versions(document: dict[str, Any]) -> set[str]:
    """The suite versions a results file holds: one for a run, several for a mixed merge."""
    listed = document.get("suite_versions")
    if isinstance(listed, list) and listed:
        return {str(v) for v in listed}
    version = document.get("suite_version")
    return {str(version)} if version else {UNKNOWN}


def seeds(document: dict[str, Any]) -> set[str]:
    """The seeds a results file's inputs were drawn with: the run's, or for a merge of runs
    with different seeds each record's own (`merge` keeps them there)."""
    seed = document.get("seed")
    if seed is None:
        records = typed(document.get("records", []))
        found = {str(r.seed) for r in records if r.seed is not None}
        return found or {UNKNOWN}
    return {str(seed)}


def _check_shards(inputs: Sequence[tuple[str, dict[str, Any]]], warnings: list[str]) -> None:
    """A warning where the inputs hold shards (`--shard i/n`) of a split but not all of them, or
    shards of different splits: the merged file then lacks items (or an item ran twice) though
    every input is complete. (CI trial, 2026-11-26: one shard of two merged without a word.)"""
    splits: dict[int, set[int]] = {}
    for _, document in inputs:
        part, _, total = str(document.get("shard") or "").partition("/")
        if part.isdigit() and total.isdigit():
            splits.setdefault(int(total), set()).add(int(part))
    if len(splits) > 1:
        named = ", ".join(f"{i}/{n}" for n, parts in sorted(splits.items()) for i in sorted(parts))
        warnings.append(
            f"the inputs are shards of different splits ({named}): their items overlap or leave "
            "gaps; merge the shards of one --shard i/n split"
        )
    for total, parts in sorted(splits.items()):
        missing = sorted(set(range(1, total + 1)) - parts)
        if missing:
            warnings.append(
                f"shard(s) {', '.join(f'{i}/{total}' for i in missing)} of the split into "
                f"{total} are not among the inputs: their items are not in the merged file"
            )


def merge(
    inputs: Sequence[tuple[str, dict[str, Any]]],
    *,
    allow_mixed: bool = False,
    later_wins: bool = False,
    command: str | None = None,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """Merge (name, document) pairs, in order, into one results document (its records typed:
    `write` writes them as JSON)."""
    if not inputs:
        raise MergeError("nothing to merge: give at least one results file")
    inputs = [(name, {**doc, "records": typed(doc["records"])}) for name, doc in inputs]
    warnings = [] if warnings is None else warnings
    _check_suite_versions(inputs, allow_mixed, warnings)
    _check_shards(inputs, warnings)

    seeds = {_seed_key(doc.get("seed")) for _, doc in inputs}
    targets = {_seed_key(doc.get("target_arch")) for _, doc in inputs}
    environments = {json.dumps(doc.get("environment"), sort_keys=True) for _, doc in inputs}

    records = _merged_records(
        inputs, later_wins, stamp_seed=len(seeds) > 1, stamp_target=len(targets) > 1
    )

    documents = [doc for _, doc in inputs]
    versions = sorted(set().union(*(suite_versions(doc) for doc in documents)))
    backends: list[str] = []
    for document in documents:
        for spec in document.get("backends") or []:
            if spec not in backends:
                backends.append(spec)
    label_specs: dict[str, str] = {}
    packages: dict[str, Any] = {}
    for document in documents:
        label_specs.update(document.get("backend_specs") or {})
        packages.update(_mapping(document.get("backend_packages")))
    sources = {json.dumps(doc.get("gemmconf"), sort_keys=True) for doc in documents}
    out: dict[str, Any] = {
        "format": results.FORMAT,
        "version": results.VERSION,
        "complete": all(doc.get("complete") is True for doc in documents),
        "exit_status": max(int(doc.get("exit_status") or 0) for doc in documents),
        "finished": max((str(doc.get("finished") or "") for doc in documents), default=""),
        "command": command,
        "seed": documents[0].get("seed") if len(seeds) == 1 else None,
        "target_arch": documents[0].get("target_arch") if len(targets) == 1 else None,
        "backends": backends,
        "environment": documents[0].get("environment") if len(environments) == 1 else None,
        "suite_version": versions[0] if len(versions) == 1 and versions[0] != UNKNOWN else None,
        "merged_from": [_provenance(name, doc) for name, doc in inputs],
        **results.document_counts(records),
        "records": records,
    }
    out["never_ran"] = never_ran(records)
    if label_specs:
        out["backend_specs"] = label_specs
    if packages:
        out["backend_packages"] = packages
    if len(sources) == 1 and documents[0].get("gemmconf"):
        out["gemmconf"] = documents[0]["gemmconf"]  # else each file's is in merged_from
    if len(versions) > 1:
        out["suite_versions"] = versions
    return out


def _merged_records(
    inputs: Sequence[tuple[str, dict[str, Any]]],
    later_wins: bool,
    *,
    stamp_seed: bool,
    stamp_target: bool,
) -> list[Record]:
    """The inputs' records, one per (id, backend, device), sorted so; a MergeError where a key
    repeats (in one file: damaged; across files: unless `later_wins`). `stamp_seed` and
    `stamp_target`: the inputs disagree on it, so that each record carries its file's own."""
    merged: dict[tuple[str, str, str], Record] = {}
    origin: dict[tuple[str, str, str], str] = {}
    duplicates: list[str] = []
    for name, document in inputs:
        seen_here: set[tuple[str, str, str]] = set()
        for record in document["records"]:
            if stamp_seed:
                record = record.stamped("seed", document.get("seed"))
            if stamp_target:
                record = record.stamped("target_arch", document.get("target_arch"))
            key = (record.id, record.backend, device_of(record, document))
            if key in seen_here:
                raise MergeError(
                    f"{name}: holds two records for {key[0]} on {key[1]} "
                    f"({key[2] or 'no device'}); the file is damaged"
                )
            seen_here.add(key)
            if key in merged and not later_wins:
                duplicates.append(
                    f"{key[0]} on {key[1]} ({key[2] or 'no device'}) in {origin[key]} and {name}"
                )
            merged[key] = record
            origin[key] = name
    if duplicates:
        more = f" and {len(duplicates) - 3} more" if len(duplicates) > 3 else ""
        raise MergeError(
            f"{len(duplicates)} item(s) appear in more than one file: "
            f"{'; '.join(duplicates[:3])}{more}. A shard ran twice or a file was "
            "given twice; pass --later-wins to let the file named later replace "
            "the earlier records"
        )
    return sorted(merged.values(), key=lambda r: (r.id, r.backend, r.device))


def never_ran(records: Sequence[Record]) -> list[dict[str, Any]]:
    """The items skipped in every one of their records, each with where and why: ``{"id",
    "backend", "skipped_on": [{"device", "reason"}, ...]}``, sorted by id and backend."""
    by_item: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        by_item.setdefault((record.id, record.backend), []).append(record)
    found = []
    for (item_id, backend), group in sorted(by_item.items()):
        if all(r.outcome == "skipped" for r in group):
            found.append(
                {
                    "id": item_id,
                    "backend": backend,
                    "skipped_on": [{"device": r.device or None, "reason": r.reason} for r in group],
                }
            )
    return found


def _seed_key(value: Any) -> str:
    return json.dumps(value)


def _check_suite_versions(
    inputs: Sequence[tuple[str, dict[str, Any]]], allow_mixed: bool, warnings: list[str]
) -> None:
    by_file = {name: suite_versions(doc) for name, doc in inputs}
    everything = set().union(*by_file.values())
    if everything == {UNKNOWN}:
        if len(inputs) > 1:
            warnings.append(
                "no input states its suite_version: cannot check that they ran the same suite"
            )
        return
    if len(everything) == 1 or allow_mixed:
        if len(everything) > 1:
            warnings.append(
                f"merging results of {len(everything)} suite versions "
                f"({', '.join(sorted(everything))}) as asked (--allow-mixed)"
            )
        return
    listing = "; ".join(f"{name}: {', '.join(sorted(v))}" for name, v in by_file.items())
    raise MergeError(
        f"the inputs ran different suite versions ({listing}); results of different "
        "suites do not add up. Re-run on one suite version, or pass --allow-mixed"
    )


def _provenance(name: str, document: dict[str, Any]) -> dict[str, Any]:
    environment = document.get("environment") or {}
    return {
        "file": name,
        "command": document.get("command"),
        "seed": document.get("seed"),
        "suite_version": document.get("suite_version"),
        "finished": document.get("finished"),
        "complete": document.get("complete"),
        "exit_status": document.get("exit_status"),
        "device_name": environment.get("device_name"),
        "gemmconf": document.get("gemmconf"),
        "records": len(document["records"]),
    }


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def load(path: str | Path) -> dict[str, Any]:
    """`results.read`, its records read as `Record`s (each checked: identity, outcome, the type
    of every field it has), and the run's fields checked; errors name the file, the record and
    the field."""
    document = results.read(path)
    try:
        records = typed(document["records"])
    except RecordError as exc:
        raise results.ResultsError(f"{path}: {exc}") from None
    problem = _mistyped(document, DOCUMENT_TYPES)
    if problem:
        raise results.ResultsError(f"{path}: the run's {problem}")
    specs = document.get("backend_specs") or {}
    if not isinstance(specs, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in specs.items()
    ):
        raise results.ResultsError(f"{path}: 'backend_specs' is not a mapping of names to specs")
    backends = document.get("backends") or []
    if not isinstance(backends, list) or not all(isinstance(b, str) for b in backends):
        raise results.ResultsError(f"{path}: 'backends' is not a list of names")
    return {**document, "records": records}


# The run's fields a results file's reader puts in printed commands (the page's reproduce
# command), with the types a run writes: a seed is an integer everywhere (a seed of
# "0; touch /tmp/x #" made the page's reproduce command run the attacker's command when
# pasted). A record's fields are checked by `Record.from_json`.
DOCUMENT_TYPES = {"seed": int, "target_arch": str, "command": str}


def _mistyped(fields: dict[str, Any], types: dict[str, type]) -> str | None:
    for name, wanted in types.items():
        value = fields.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, wanted)):
            kind = "an integer" if wanted is int else "text"
            return f"has {name} {value!r:.80}: expected {kind} or null"
    return None


def merge_files(paths: Sequence[str | Path], **options: Any) -> dict[str, Any]:
    """Load each file (errors name the file), then `merge`."""
    seen: dict[Path, str] = {}
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in seen:
            raise MergeError(f"{path}: given twice (also as {seen[resolved]})")
        seen[resolved] = str(path)
    return merge([(str(p), load(p)) for p in paths], **options)


def write(document: dict[str, Any], path: str | Path) -> Path:
    """Write a results document atomically, in the format `results.read` accepts."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [r.to_json() if isinstance(r, Record) else r for r in document["records"]]
    tmp = path.with_name(path.name + ".tmp")
    text = json.dumps({**document, "records": records}, indent=1, sort_keys=True)
    tmp.write_text(text + "\n")
    os.replace(tmp, path)
    return path
