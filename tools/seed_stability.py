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

    python tools/seed_stability.py suite suites/dense/first.yaml --backend eager,reference
        --seeds 1-5 [-k TEXT]
        The items of suite files (those whose id contains TEXT) on each backend, once per seed,
        in this process through `run_item` on this machine's device: the verdicts that differ,
        and what the judgments cost (draws, rounds; items decided at the bar: borderline).
        A backend is any --backend name, or `planted_backends:near_bar` (tests/ is on the
        path): a backend whose error sits at the bar.
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


def suite(files: list[Path], backends: list[str], seeds: list[int], match: str) -> int:
    sys.path.insert(0, str(ROOT / "tests"))  # planted_backends:<name>
    from gemmconf import capability
    from gemmconf.backends import resolve
    from gemmconf.runner import run_item
    from gemmconf.scenario import load_suite

    here = capability.detect()
    items = [
        i
        for path in files
        for i in load_suite(path)
        if match in i.id and capability.unmet(i.requires, here) is None
    ]
    differing = 0
    for name in backends:
        backend = resolve(name)
        runs = {}
        for seed in seeds:
            start = time.perf_counter()
            found = {
                i.id: run_item(
                    i,
                    backend,
                    seed=seed,
                    device=capability.item_device(i.requires, here.device),
                    target=None,
                )
                for i in items
            }
            runs[f"seed {seed}"] = {
                (i, name): ("passed" if o.passed else "failed", o.kind) for i, o in found.items()
            }
            cost: Counter[str] = Counter()
            for o in found.values():
                cost["draws"] += int(o.metrics.get("draws") or 0)
                cost["rounds"] += int(o.metrics.get("rounds") or 0)
                cost["near"] += int((o.metrics.get("rounds") or 1) > 1)
                cost["borderline"] += int(bool(o.metrics.get("borderline")))
            print(
                f"{name} seed {seed} ({time.perf_counter() - start:.0f} s): {len(found)} items, "
                f"{sum(not o.passed for o in found.values())} failed; draws {cost['draws']:,}, "
                f"rounds {cost['rounds']:,}, items with more than one round {cost['near']}, "
                f"borderline {cost['borderline']}"
            )
        differing += compare(runs)
    return differing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    results = sub.add_parser("results", help="compare results files of runs with other seeds")
    results.add_argument("files", nargs="+", type=Path)
    planted_parser = sub.add_parser("planted", help="run the planted backends over seeds")
    planted_parser.add_argument("--seeds", default="1-5", help="a range (1-5) or a list (1,3)")
    suite_parser = sub.add_parser("suite", help="run suite files' items over seeds, in-process")
    suite_parser.add_argument("files", nargs="+", type=Path)
    suite_parser.add_argument("--backend", default="eager", help="names, comma-separated")
    suite_parser.add_argument("--seeds", default="1-5", help="a range (1-5) or a list (1,3)")
    suite_parser.add_argument("-k", dest="match", default="", help="ids that contain this")
    args = parser.parse_args(argv)
    if args.command == "suite":
        backends = args.backend.split(",")
        return 1 if suite(args.files, backends, seeds_of(args.seeds), args.match) else 0
    if args.command == "results":
        if len(args.files) < 2:
            parser.error("results: name at least two files")
        runs = {str(path): verdicts_of_results(path) for path in args.files}
        return 1 if compare(runs) else 0
    return 1 if planted(seeds_of(args.seeds)) else 0


if __name__ == "__main__":
    raise SystemExit(main())
