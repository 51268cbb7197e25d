"""What the memory ledgers did in one or more runs (issue 43): per results file, its items, how
many were admitted by an earlier run's measured peak (--durations-from) or by their estimate,
to the GPU's ledger and to the host's, how many of those were rerun by their estimate after
running out of memory, the out-of-memory failures that stood, the items that ran alone, and the
seconds waited for memory by ledger.

    python tools/memory_waits.py unconstrained.json budget24.json

A measuring aid for GPU runs (a budget run's result next to the run it was measured by);
nothing here is asserted.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

from gemmconf.report import results


def summary(document: dict[str, Any]) -> dict[str, Any]:
    """The counts and seconds the module docstring lists, for one results document."""
    records = document.get("records") or []
    admitted: Counter[str] = Counter()
    on_host: Counter[str] = Counter()
    waits: Counter[str] = Counter()
    found = Counter(retried=0, oom_failed=0, alone=0, waited=0)
    seconds = 0.0
    for record in records:
        metrics = record.get("metrics") or {}
        if metrics.get("memory_admitted_by"):
            admitted[metrics["memory_admitted_by"]] += 1
        if metrics.get("host_memory_admitted_by"):
            on_host[metrics["host_memory_admitted_by"]] += 1
        found["retried"] += "memory_measured_retry" in metrics
        found["alone"] += bool(metrics.get("memory_alone"))
        found["oom_failed"] += record.get("outcome") == "failed" and isinstance(
            metrics.get("out_of_memory"), dict
        )
        if metrics.get("memory_wait_s"):
            found["waited"] += 1
            seconds += float(metrics["memory_wait_s"])
            waits.update({k: float(v) for k, v in (metrics.get("memory_waits_s") or {}).items()})
    return {
        "items": len(records),
        "counts": document.get("counts"),
        "admitted": dict(admitted),
        "host_admitted": dict(on_host),
        **found,
        "wait_s": round(seconds, 1),
        "wait_s_by_ledger": {k: round(v, 1) for k, v in sorted(waits.items())},
    }


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for name in argv:
        found = summary(results.read(Path(name)))
        print(
            f"{name}: {found['items']} records {found['counts']}; admitted by measurement "
            f"{found['admitted'].get('measured', 0) + found['retried']}, by estimate "
            f"{found['admitted'].get('estimate', 0) - found['retried']} ({found['retried']} "
            f"rerun by the estimate after running out); host's by measurement "
            f"{found['host_admitted'].get('measured', 0)}, by estimate "
            f"{found['host_admitted'].get('estimate', 0)}; out-of-memory failures "
            f"{found['oom_failed']}; ran alone {found['alone']}; {found['waited']} waited "
            f"{found['wait_s']} s {found['wait_s_by_ledger']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
