"""--shard i/n: this process runs one deterministic part of the selected items; with
--durations-from RESULTS, parts of about equal time (gemmconf.shard), and, with or without
--shard, the slowest items first (so that with xdist no long item starts last and ends the run
alone), dealt to xdist's workers so that no one worker gets all of them (scheduling.py); and
the items' measured memory peaks there, of their GPU and of the host, which the memory ledgers
admit them by (`facts.MEASURED_PEAKS`, `facts.MEASURED_HOST_PEAKS`). The results document is
read once, by whichever asks first: -n auto (`pytest_gemmconf_earlier_results`, before
pytest_configure) or pytest_configure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gemmconf import memory, shard
from gemmconf.plugin import facts, options, scheduling

DURATIONS = pytest.StashKey[dict[str, float]]()
NODE_DURATIONS = pytest.StashKey[dict[str, float]]()  # the same, by node id (xdist's scheduler)
NODE_NEEDS = pytest.StashKey[dict[str, int]]()  # node id -> GPU memory there (xdist's scheduler)
BALANCE = pytest.StashKey[str]()  # what the balancing did (the header says it)
# --durations-from's document, from its reading to pytest_configure (a results file of the
# whole suite is some 10 MB of JSON: read it once, keep it no longer than needed)
DOCUMENT = pytest.StashKey[dict[str, Any] | None]()


OPTIONS = (
    options.Option(
        "--shard",
        metavar="i/n",
        help="run only shard i of n (1-based) of the selected items: deterministic, "
        "disjoint and covering, so the n shards' merged results equal one run's",
    ),
    options.Option(
        "--durations-from",
        metavar="RESULTS.json",
        help="run the items that took longest in this results file first (items it lacks "
        "count as its median; with -n, the slowest go to a quarter of the workers, or as many "
        "as their time needs, and the rest two at a time); with --shard, also balance the "
        "shards by those durations (longest first into the shard with the least time) "
        "instead of by count. Every shard "
        "must select the same items and read the same file. Items it measured on a GPU of "
        "this class are admitted to the GPU's memory budget, and to the host's, by their "
        "measured peak (with a margin; on the GPU at most their estimate) instead of their "
        "estimate, and "
        "with -n auto the workers of a GPU are sized by those peaks (--workers-per-gpu)",
    ),
)
pytest_addoption = options.registrar(OPTIONS)


def parse_shard(text: str | None) -> shard.Shard | None:
    if text is None:
        return None
    try:
        return shard.parse(text)
    except ValueError as exc:
        raise pytest.UsageError(f"--shard: {exc}") from None


def read_durations(path: str | None) -> dict[str, Any] | None:
    """--durations-from's results document (a usage error names the file and what is wrong)."""
    if path is None:
        return None
    from gemmconf.report import results

    try:
        return results.read(Path(path))
    except (OSError, results.ResultsError, UnicodeDecodeError) as exc:
        raise pytest.UsageError(f"--durations-from: {path}: {exc}") from None


def earlier_results(config: pytest.Config) -> dict[str, Any] | None:
    """--durations-from's results document, read on the first call (`read_durations`)."""
    if DOCUMENT not in config.stash:
        config.stash[DOCUMENT] = read_durations(options.get(config, "durations_from"))
    return config.stash[DOCUMENT]


def pytest_gemmconf_earlier_results(config: pytest.Config) -> dict[str, Any] | None:
    return earlier_results(config)


def pytest_configure(config: pytest.Config) -> None:
    part = parse_shard(options.get(config, "shard"))
    if part is not None:
        config.stash[facts.SHARD] = part
    document = earlier_results(config)
    del config.stash[DOCUMENT]  # what the run needs of it is taken below
    if document is not None:
        config.stash[DURATIONS] = shard.durations_of(document)
        config.stash[NODE_DURATIONS] = shard.durations_of(document, key=shard.node_key)
        machine = config.stash.get(facts.MACHINE, None)
        if machine is not None:
            kind = {"device": machine.device, "hardware_class": machine.capability.hardware_class}
            config.stash[facts.MEASURED_PEAKS] = memory.measured_peaks(document, **kind)
            config.stash[facts.MEASURED_HOST_PEAKS] = memory.measured_host_peaks(document, **kind)
            config.stash[NODE_NEEDS] = memory.earlier_needs(document, **kind)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's `load` with the slowest items spread out (gemmconf.plugin.scheduling), where
    --durations-from knows the run's items; else None: xdist's own scheduler."""
    durations = config.stash.get(NODE_DURATIONS, None)
    if not durations or getattr(config.option, "dist", None) != "load":
        return None
    return scheduling.make_scheduler(config, log, durations, config.stash.get(NODE_NEEDS, None))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    part = config.stash.get(facts.SHARD, None)
    durations = config.stash.get(DURATIONS, None)
    if part is not None:
        _shard(config, items, part, durations)
    if durations is not None:
        # slowest first; a stable sort, so every xdist worker collects the same list
        keys = [_shard_key(item) for item in items]
        median = shard.typical_duration(keys, durations)
        order = sorted(range(len(items)), key=lambda i: -durations.get(keys[i], median))
        items[:] = [items[i] for i in order]
        if part is None:
            known = sum(k in durations for k in keys)
            config.stash[BALANCE] = (
                f"items ordered slowest first by the durations in "
                f"{options.get(config, 'durations_from')}: {known} of {len(items)} known (the "
                f"others count as the median, {median:.2g} s)"
            )


def _shard(
    config: pytest.Config,
    items: list[pytest.Item],
    part: shard.Shard,
    durations: dict[str, float] | None,
) -> None:
    if durations is None:
        kept, dropped = shard.split(items, part, _shard_key)
    else:
        kept, dropped = shard.balance(items, part, _shard_key, durations)
        keys = [_shard_key(item) for item in items]
        known = sum(k in durations for k in keys)
        median = shard.typical_duration(keys, durations)
        mine = sum(durations.get(_shard_key(item), median) for item in kept)
        config.stash[BALANCE] = (
            f"shard {part} balanced by the durations in "
            f"{options.get(config, 'durations_from')}: {known} of {len(items)} items known (the "
            f"others count as the median, {median:.2g} s); this shard: {len(kept)} items, "
            f"~{mine:.0f} s"
        )
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    balance = config.stash.get(BALANCE, None)
    return [f"gemmconf: {balance}"] if balance else []


def _shard_key(item: pytest.Item) -> str:
    scenario = item.stash.get(facts.SCENARIO, None)
    return item.nodeid if scenario is None else str(scenario)
