"""Where an item waits for its GPU: a pytest plugin that counts the synchronizing CUDA operations
(a copy to the host, `.item()`, `bool()` of a tensor, ...) each place in our code makes.

    pytest suites ... --no-isolate -p no:xdist -p tools.sync_census   # items in this process

With CUDA, it turns on torch's sync debug mode ("warn") for each item's call (and counts calls
of `torch.cuda.synchronize`, which warns of nothing) and, at each warning, walks the stack to the
innermost frame of gemmconf (harness/, backend/, gemmconf*), counting by that frame's file, line
and function and by the item's phase (progress.py's; in this process no other listener takes
the reports). At the end it prints the places that synchronized most, and writes them as JSON where
`GEMMCONF_SYNC_CENSUS` names a file. Without CUDA it counts nothing. A profiling aid: a GPU
shared by many workers time-slices between their processes, so each synchronization can wait
for the other processes' kernels; nothing here is asserted.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import traceback
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

_OURS = (f"{os.sep}harness{os.sep}", f"{os.sep}backend{os.sep}", f"{os.sep}gemmconf")
_counts: collections.Counter[tuple[str, str]] = collections.Counter()
_items: collections.Counter[str] = collections.Counter()


def _place() -> str:
    """The innermost frame of our code on the current stack, as file:line function."""
    for frame in reversed(traceback.extract_stack()[:-3]):
        if any(part in frame.filename for part in _OURS) and "sync_census" not in frame.filename:
            tail = frame.filename.split(os.sep)[-2:]
            return f"{'/'.join(tail)}:{frame.lineno} {frame.name}"
    return "(outside gemmconf)"


_phase = {"now": "start"}  # the item's phase, as runner.run_item reports it


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    import torch

    if not torch.cuda.is_available():
        yield
        return

    def seen(message: Any, category: Any, *_: Any, **__: Any) -> None:
        if "synchroniz" in str(message):
            _counts[(_place(), _phase["now"])] += 1
            _items[item.nodeid] += 1

    from gemmconf import progress

    _phase["now"] = "start"
    synchronize = torch.cuda.synchronize

    def counted_synchronize(*args: Any, **kwargs: Any) -> Any:  # explicit: no warning of its own
        _counts[(_place() + " [torch.cuda.synchronize]", _phase["now"])] += 1
        _items[item.nodeid] += 1
        return synchronize(*args, **kwargs)

    with warnings.catch_warnings(), progress.listening(lambda p: _phase.update(now=p)):
        warnings.simplefilter("always")
        warnings.showwarning = seen
        torch.cuda.synchronize = counted_synchronize
        torch.cuda.set_sync_debug_mode("warn")
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode("default")
            torch.cuda.synchronize = synchronize


def pytest_sessionfinish(session: pytest.Session) -> None:
    total = sum(_counts.values())
    items = len(_items)
    lines = [f"sync census: {total} synchronizing operations over {items} items"]
    for (place, phase), n in _counts.most_common(60):
        lines.append(f"{n:8d}  {n / max(items, 1):7.1f}/item  {phase:8s} {place}")
    print("\n".join(lines), file=sys.stderr)
    out = os.environ.get("GEMMCONF_SYNC_CENSUS")
    if out:
        rows = [{"place": p, "phase": ph, "count": n} for (p, ph), n in _counts.most_common()]
        with open(out, "w") as f:
            json.dump({"items": dict(_items), "places": rows}, f, indent=1)
