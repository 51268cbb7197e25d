"""``--shard i/n``: which items one of n machines runs (docs/design.md, "Parallelism and scale").

An item belongs to shard ``1 + sha256(key) mod n``, its key being ``<record id>@<backend label>``
(the pytest node id for items that are not scenarios). Hashing rather than dealing the sorted list
round-robin, because an item's shard then depends on nothing but its own key: it is the same on
every machine, under every PYTHONHASHSEED, with any ``-k``/``-m`` selection, and adding a scenario
moves no other item to another shard. The shards are disjoint and together cover the run, so
merging their results gives the unsharded run's records. Sizes are even up to sampling noise
(a few percent at a thousand items a shard).

Item counts are not times: an item takes 0.05 s or 60 s. With ``--durations-from RESULTS``,
`balance` deals the items by their recorded durations instead, the way PyTorch's CI shards its
tests: longest first, each into the shard with the least time so far (ties: the lower shard),
items the file does not know at the median of those it does. That assignment depends on the
whole selection, so every shard must select the same items (same suite, -k, -m) and read the
same file; the shards are still disjoint and covering.
"""

from __future__ import annotations

import hashlib
import re
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, key: str) -> bool:
        return shard_of(key, self.count) == self.index


def parse(text: str) -> Shard:
    """``i/n`` with 1 <= i <= n; ValueError says what is wrong."""
    match = _SHARD.match(text)
    if match is None:
        raise ValueError(f"expected i/n (shard i of n, e.g. 2/3), got {text!r}")
    index, count = int(match[1]), int(match[2])
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"expected i/n with 1 <= i <= n (e.g. 2/3), got {text!r}")
    return Shard(index, count)


def shard_of(key: str, count: int) -> int:
    """The 1-based shard of `key` among `count` (stable: sha256, not Python's hash)."""
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def split(items: Iterable[T], shard: Shard, key: Callable[[T], str]) -> tuple[list[T], list[T]]:
    """(the items this shard runs, the others), each in the given order."""
    kept: list[T] = []
    dropped: list[T] = []
    for item in items:
        (kept if shard.owns(key(item)) else dropped).append(item)
    return kept, dropped


def balance(
    items: Iterable[T], shard: Shard, key: Callable[[T], str], durations: Mapping[str, float]
) -> tuple[list[T], list[T]]:
    """(the items this shard runs, the others), each in the given order, dealt by duration
    (module docstring)."""
    items = list(items)
    keys = [key(item) for item in items]
    assigned = assign(keys, shard.count, durations)
    kept = [item for item, k in zip(items, keys, strict=True) if assigned[k] == shard.index]
    dropped = [item for item, k in zip(items, keys, strict=True) if assigned[k] != shard.index]
    return kept, dropped


def assign(keys: Iterable[str], count: int, durations: Mapping[str, float]) -> dict[str, int]:
    """Each key's 1-based shard: longest first into the least loaded shard."""
    keys = list(keys)
    default = typical_duration(keys, durations)
    loads = [0.0] * count
    found: dict[str, int] = {}
    for k in sorted(keys, key=lambda k: (-durations.get(k, default), k)):
        lightest = min(range(count), key=lambda i: (loads[i], i))
        loads[lightest] += durations.get(k, default)
        found[k] = lightest + 1
    return found


def typical_duration(keys: Iterable[str], durations: Mapping[str, float]) -> float:
    """The median duration of the keys the file knows (1 s when it knows none)."""
    known = [durations[k] for k in keys if k in durations]
    return statistics.median(known) if known else 1.0


def item_key(record: Mapping[str, Any]) -> str | None:
    """A record's ``<record id>@<backend>``: how shards and the item order know an item."""
    return f"{record.get('id')}@{record.get('backend')}"


def node_key(record: Mapping[str, Any]) -> str | None:
    """A record's pytest node id (None where it has none): how xdist's controller knows an item."""
    nodeid = record.get("nodeid")
    return nodeid if isinstance(nodeid, str) else None


def durations_of(
    document: Mapping[str, Any],
    key: Callable[[Mapping[str, Any]], str | None] = item_key,
) -> dict[str, float]:
    """``key(record)`` (default ``<record id>@<backend>``) -> seconds, from a results document
    (the longest where a merged file has an item on several machines)."""
    found: dict[str, float] = {}
    for record in document.get("records") or []:
        try:
            seconds = float(record.get("duration_s"))
        except (TypeError, ValueError):
            continue
        k = key(record)
        if k is not None and seconds >= 0:
            found[k] = max(seconds, found.get(k, 0.0))
    return found
