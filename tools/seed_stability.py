"""Are verdicts the same whatever `--seed` draws? (issue 14: identical verdicts for --seed 1..5.)

Two checks, each printing what it compared and every difference; exit status 1 on a difference.

    python tools/seed_stability.py results reports/seed1.json reports/seed2.json ...
        Records of results files of runs that differ only in --seed: the outcome and failure
        kind of every (id, backend) present in all of them. Produce them with, for example,
        `pytest suites --backend eager,reference -n 2 --seed N --results reports/seedN.json`.

    python tools/seed_stability.py planted --seeds 1-5
        Every planted backend of tests/planted_backends.py on the items tests/test_planted_bugs.py
        runs it on, once per seed (in this process, through `run_item`): which items fail, and
        with which kind.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def verdicts_of_results(path: Path) -> dict[tuple[str, str], tuple[str, str | None]]:
    document = json.loads(path.read_text())
    return {(r["id"], r["backend"]): (r["outcome"], r.get("kind")) for r in document["records"]}


def compare(runs: dict[str, dict[tuple[str, str], tuple]]) -> int:
    """Print the comparison of `runs` (label -> key -> verdict); the number of keys that differ."""
    labels = list(runs)
    common = set.intersection(*(set(v) for v in runs.values()))
    differing = sorted(k for k in common if len({runs[label][k] for label in labels}) > 1)
    first = runs[labels[0]]
    counts = Counter(first[k][0] for k in common)
    print(f"compared {len(common):,} verdicts over {len(labels)} runs ({', '.join(labels)})")
    print("  outcomes in the first: " + ", ".join(f"{o} {n:,}" for o, n in sorted(counts.items())))
    only = {label: len(set(v) - common) for label, v in runs.items() if len(set(v) - common)}
    if only:
        print(f"  not in every run (left out): {only}")
    for key in differing:
        shown = "; ".join(f"{label}: {runs[label][key]}" for label in labels)
        print(f"  DIFFERS {key}: {shown}")
    print(f"  {len(differing)} differ")
    return len(differing)


def seeds_of(text: str) -> list[int]:
    if "-" in text:
        low, high = text.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in text.split(",")]


def planted(seeds: list[int]) -> int:
    sys.path.insert(0, str(ROOT / "tests"))
    import test_planted_bugs  # the cases live with the tests that assert them

    differing = 0
    for name, case in sorted(test_planted_bugs.CAUGHT.items()):
        start = time.perf_counter()
        runs = {}
        for seed in seeds:
            found = test_planted_bugs.outcomes(name, case, seed=seed)
            runs[f"seed {seed}"] = {(i, name): (o.passed, o.kind) for i, o in found.items()}
        print(f"{name} ({time.perf_counter() - start:.0f} s):")
        failing = sum(not v[0] for v in runs[f"seed {seeds[0]}"].values())
        print(f"  failing items at seed {seeds[0]}: {failing}")
        differing += compare(runs)
    return differing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    results = sub.add_parser("results", help="compare results files of runs with other seeds")
    results.add_argument("files", nargs="+", type=Path)
    planted_parser = sub.add_parser("planted", help="run the planted backends over seeds")
    planted_parser.add_argument("--seeds", default="1-5", help="a range (1-5) or a list (1,3)")
    args = parser.parse_args(argv)
    if args.command == "results":
        if len(args.files) < 2:
            parser.error("results: name at least two files")
        runs = {str(path): verdicts_of_results(path) for path in args.files}
        return 1 if compare(runs) else 0
    return 1 if planted(seeds_of(args.seeds)) else 0


if __name__ == "__main__":
    raise SystemExit(main())
