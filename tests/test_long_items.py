"""An item that runs long is named in the terminal while it runs (gemmconf.plugin.long_items):
a gemlite trial (2026-12-02) had one item take 12 of a run's 17 minutes, unnamed until the end."""

from __future__ import annotations

from gemmconf.plugin import long_items
from gemmconf.plugin.long_items import LONG_S, LongItems

pytest_plugins = ["pytester"]


def test_an_item_is_named_at_the_bar_then_each_time_its_time_doubles():
    watch = LongItems(terminal=None)
    watch.stopped.set()  # no thread: `due` is asked directly
    watch.pytest_runtest_logstart("suites/s.yaml::mm[x@b]", None)
    watch.pytest_runtest_logstart("tests/test_mine.py::test_other", None)  # not a suite item
    assert list(watch.running) == ["suites/s.yaml::mm[x@b]"]
    start = 0.0  # (a clock of whole seconds: the monotonic clock's large values round)
    watch.running["suites/s.yaml::mm[x@b]"] = (start, start + LONG_S)
    assert watch.due(start + LONG_S / 2) == []
    assert watch.due(start + LONG_S) == [("suites/s.yaml::mm[x@b]", LONG_S)]
    assert watch.due(start + 1.5 * LONG_S) == []
    assert watch.due(start + 2 * LONG_S) == [("suites/s.yaml::mm[x@b]", 2 * LONG_S)]
    watch.pytest_runtest_logfinish("suites/s.yaml::mm[x@b]", None)
    assert watch.due(start + 10 * LONG_S) == []


def test_a_run_names_its_long_items_while_they_run(suite, monkeypatch):
    """faulty_backends' slow sleeps 0.4 s a call: with a bar of 0.2 s each item is named."""
    monkeypatch.setattr(long_items, "LONG_S", 0.2)
    monkeypatch.setattr(long_items, "POLL_S", 0.05)
    result = suite.runpytest("suites", "--backend", "faulty_backends:slow", "-k", "addmm")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["gemmconf: still running after * s: suites/tiny.yaml::addmm*"])
