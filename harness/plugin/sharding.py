"""--shard i/n: this process runs one deterministic part of the selected items."""

from __future__ import annotations

import pytest

from gemmconf import shard
from gemmconf.plugin import options
from gemmconf.plugin.stash import STATE


def pytest_addoption(parser: pytest.Parser) -> None:
    group = options.group(parser)
    group.addoption(
        "--shard",
        default=None,
        metavar="i/n",
        help="run only shard i of n (1-based) of the selected items: deterministic, "
        "disjoint and covering, so the n shards' merged results equal one run's",
    )


def parse_shard(text: str | None) -> shard.Shard | None:
    if text is None:
        return None
    try:
        return shard.parse(text)
    except ValueError as exc:
        raise pytest.UsageError(f"--shard: {exc}") from None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[STATE]
    if state.shard is None:
        return
    kept, dropped = shard.split(items, state.shard, _shard_key)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _shard_key(item: pytest.Item) -> str:
    from gemmconf.plugin.items import ScenarioItem  # items imports this module's parser

    if isinstance(item, ScenarioItem):
        return f"{item.instance.id}@{item.label}"
    return item.nodeid
