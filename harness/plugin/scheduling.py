"""How xdist's controller deals items to workers when --durations-from says how long they take.

xdist's `load` scheduling first sends each worker a block of consecutive items (a quarter of its
share), then refills workers in blocks of up to half a share. With the items ordered slowest
first (sharding.py), the first worker's block was the whole head of the list: on an H100 with 13
workers, the 17 slowest items ran one after another in gw0, and 12 workers were done at 208 s
while gw0 ran to 558 s. Here, where the run is `-n N` with `--durations-from` (and `--dist load`,
xdist's default):

- the *heavy* items, each longer than HEAVY_SHARE of a worker's fair share of the run, are dealt
  at the start, longest first, each to the lane with the least time so far. The lanes are a few
  workers (LANE_SHARE of them): such items are the ones that hold most of a GPU's memory, and
  more of them at once would only wait for each other in the memory ledger. Where the heavy
  items add up to more than those lanes' fair shares, there are as many lanes as their time
  needs (one worker at least left to the rest): on `nvidia-h200-x2` (2026-11-30, 9194bf6, 32
  workers) 94 heavy items of 1,194 s, small outputs of 64 draws among them, loaded 8 lanes with
  about 150 s each where a fair share was 100 s; the other workers ran out of items at 128 s
  and the lanes ran to 149 s (`tools/budget_model.py` on that run: 152 s);
- so are the *memory-heavy* items, each needing more than MEMORY_HEAVY_SHARE of what the items
  of a GPU share (by the earlier run's records: `memory.earlier_needs`): under a memory budget
  they are also the slow ones, and slowest first put one in every worker at the start, where
  they waited for each other with the GPU running one or two of them (a model of a 24 GB run of
  the reference suite with 8 workers, admitted by measured peaks: 769 s, most of the first
  500 s so). In the lanes they run one after another while the other workers run small items
  beside them (the model: 602 s);
- every other item goes out in xdist's order (slowest first), at most MAX_CHUNK at a time, so
  that no worker holds a long run of slow items that another could have taken.

Nothing changes where the durations file knows none of the run's items by node id.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from gemmconf import capability, memory
from gemmconf.plugin import facts

HEAVY_SHARE = 1 / 20  # an item longer than this part of a fair share is heavy
MEMORY_HEAVY_SHARE = 1 / 8  # an item needing more than this part of a GPU's items' share too
LANE_SHARE = 1 / 4  # the workers that run the heavy items (at least one)
MAX_CHUNK = 2  # items sent to a worker at a time (where --maxschedchunk does not say)


def lane_count(workers: int) -> int:
    """The workers that run the heavy items (LANE_SHARE of them, at least one)."""
    return max(1, round(max(1, workers) * LANE_SHARE))


def lanes(
    durations: Sequence[float | None],
    workers: int,
    needs: Sequence[int | None] | None = None,
    heavy_need: float | None = None,
) -> list[list[int]] | None:
    """The heavy items' indices per lane, each lane's longest first; None: no lanes (no known
    duration, a single worker, or no item heavy enough). `needs`: each item's memory, heavy
    above `heavy_need` bytes."""
    known = [d for d in durations if d is not None]
    if workers < 2 or not known:
        return None
    fair = sum(known) / workers

    def heavy_item(i: int) -> bool:
        d = durations[i]
        if d is not None and d > 0 and d >= HEAVY_SHARE * fair:
            return True
        need = None if needs is None or heavy_need is None else needs[i]
        return need is not None and need > heavy_need

    heavy = sorted(
        (i for i in range(len(durations)) if heavy_item(i)), key=lambda i: -(durations[i] or 0.0)
    )
    if not heavy:
        return None
    load = sum(durations[i] or 0.0 for i in heavy)
    count = min(len(heavy), max(lane_count(workers), min(workers - 1, math.ceil(load / fair))))
    plan: list[list[int]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for index in heavy:
        lane = loads.index(min(loads))
        plan[lane].append(index)
        loads[lane] += durations[index] or 0.0
    return plan


def memory_heavy_bytes(config: pytest.Config, workers: int) -> float | None:
    """An item needing more GPU memory than this is memory-heavy (None: the run has no memory
    budget): MEMORY_HEAVY_SHARE of what the items of one GPU share, as `isolating` reckons it
    (on a CPU, --gpu-memory-budget simulates one GPU's whole)."""
    machine = config.stash.get(facts.MACHINE, None)
    simulated = config.hook.pytest_gemmconf_memory_budget(config=config)
    if machine is None or machine.device != "cuda":
        return None if not simulated else simulated * MEMORY_HEAVY_SHARE
    total = machine.capability.memory_bytes
    budget = min(simulated, total) if simulated and total else simulated or total
    if not budget:
        return None
    per_gpu = -(-workers // max(len(capability.gpu_ids()), 1))
    return memory.shared_bytes(budget, per_gpu) * MEMORY_HEAVY_SHARE


def make_scheduler(
    config: pytest.Config,
    log: Any,
    durations: dict[str, float],
    needs: dict[str, int] | None = None,
) -> Any:
    """The controller's scheduler: xdist's `load` with the lanes above (`needs`: node id ->
    memory, from the earlier run)."""
    from xdist.scheduler import LoadScheduling

    class LaneScheduling(LoadScheduling):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(config, log)
            if getattr(config.option, "maxschedchunk", None) is None:
                self.maxschedchunk = MAX_CHUNK

        def schedule(self) -> None:
            if self.collection is not None or not self._check_nodes_have_same_collection():
                return super().schedule()  # a reschedule, or xdist's own report of the mismatch
            collection = next(iter(self.node2collection.values()))
            plan = lanes(
                [durations.get(nodeid) for nodeid in collection],
                len(self.nodes),
                [(needs or {}).get(nodeid) for nodeid in collection],
                memory_heavy_bytes(config, len(self.nodes)),
            )
            if plan is None:
                return super().schedule()
            self.collection = collection
            dealt = {index for lane in plan for index in lane}
            self.pending[:] = [i for i in range(len(collection)) if i not in dealt]
            nodes = list(self.nodes)
            for node, indices in zip(nodes, plan, strict=False):
                self._send_indices(node, indices)
            for node in nodes[len(plan) :]:
                self._send_indices(node, self.pending[:MAX_CHUNK])
                del self.pending[:MAX_CHUNK]
            if not self.pending:
                for node in nodes:
                    node.shutdown()
            return None

        def _send_indices(self, node: Any, indices: list[int]) -> None:
            if indices:
                self.node2pending[node].extend(indices)
                node.send_runtest_some(indices)

    return LaneScheduling()
