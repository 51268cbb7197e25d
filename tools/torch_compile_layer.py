"""Compare a pass-through backend's run with the torch.compile layer of expectations
(suites/expectations/torch_compile.yaml).

    python tools/torch_compile_layer.py reports/results.json [more results files] [--suites DIR]

A pass-through backend (`--backend dynamo:aot_eager`) computes nothing of its own, so every
failure of its run that it does not inherit from eager (`inherited: eager`: no kernel here) is
torch.compile's, and belongs in the layer. Printed:

- the failures the layer lacks, as entries to paste, one per scenario, kind and reason
  signature, for the hardware class and torch version of the run (edit each `message` down to
  the part of the reason that does not change with shapes);
- the layer's entries that hold on the run's hardware and torch whose items ran and did not
  fail as the entry says (torch fixed it, or the entry is wider than what fails).

Exit status 1 when either list is non-empty. A run's items are taken as running on its
machine's class (a CPU machine: cpu).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from gemmconf import expectations
from gemmconf.report.groups import signature
from gemmconf.scenario import discover, load_suite

ROOT = Path(__file__).resolve().parents[1]
FAILING = ("failed", "xfailed")
RAN = ("passed", "failed", "xfailed", "xpassed")


def hardware_of(record: Mapping[str, Any]) -> str:
    environment = record.get("environment") or {}
    if environment.get("device") == "cpu":
        return "cpu"
    return str(environment.get("hardware_class") or "cpu")


def torch_of(record: Mapping[str, Any]) -> str | None:
    return (record.get("environment") or {}).get("torch")


def owned_by_torch_compile(record: Mapping[str, Any]) -> bool:
    """A pass-through's failure that is not eager's: torch.compile's own."""
    return record.get("outcome") in FAILING and record.get("inherited") != "eager"


def message_of(reason: str) -> str:
    """A draft `message`: the reason's last clause, as a literal, cut before its first number
    (shapes and counts change between items)."""
    first = reason.strip().splitlines()[0] if reason.strip() else ""
    clause = first.rsplit(": ", 1)[-1]
    clause = re.split(r"\d", clause, maxsplit=1)[0].strip() or first[:60]
    return re.escape(clause[:80]).replace("\\ ", " ")


def draft(missing: list[Mapping[str, Any]], ran: list[Mapping[str, Any]]) -> list[dict]:
    """Entries for failures the layer lacks: a scenario's items alike in kind and signature."""
    groups: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = {}
    for record in missing:
        key = (
            f"{record['suite']}/{record['scenario']}",
            str(record.get("kind")),
            signature(record.get("reason")),
            hardware_of(record),
        )
        groups.setdefault(key, []).append(record)
    entries = []
    for (scenario, kind, _, hardware), members in sorted(groups.items()):
        ids = sorted(r["id"] for r in members)
        of_scenario = {r["id"] for r in ran if f"{r['suite']}/{r['scenario']}" == scenario}
        if set(ids) == of_scenario:
            match: Any = f"{scenario}[*]" if ids[0] != scenario else scenario
        else:
            match = ids[0] if len(ids) == 1 else {"id": ids}
        version = torch_of(members[0]) or ""
        entry = {"match": match, "hardware": hardware}
        if version:
            major_minor = ".".join(version.split("+")[0].split(".")[:2])
            entry["torch"] = f"=={major_minor}.*"
        entry |= {
            "kind": kind,
            "message": message_of(str(members[0].get("reason") or "")),
            "reason": f"TODO: why torch.compile fails these ({str(members[0]['reason'])[:120]})",
        }
        entries.append(entry)
    return entries


def compare(records: list[Mapping[str, Any]], table: expectations.ExpectationTable):
    """(failures the layer lacks, (record, entry) pairs the run contradicts)."""
    missing, contradicted = [], []
    for record in records:
        if record.get("outcome") not in RAN:
            continue
        entry = table.lookup(record["id"], hardware_of(record), torch_of(record))
        failing = owned_by_torch_compile(record)
        if entry is None:
            if failing:
                missing.append(record)
        elif not (failing and entry.expects(record.get("kind"), str(record.get("reason") or ""))):
            contradicted.append((record, entry))
    return missing, contradicted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--suites", type=Path, default=ROOT / "suites")
    args = parser.parse_args(argv)
    suites = args.suites.resolve()
    instances = [i for path in discover([suites], suites.parent) for i in load_suite(path)]
    table = expectations.load_layer(suites / "expectations", instances, suites.parent)
    if table is None:
        table = expectations.ExpectationTable(expectations.LAYER_BACKEND, ())
    records = [r for path in args.results for r in json.loads(path.read_text())["records"]]
    missing, contradicted = compare(records, table)
    backends = sorted({str(r.get("backend")) for r in records})
    print(f"{len(records)} records of {', '.join(backends)}; layer: {len(table.entries)} entries")
    failing = [r for r in records if owned_by_torch_compile(r)]
    print(f"torch.compile's own failures in the run (not eager's): {len(failing)}")
    if missing:
        print(f"\n{len(missing)} failures the layer lacks; entries to paste:\n")
        ran = [r for r in records if r.get("outcome") in RAN]
        text = yaml.safe_dump(draft(missing, ran), sort_keys=False, width=96)
        print("\n".join(f"  {line}" for line in text.splitlines()))
    if contradicted:
        print(f"\n{len(contradicted)} items the layer expects to fail did not fail so:")
        for record, entry in contradicted:
            got = record["outcome"] if record["outcome"] not in FAILING else record.get("kind")
            print(f"  {record['id']}: {got}; the layer [{entry.source}] expects {entry.kind}")
    if not missing and not contradicted:
        print("the layer and the run agree")
    return 1 if missing or contradicted else 0


if __name__ == "__main__":
    sys.exit(main())
