"""The compact terminal summary printed at the end of every run."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

SHORT = {"passed": "pass", "failed": "FAIL", "xfailed": "xfail", "xpassed": "XPASS",
         "skipped": "skip", "error": "ERROR"}


def render_terminal_summary(records: list[dict[str, Any]], capability: Any) -> list[str]:
    rows: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    hardware_skips: Counter = Counter()
    for record in records:
        rows[(record["backend"], record["op"], record["dtype"])][record["outcome"]] += 1
        if record["outcome"] == "skipped" and record.get("skip_class"):
            hardware_skips[record["skip_class"]] += 1
    lines = ["", f"gemmconf summary on {capability.name} ({capability.hardware_class}):"]
    width = max(len(f"{b} {o} {d}") for b, o, d in rows)
    for (backend, op, dtype), counts in sorted(rows.items()):
        parts = [f"{counts[k]} {v}" for k, v in SHORT.items() if counts[k]]
        lines.append(f"  {f'{backend} {op} {dtype}':<{width}}  {', '.join(parts)}")
    total = Counter(r["outcome"] for r in records)
    lines.append("  total: " + ", ".join(f"{total[k]} {v}" for k, v in SHORT.items() if total[k]))
    if hardware_skips:
        classes = ", ".join(f"{n} need {c}" for c, n in sorted(hardware_skips.items()))
        lines.append(f"  skipped for hardware: {sum(hardware_skips.values())} ({classes}); "
                     "--require-hardware CLASS turns these into failures")
    return lines
