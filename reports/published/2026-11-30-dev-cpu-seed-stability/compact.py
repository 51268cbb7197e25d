"""The verdicts of results files, compact: per run (file), its seed, counts and `gemmconf`
version line, and per (id, backend) the outcome, failure kind, metrics.rounds, metrics.borderline
and, where a shape set took more than one round, metrics.err_ratio_rounds and max_ratio.

    python compact.py OUT.json.gz LABEL=results.json ...

`tools/seed_stability.py results` reads whole results files; `python compact.py --compare
verdicts.json.gz LABEL LABEL ...` does the same comparison (outcome and kind) on this file.
"""

from __future__ import annotations

import gzip
import json
import sys


def compact(path: str) -> dict:
    document = json.loads(open(path).read())
    records = {}
    for r in document["records"]:
        m = r.get("metrics") or {}
        entry = [r["outcome"], r.get("kind"), m.get("rounds"), m.get("borderline")]
        if m.get("err_ratio_rounds"):
            entry += [m["err_ratio_rounds"], m.get("max_ratio")]
        records[f"{r['id']}@{r['backend']}"] = entry
    return {
        "seed": document.get("seed"),
        "counts": document.get("counts"),
        "gemmconf": document.get("gemmconf"),
        "records": records,
    }


def compare(path: str, labels: list[str]) -> int:
    runs = json.loads(gzip.open(path).read())
    common = set.intersection(*(set(runs[label]["records"]) for label in labels))
    differ = sorted(
        k for k in common if len({tuple(runs[la]["records"][k][:2]) for la in labels}) > 1
    )
    print(f"compared {len(common):,} (id, backend) over {', '.join(labels)}: {len(differ)} differ")
    for k in differ:
        print("  ", k, [runs[la]["records"][k][:2] for la in labels])
    return len(differ)


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        raise SystemExit(1 if compare(sys.argv[2], sys.argv[3:]) else 0)
    out = {}
    for arg in sys.argv[2:]:
        label, path = arg.split("=", 1)
        out[label] = compact(path)
    with gzip.open(sys.argv[1], "wt") as f:
        json.dump(out, f, separators=(",", ":"))
