"""A line in the terminal for an item that runs long, while it runs: a gemlite trial
(2026-12-02) had one near-bar item of an interpreted backend take 12 of a run's 17 minutes, and
nothing during the run said which item it was (the summary's "longest items" line says so only
at the end).

The process that prints the run's progress (xdist's controller, or the one process of a run
without xdist) notes when each suite item starts and ends (pytest's logstart and logfinish,
which xdist relays from its workers); a thread looks every POLL_S seconds and names each item
running for LONG_S seconds, then again each time its time has doubled:
`gemmconf: still running after 240 s: suites/dense/first.yaml::mm[...] (gw3)`. Items of other
files (a project's own tests) are left alone.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

LONG_S = 120.0  # an item running this long is named (then at twice, four times this, ...)
POLL_S = 5.0  # how often the running items are looked at
SUITE_ITEM = ".yaml::"  # in the node id of a suite file's item


class LongItems:
    """The items running now, by node id: when each started and when it is next named."""

    def __init__(self, terminal: Any):
        self.terminal = terminal
        self.lock = threading.Lock()
        self.running: dict[str, tuple[float, float]] = {}  # node id -> (start, next notice at)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="gemmconf-long-items", daemon=True)

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if SUITE_ITEM in nodeid:
            now = time.monotonic()
            with self.lock:
                self.running[nodeid] = (now, now + LONG_S)
            if not self.thread.is_alive() and not self.stopped.is_set():
                self.thread.start()  # at the first suite item: a run of other tests has none

    @pytest.hookimpl
    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        with self.lock:
            self.running.pop(nodeid, None)

    def due(self, now: float) -> list[tuple[str, float]]:
        """(node id, seconds running) of each item to name now; each is next named when its
        time has doubled."""
        found = []
        with self.lock:
            for nodeid, (start, notice) in self.running.items():
                if now >= notice:
                    found.append((nodeid, now - start))
                    self.running[nodeid] = (start, start + 2 * (now - start))
        return found

    def _watch(self) -> None:
        while not self.stopped.wait(POLL_S):
            for nodeid, seconds in self.due(time.monotonic()):
                writer = getattr(self.terminal, "_tw", None)  # progress dots end no line
                if getattr(writer, "width_of_current_line", 0):
                    self.terminal.write("\n")
                self.terminal.write_line(f"gemmconf: still running after {seconds:.0f} s: {nodeid}")


KEY = pytest.StashKey[LongItems]()


@pytest.hookimpl(trylast=True)  # after the terminal reporter is registered
def pytest_configure(config: pytest.Config) -> None:
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None or hasattr(config, "workerinput"):  # xdist's workers print nothing
        return
    watch = LongItems(terminal)
    config.stash[KEY] = watch
    config.pluginmanager.register(watch, "gemmconf-long-items")


def pytest_unconfigure(config: pytest.Config) -> None:
    watch = config.stash.get(KEY, None)
    if watch is not None:
        watch.stopped.set()
        if watch.thread.is_alive():
            watch.thread.join(timeout=POLL_S + 1)
