"""A result the backend returned stays as it was when the backend is called again: a backend
that returns memory it writes on its next call (one output buffer reused; CUDA graphs' static
outputs) hands every caller that keeps a result an answer that changes under it. Judged alone,
each such result reads like a numerics bug ("err_ratio 2.9e+06"); this guard names it first.

A call guard: it samples each call's result after the call, and after every later call looks
whether the earlier results still hold the sampled values (a buffer kept per shape is only
overwritten by a later call of the same shapes). From the call that finds one on, the item copies
each result as the backend returns it (gemmconf.item), and the results returned before it are
not judged: judged after the later calls, they were a later draw's values against an earlier
draw's eager result (an OpenVINO trial, 2026-11-30: its bf16 precision read as "err_ratio 5388")."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gemmconf import integrity, kinds
from gemmconf.item import EagerAnswer, ItemRun
from gemmconf.outcome import Problem

SAMPLED = 4096  # elements of each result tensor compared, evenly spread over it


@dataclass(frozen=True)
class ResultOverwritten:
    """The result of an earlier call changed when the backend was called again."""

    earlier: int  # the shape set of the call whose result changed
    later: int  # the shape set of the call that changed it
    count: int  # sampled elements that changed
    sampled: int
    kind = kinds.OVERWRITTEN

    def describe(self) -> str:
        return (
            f"Result overwritten: the result the backend returned on shape set {self.earlier} "
            f"changed when it was called again (on shape set {self.later}, fresh values): "
            f"{self.count} of {self.sampled} sampled elements differ. The backend returns "
            "memory it writes again on its next call (a reused output buffer, CUDA graphs' "
            "static outputs), so a caller that keeps a result sees it change. The values "
            "below are judged on the results returned from then on, each copied as returned; "
            "the earlier ones are not judged."
        )


class ResultsKept:
    name = "results kept"

    def watch(self, item: ItemRun, tensors: Sequence[Any], eager: EagerAnswer) -> _KeptWatch:
        return _KeptWatch(item, tensors)


@dataclass
class _Earlier:
    shape_set: int
    tensors: list[torch.Tensor]
    samples: list[torch.Tensor]


class _KeptWatch:
    def __init__(self, item: ItemRun, tensors: Sequence[Any]):
        self.item = item
        # every earlier result of the item (None once one was found changed)
        self.earlier: list[_Earlier] | None = item.stash.setdefault(ResultsKept, [])
        self.inputs = {s for t in tensors if (s := integrity.storage_start(t)) is not None}

    def __enter__(self) -> _KeptWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def problems(self, actual: Any) -> list[Problem]:
        item = self.item
        found = self._overwritten() if self.earlier is not None else None
        tensors = integrity.tensors_of(actual)
        if found is not None:
            item.stash[ResultsKept] = None  # said once: the calls after it are not watched
            item.copies_results = True  # and their results are copied as returned
            return [found]
        if self.earlier is not None:
            self.earlier.append(_Earlier(item.shape_index, tensors, [_sample(t) for t in tensors]))
        return []

    def _overwritten(self) -> ResultOverwritten | None:
        """The first earlier result this call changed, if any. Every earlier result's sample is
        compared on its device and the counts read in one transfer per device: an item of 64
        draws compares about 2,000 samples, and each read alone waited for the GPU (a GPU shared
        by 16 workers time-slices between them: tools/sync_census.py, 2026-12-01)."""
        self.item.stage = "looking whether earlier results changed"
        watched = [
            (earlier, t, s)
            for earlier in self.earlier
            for t, s in zip(earlier.tensors, earlier.samples, strict=True)
            # an `out=` target given again is the caller's to have written
            if integrity.storage_start(t) not in self.inputs
        ]
        counts = _changed_counts([(t, s) for _, t, s in watched])
        changed: dict[int, int] = {}
        for (earlier, _, _), count in zip(watched, counts, strict=True):
            changed[id(earlier)] = changed.get(id(earlier), 0) + count
        for earlier in self.earlier:
            if changed.get(id(earlier)):
                sampled = sum(s.numel() for s in earlier.samples)
                return ResultOverwritten(
                    earlier.shape_set, self.item.shape_index, changed[id(earlier)], sampled
                )
        return None


def positions(numel: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """SAMPLED indices (all, for a smaller tensor) spread evenly over [0, numel), in integer
    arithmetic: a float32 linspace rounds the last index of a 2^26-element output past its end."""
    if str(device) == "cpu":  # cached on the CPU only: GPU memory a cache kept would read as
        return _cpu_positions(numel)  # the backend's, left allocated after its item
    return _spread(numel, device)


@functools.lru_cache(maxsize=256)
def _cpu_positions(numel: int) -> torch.Tensor:
    # an item samples every earlier result after each call: read only, never written
    return _spread(numel, "cpu")


def _spread(numel: int, device: torch.device | str) -> torch.Tensor:
    count = min(numel, SAMPLED)
    steps = torch.arange(count, dtype=torch.int64, device=device)
    return steps * (numel - 1) // max(count - 1, 1)


def _sample(t: torch.Tensor) -> torch.Tensor:
    # index_select copies: the sample does not follow later writes to `t`
    return t.detach().reshape(-1).index_select(0, positions(t.numel(), t.device))


def _changed_counts(pairs: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> list[int]:
    """For each (result, its earlier sample): how many sampled elements differ bit for bit now
    (all of them where the result's size changed), read from each device in one transfer."""
    counts: list[torch.Tensor | int] = []
    for t, before in pairs:
        now = _sample(t)
        if now.shape != before.shape:
            counts.append(max(now.numel(), before.numel()))
        else:
            counts.append((integrity.bits(before) != integrity.bits(now)).sum())
    by_device: dict[torch.device, list[int]] = {}
    for i, count in enumerate(counts):
        if isinstance(count, torch.Tensor):
            by_device.setdefault(count.device, []).append(i)
    read = list(counts)
    for device_indices in by_device.values():
        stacked = torch.stack([counts[i] for i in device_indices])  # type: ignore[misc]
        for i, value in zip(device_indices, stacked.tolist(), strict=True):
            read[i] = int(value)
    return [int(c) for c in read]
