"""Kernel compiles against distinct kernel signatures in one or more results files (issue 43,
item 1: each distinct signature compiled once per run).

    python tools/compile_once.py reports/results.json [more.json ...] [--json]

Prints, per file and backend, the end-of-run kernel line and the figures behind it: items,
signatures launched, distinct signatures, first launches (`kernel_compiles`), of them compiled
(`kernel_builds`) and loaded from Triton's disk cache (`kernel_cache_loads`), and the seconds of
first launches and of waiting for another process's compile. Files of runs before the counts
were told apart show `builds` and `loads` as None. No time is judged here: BENCHMARKS.md records
what this printed, with the machine and date.
"""

from __future__ import annotations

import argparse
import json

from gemmconf.report import perf, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="results.json files (gzip, xz or not)")
    parser.add_argument("--json", action="store_true", help="one JSON object per file")
    args = parser.parse_args()
    for path in args.results:
        counts = perf.kernel_counts(results.read(path)["records"])
        if args.json:
            print(json.dumps({"results": path, "kernels": [c.as_json() for c in counts]}))
            continue
        print(path)
        for c in counts:
            print(f"  {c.line()}")
            extra = None if c.builds is None else c.builds - c.distinct
            print(
                f"  compiled {c.builds} for {c.distinct} distinct (extra compiles: {extra}); "
                f"loaded {c.loads}; first launches {c.compiles}, {c.first_launch_s:.1f} s, "
                f"{c.wait_s:.1f} s of it waiting"
            )


if __name__ == "__main__":
    main()
