"""``--shard i/n``: which items one of n machines runs (DESIGN.md, "Parallelism and scale").

An item belongs to shard ``1 + sha256(key) mod n``, its key being ``<record id>@<backend label>``
(the pytest node id for items that are not scenarios). Hashing rather than dealing the sorted list
round-robin, because an item's shard then depends on nothing but its own key: it is the same on
every machine, under every PYTHONHASHSEED, with any ``-k``/``-m`` selection, and adding a scenario
moves no other item to another shard. The shards are disjoint and together cover the run, so
merging their results gives the unsharded run's records. Sizes are even up to sampling noise
(a few percent at a thousand items a shard).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

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
