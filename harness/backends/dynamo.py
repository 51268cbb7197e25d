"""What every backend adapter built on torch.compile needs, in one place.

- `isolated_entry(fn)`: dynamo caches compiled code on the code object and keeps its automatic-
  dynamic state by (file, line, name); compiling a copy with a fresh code object and name keeps
  one item's compiles and recompile counts from leaking into the next.
- `recompile_limit_patches()`: dynamo's recompile limit raised to RECOMPILE_LIMIT and made to
  raise when hit, so a backend that recompiles on every shape is counted, not silently run eagerly.
- `GraphBreaks`: dynamo's graph-break messages during an item's calls. Where dynamo captured no
  graph at all it runs the whole frame eagerly and never calls the backend (a non-contiguous
  `out=` target; `F.scaled_mm` on torch 2.11, whose `_scaled_mm_v2` dynamo skips): the item is
  then "not compiled" (`uncaptured()`), never a pass of eager's numbers.
- `FrameWatch`: the same judgment for any backend, from dynamo's own counters: the runner
  watches every backend whose compiled callable has no `uncaptured()` of its own (an outside
  backend calling torch.compile itself). Dynamo processed a frame, captured no graph, and the
  backend counts no compile: dynamo ran the program eagerly. A backend that never enters dynamo
  (an aten-override library) leaves the counters alone and is never so judged.
- `skip_guard_latency_profile()`: dynamo's per-compile guard timing, which the harness never
  reads, left out (a fifth of a small item's compile on a CPU machine).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

RECOMPILE_LIMIT = 64

_serial = itertools.count(1)


def skip_guard_latency_profile() -> bool:
    """After each compile dynamo times one run of the new guards for its compile metrics,
    flushing the CPU caches first (torch 2.11-2.13: `guards.profile_guard_manager`, measured at
    about 30 ms per compile on the 2-core CPU machine, a fifth of a small item's compile). No
    result, guard or recompile depends on it, and the harness reads no such metric: this makes it
    report 0 us at once. It never imports dynamo: called before each item, it applies from the
    first item after a compile loaded dynamo. Returns whether it applied (False before that, or
    where torch has no such function)."""
    guards = sys.modules.get("torch._dynamo.guards")
    if guards is None:
        return False
    profile = getattr(guards, "profile_guard_manager", None)
    if profile is None:
        return False
    if not getattr(profile, "skipped_by_gemmconf", False):
        guards.profile_guard_manager = _no_guard_latency
    return True


def _no_guard_latency(*args: Any, **kwargs: Any) -> float:
    return 0.0


_no_guard_latency.skipped_by_gemmconf = True  # type: ignore[attr-defined]


def isolated_entry(fn: Callable[..., Any]) -> types.FunctionType:
    """A function that runs `fn` with a code object and name no other compile has seen."""
    base = re.sub(r"\W", "_", getattr(fn, "__name__", type(fn).__name__))
    name = f"{base}__gemmconf_{next(_serial)}"
    if isinstance(fn, types.FunctionType):
        template = fn
    else:

        def template(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

    entry = types.FunctionType(
        template.__code__.replace(co_name=name, co_qualname=name),
        template.__globals__,
        name,
        template.__defaults__,
        template.__closure__,
    )
    entry.__kwdefaults__ = template.__kwdefaults__
    return entry


def recompile_limit_patches() -> dict[str, Any]:
    """Patches for `torch._dynamo.config.patch` (key names differ between torch versions)."""
    import torch._dynamo.config as config

    limit_key = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    patches: dict[str, Any] = {limit_key: max(RECOMPILE_LIMIT, getattr(config, limit_key))}
    for fail_key in ("fail_on_recompile_limit_hit", "fail_on_cache_limit_hit"):
        if hasattr(config, fail_key):
            patches[fail_key] = True
            break
    return patches


class GraphBreaks:
    """The graph breaks dynamo reports while `watching()` (its `graph_break` counter), in order."""

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.called = False  # a call was watched

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        self.called = True
        before = _counted("graph_break")
        try:
            yield
        finally:
            for reason, count in _counted("graph_break").items():
                if count > before.get(reason, 0) and reason not in self.reasons:
                    self.reasons.append(reason)

    def uncaptured(self, compiles: int, *, broke: bool = False) -> str | None:
        """Why the backend never received the program (it was called, and nothing compiled), in
        dynamo's words; None when it did. `broke`: only where dynamo reported a graph break (a
        call that raised may have raised while dynamo traced, which is no fallback to eager)."""
        if compiles or not self.called or (broke and not self.reasons):
            return None
        if not self.reasons:
            return "no graph break was reported; dynamo skipped the frame"
        first = self.reasons[0].strip().split("\n\n")[0]
        more = f" (and {len(self.reasons) - 1} more)" if len(self.reasons) > 1 else ""
        return f"{first[:BREAK_CHARS]}{more}"


BREAK_CHARS = 600  # of dynamo's first graph-break message in a reason


def _counted(group: str) -> dict[str, int]:
    """One group of dynamo's counters, empty before dynamo was imported (they start at zero).
    Never imports dynamo: importing it inside a pytester run would import it twice in one
    process."""
    utils = sys.modules.get("torch._dynamo.utils")
    return {} if utils is None else dict(utils.counters[group])


class FrameWatch:
    """Frames dynamo processed and graphs it captured while `watching()`, with the graph breaks
    it reported: whether a backend that called torch.compile itself ever received the program."""

    def __init__(self) -> None:
        self.frames = 0
        self.graphs = 0
        self.breaks = GraphBreaks()

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        frames = _counted("frames").get("total", 0)
        graphs = _counted("stats").get("unique_graphs", 0)
        with self.breaks.watching():
            try:
                yield
            finally:
                self.frames += _counted("frames").get("total", 0) - frames
                self.graphs += _counted("stats").get("unique_graphs", 0) - graphs

    def uncaptured(self, compiles: int, *, broke: bool = False) -> str | None:
        """`GraphBreaks.uncaptured`, where dynamo processed a frame and captured no graph."""
        if not self.frames or self.graphs:
            return None
        return self.breaks.uncaptured(compiles, broke=broke)


class DynamoCompiled:
    """`torch.compile(fn, backend=compiler)` for an adapter whose compiler counts `invocations`.

    Compiles an isolated copy of `fn` under the raised recompile limit and reports what the
    compiled function did: its result, or what it raised. When dynamo fails while tracing (eager's
    meta functions reject the inputs), that failure is the backend's answer too: the harness takes
    the error out of dynamo's wrappers (`outcome.unwrap`), and never runs eager in its place.
    Subclasses add `artifacts()`.
    """

    def __init__(self, fn: Callable[..., Any], compiler: Any, *, dynamic: bool | None) -> None:
        import torch
        import torch._dynamo.config as dynamo_config

        self.compiler = compiler
        self._patches = recompile_limit_patches()
        # one patch object re-entered per call: building it anew cost as much again per call
        self._patch = dynamo_config.patch(self._patches)
        with self._patch:
            self._compiled = torch.compile(isolated_entry(fn), backend=compiler, dynamic=dynamic)
        self._breaks = GraphBreaks()

    def __call__(self, *args: Any) -> Any:
        with self._patch, self._breaks.watching():
            return self._compiled(*args)

    def compiles(self) -> int:
        return self.compiler.invocations

    def user_callable(self) -> Callable[..., Any]:
        """The torch.compile'd function itself, as a user calls it (what benchmarks time)."""
        return self._compiled

    def uncaptured(self, *, broke: bool = False) -> str | None:
        """Why the backend never received the program, or None (`GraphBreaks.uncaptured`)."""
        return self._breaks.uncaptured(self.compiles(), broke=broke)
