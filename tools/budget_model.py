"""A rough model of a run under a GPU memory budget (issue 43, item 4), from an earlier run's
results: each item takes the duration it took there; workers take items as the scheduler deals
them (the lanes of `gemmconf.plugin.scheduling`, then slowest first one at a time); the GPU's
ledger admits them by the rules of `gemmconf.isolation.budget` (patience, small items filling
room, items larger than the share alone), by their estimate there or by their measured need.
Not modelled: the host's ledger, xdist's chunks, items running faster with fewer workers.

    python tools/budget_model.py RESULTS.json [--budget-gb 24] [--workers 3,6,8]

A planning aid for GPU runs (which worker count to ask for); nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

from gemmconf import memory
from gemmconf.isolation.budget import PATIENCE_S, SMALL_SHARE
from gemmconf.plugin import scheduling

STEP_S = 0.05


@dataclass
class _Gpu:
    shared: float
    running: list[tuple[float, int, bool, int]] = field(default_factory=list)  # end, need, alone, w
    waiting: list[tuple[float, int, float, int]] = field(default_factory=list)  # since, need, s, w

    def fits(self, now: float, index: int) -> bool:
        """Whether waiting[index] is admitted now (budget.Ledger._admit's rules)."""
        need = self.waiting[index][1]
        whole = need > self.shared
        ahead = self.waiting[:index]
        if ahead and whole:
            return False
        overdue = [entry for entry in ahead if now - entry[0] >= PATIENCE_S]
        if overdue and not self._fills_room(need, overdue):
            return False
        if any(alone for _, _, alone, _ in self.running) or (whole and self.running):
            return False
        return whole or sum(n for _, n, _, _ in self.running) + need <= self.shared

    def _fills_room(self, need: int, overdue: list) -> bool:
        small = self.shared * SMALL_SHARE
        if need > small:
            return False
        large = [n for _, n, _, _ in self.running if n > small]
        if any(n > self.shared for _, n, _, _ in overdue):
            return bool(large)
        return sum(large) + sum(n for _, n, _, _ in overdue) > self.shared


def items(path: str, measured: bool) -> list[tuple[float, int, str]]:
    """(duration, need, node id) of each item, slowest first."""
    found = []
    for record in json.loads(Path(path).read_text())["records"]:
        metrics = record.get("metrics") or {}
        estimate = int(metrics.get("memory_estimate_bytes") or 0)
        need = memory.measured_need(metrics) if record.get("outcome") == "passed" else None
        admitted = memory.admitted(estimate, need if measured else None)[0]
        found.append((float(record.get("duration_s") or 0.0), admitted, record.get("nodeid")))
    return sorted(found, key=lambda item: -item[0])


def model(queue: list[tuple[float, int, str]], workers: int, budget: int, lanes: bool) -> dict:
    """Seconds to the last item's end, and seconds waited for memory, of one modelled run."""
    gpu = _Gpu(memory.shared_bytes(budget, workers))
    heavy = gpu.shared * scheduling.MEMORY_HEAVY_SHARE if lanes else None
    plan = scheduling.lanes([d for d, _, _ in queue], workers, [n for _, n, _ in queue], heavy)
    own = [list(lane) for lane in plan or []] + [[] for _ in range(workers - len(plan or []))]
    dealt = {i for lane in own for i in lane}
    pending = [i for i in range(len(queue)) if i not in dealt]
    idle, now, waited = set(range(workers)), 0.0, 0.0
    while pending or any(own) or gpu.running or gpu.waiting:
        for done in [r for r in gpu.running if r[0] <= now]:
            gpu.running.remove(done)
            idle.add(done[3])
        for worker in sorted(idle):
            if not own[worker] and not pending:
                continue
            index = own[worker].pop(0) if own[worker] else pending.pop(0)
            idle.discard(worker)
            gpu.waiting.append((now, queue[index][1], queue[index][0], worker))
        position = 0
        while position < len(gpu.waiting):
            if not gpu.fits(now, position):
                position += 1
                continue
            since, need, seconds, worker = gpu.waiting.pop(position)
            waited += now - since
            gpu.running.append((now + seconds, need, need > gpu.shared, worker))
        now += STEP_S
    return {"seconds": round(now), "waited_s": round(waited), "shared_gb": gpu.shared / 1e9}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--budget-gb", type=float, default=24.0)
    parser.add_argument("--workers", default="3,6,8")
    args = parser.parse_args()
    budget = int(args.budget_gb * 1e9)
    for workers in (int(w) for w in args.workers.split(",")):
        for label, measured, lanes in (
            ("estimate", False, False),
            ("measured", True, False),
            ("measured, memory lanes", True, True),
        ):
            found = model(items(args.results, measured), workers, budget, lanes)
            print(f"{workers} workers, {label}: {found}", flush=True)


if __name__ == "__main__":
    main()
