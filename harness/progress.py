"""Where an item is in its run: `runner.run_item` reports each phase as it enters it, and the
isolation worker passes the report to its parent, which times each phase against its own budget
(`gemmconf.isolation.timeouts`) and names the phase when one runs out.

Reports go to the listener the process installed (`listening`); with none (in-process runs,
`gemmconf explain`), a report costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

# Phase name -> what it covers, as a timeout's reason says it.
PHASES = {
    "prepare": "building inputs and running eager",
    "compile": "waiting for the first result (compile, autotune, JIT and the first call)",
    "call": "running a further shape set (it may compile again)",
    "check": "checking the results (fp64 reference, oracle, code checks)",
    "benchmark": "benchmarking",
}
BACKEND_PHASES = ("compile", "call")  # where the time is the backend's; the others are ours

_listener: Callable[[str], None] | None = None


def report(phase: str) -> None:
    """The item enters `phase` (a key of PHASES)."""
    if _listener is not None:
        _listener(phase)


@contextmanager
def listening(callback: Callable[[str], None]) -> Iterator[None]:
    global _listener
    previous, _listener = _listener, callback
    try:
        yield
    finally:
        _listener = previous
