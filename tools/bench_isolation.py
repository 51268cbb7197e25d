"""Per-item cost of isolation: eager items run in-process vs in the isolation worker.

    .venv/bin/python tools/bench_isolation.py [--items N] [--suite PATH ...] [--pytest]

Runs the same CPU items (the eager backend, so the item itself is cheap and the overhead shows)
through `InProcessRunner` and `IsolatedRunner`, alternating rounds, and prints the per-item wall
time of each and the difference, plus the worker's start-up and restart time. `--pytest` also
times whole `pytest --backend eager` runs with and without `--no-isolate`. Figures only: nothing
asserts a wall-clock time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gemmconf import capability, isolation  # noqa: E402
from gemmconf.backends import RunOptions  # noqa: E402
from gemmconf.scenario import load_suite  # noqa: E402


def cpu_items(paths: list[Path], limit: int) -> list[isolation.ItemRequest]:
    cap = capability.detect()
    requests = []
    for path in paths:
        for instance in load_suite(path, root=ROOT):
            if capability.unmet(instance.requires, cap) is None:
                requests.append(
                    isolation.ItemRequest(
                        instance, "eager", seed=0, device="cpu", target=None, repro="bench"
                    )
                )
    return requests[:limit]


def paired(here, worker, requests) -> tuple[list[float], list[float]]:
    """Each item in-process then isolated, back to back, so load drift hits both alike."""
    inproc, isolated = [], []
    for request in requests:
        for runner, times in ((here, inproc), (worker, isolated)):
            start = time.perf_counter()
            runner.run(request)
            times.append(time.perf_counter() - start)
    return inproc, isolated


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--suite", type=Path, action="append")
    parser.add_argument("--pytest", action="store_true", help="also time whole pytest runs")
    args = parser.parse_args()
    paths = args.suite or sorted((ROOT / "suites" / "dense").glob("*.yaml"))
    requests = cpu_items(paths, args.items)
    os.environ["OMP_NUM_THREADS"] = "1"  # as in an xdist worker on a CPU; the worker inherits it
    import torch

    torch.set_num_threads(1)
    options = RunOptions()
    here = isolation.InProcessRunner({"eager": isolation.configured_backend("eager", options)})
    worker = isolation.IsolatedRunner({"eager": "eager"}, options)

    start = time.perf_counter()
    worker.run(requests[0])
    first = time.perf_counter() - start
    paired(here, worker, requests)  # warm both: lazy imports, allocator, dispatcher caches
    inproc, isolated = [], []
    for _ in range(args.rounds):
        a, b = paired(here, worker, requests)
        inproc += a
        isolated += b
    worker._discard()
    start = time.perf_counter()
    worker.run(requests[0])
    restart = time.perf_counter() - start
    worker.close()

    def ms(values: list[float]) -> str:
        return (
            f"mean {1e3 * statistics.fmean(values):7.2f} ms, median "
            f"{1e3 * statistics.median(values):7.2f} ms"
        )

    print(
        f"{len(requests)} eager CPU items from {', '.join(p.name for p in paths)}, "
        f"{args.rounds} rounds each"
    )
    print(f"  in-process (--no-isolate): {ms(inproc)}")
    print(f"  isolated (default):        {ms(isolated)}")
    differences = [b - a for a, b in zip(inproc, isolated, strict=True)]
    print(f"  overhead per item:         {ms(differences)} (paired differences)")
    print(
        f"  worker start + first item: {first:.2f} s once per pytest process; "
        f"a restart after a crash: {restart:.2f} s"
    )
    if args.pytest:
        for mode in ([], ["--no-isolate"]):
            command = [
                sys.executable,
                "-m",
                "pytest",
                *map(str, paths),
                "--backend",
                "eager",
                "-q",
                "-p",
                "no:xdist",
                "--results",
                "/tmp/gemmconf-bench.json",
                *mode,
            ]
            start = time.perf_counter()
            out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
            wall = time.perf_counter() - start
            print(
                f"  pytest {' '.join(mode) or '(isolated)':13} {wall:6.1f} s wall: "
                f"{out.stdout.strip().splitlines()[-1]}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
