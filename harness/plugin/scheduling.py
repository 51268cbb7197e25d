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
  more of them at once would only wait for each other in the memory ledger;
- every other item goes out in xdist's order (slowest first), at most MAX_CHUNK at a time, so
  that no worker holds a long run of slow items that another could have taken.

Nothing changes where the durations file knows none of the run's items by node id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

HEAVY_SHARE = 1 / 20  # an item longer than this part of a fair share is heavy
LANE_SHARE = 1 / 4  # the workers that run the heavy items (at least one)
MAX_CHUNK = 2  # items sent to a worker at a time (where --maxschedchunk does not say)


def lane_count(workers: int) -> int:
    """The workers that run the heavy items (LANE_SHARE of them, at least one)."""
    return max(1, round(max(1, workers) * LANE_SHARE))


def lanes(durations: Sequence[float | None], workers: int) -> list[list[int]] | None:
    """The heavy items' indices per lane, each lane's longest first; None: no lanes (no known
    duration, a single worker, or no item heavy enough)."""
    known = [d for d in durations if d is not None]
    if workers < 2 or not known:
        return None
    fair = sum(known) / workers
    heavy = sorted(
        (i for i, d in enumerate(durations) if d is not None and d > 0 and d >= HEAVY_SHARE * fair),
        key=lambda i: -(durations[i] or 0.0),
    )
    if not heavy:
        return None
    count = min(len(heavy), lane_count(workers))
    plan: list[list[int]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for index in heavy:
        lane = loads.index(min(loads))
        plan[lane].append(index)
        loads[lane] += durations[index] or 0.0
    return plan


def make_scheduler(config: pytest.Config, log: Any, durations: dict[str, float]) -> Any:
    """The controller's scheduler: xdist's `load` with the lanes above."""
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
            plan = lanes([durations.get(nodeid) for nodeid in collection], len(self.nodes))
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
