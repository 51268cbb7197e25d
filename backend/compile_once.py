"""One compile per kernel signature per run, however many processes meet it.

Every xdist worker (and every isolation worker) has its own Triton JIT. The first time a process
launches a kernel signature, Triton compiles it, or loads it from its disk cache when another
process compiled it before. Two processes meeting a new signature at the same time both compiled
it: on one H200 with 16 workers a cold run made 1,920 compiles or loads for 820 distinct
signatures, and 2,650 on four H200s with 64 workers.

So the first launch of a signature in a process holds an exclusive file lock named after the
signature (`signature_lock`), in a folder inside Triton's cache folder (processes that share a
Triton cache are the ones that can share a compile). The first process compiles and Triton writes
its disk cache; a process that waited finds the entry there and loads it. The lock is an
`fcntl.flock` on an open file: the kernel drops it when the holder closes it or dies (a crash, a
worker killed on a timeout), so a holder cannot leave it taken. A waiter gives up after
`COMPILE_WAIT_S` and compiles anyway, and where no lock can be had (a read-only cache folder, a
filesystem without flock) the launch goes ahead unlocked: never worse than without the lock.
Lock files stay (one empty file per distinct signature, reused by later runs): removing a lock
file that another process may be about to lock is a race.

A waiter loads only what it would have compiled under the same Triton key: every process must
key a kernel alike, which Triton 3.6-3.7.1 does only when processes hash the kernels' helpers
in the same order (`compat.settle_cache_keys`, run when the kernels are imported: on
`nvidia-h200-x2`, 2026-11-30, two of 32 processes keyed `gemm_kernel` otherwise and compiled
83 kernels again).

`counting_builds` tells a compile from a load: Triton 3.6 and 3.7 call
`triton.knobs.compilation.listener(src=..., metadata=..., metadata_group=..., times=...,
cache_hit=...)` after each `triton.compile`; while a first launch runs, a listener counts the
events for its kernel, then hands each event on to the listener that was installed before.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # no flock on this platform: launches go unlocked
    fcntl = None  # type: ignore[assignment]

# A compile taking longer than this (64 workers on 64 cores made single kernels take tens of
# seconds) is not waited for further; well under the harness's 180 s first-result budget.
COMPILE_WAIT_S = 60.0
LOCKS_FOLDER = "gemmconf-compile-locks"
_FIRST_PAUSE_S, _LONGEST_PAUSE_S = 0.005, 0.05  # polls while another process holds the lock


def locks_dir() -> Path | None:
    """The lock folder inside Triton's cache folder (`TRITON_CACHE_DIR`, else Triton's
    default); None where this Triton does not say where its cache is."""
    try:
        from triton import knobs

        return Path(knobs.cache.dir) / LOCKS_FOLDER
    except Exception:  # an older or newer Triton without knobs.cache.dir
        return None


def _open_lock(directory: Path, signature: str) -> int | None:
    """An open descriptor on the signature's lock file; None where it cannot be made."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        return os.open(directory / f"{signature}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return None


def _acquire(fd: int, wait_s: float) -> tuple[bool, float]:
    """(whether `fd` is now locked, the seconds waited): polls until the lock is free, for at
    most `wait_s` seconds."""
    assert fcntl is not None
    start = time.monotonic()
    pause = _FIRST_PAUSE_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True, time.monotonic() - start
        except BlockingIOError:
            waited = time.monotonic() - start
            if waited >= wait_s:
                return False, waited
            time.sleep(min(pause, wait_s - waited))
            pause = min(pause * 1.5, _LONGEST_PAUSE_S)
        except OSError:  # a filesystem that does not lock
            return False, time.monotonic() - start


@dataclass(frozen=True)
class LockWait:
    """How a first launch got its signature's lock."""

    seconds: float  # spent waiting for it
    held: bool  # False: went ahead unlocked (no lock to be had, or waited `wait_s` in vain)


@contextlib.contextmanager
def signature_lock(
    signature: str | None,
    directory: Path | None = None,
    *,
    wait_s: float = COMPILE_WAIT_S,
) -> Iterator[LockWait]:
    """Holds `signature`'s lock in `directory` (default `locks_dir()`) while the block runs.
    Goes ahead unlocked where there is no signature, no lock folder, no flock, or after `wait_s`
    seconds of waiting."""
    directory = directory if directory is not None else locks_dir()
    fd = None
    if signature is not None and directory is not None and fcntl is not None:
        fd = _open_lock(directory, signature)
    if fd is None:
        yield LockWait(0.0, held=False)
        return
    try:
        held, waited = _acquire(fd, wait_s)
        yield LockWait(waited, held)
    finally:
        os.close(fd)  # closing the only descriptor on the file releases its lock


@dataclass
class BuildCount:
    """Triton's compile events for one kernel during one first launch."""

    name: str  # the kernel's function name, as Triton's compile source names it
    builds: int = 0  # compiled
    loads: int = 0  # loaded from Triton's disk cache
    known: bool = True  # False: this Triton has no compilation listener
    built: list[str] = field(default_factory=list)  # Triton's hashes of the kernels compiled
    loaded: list[str] = field(default_factory=list)  # and of those loaded
    # seconds of the compiles by Triton's stage: "source" (the kernel's Python to its first
    # IR), each lowering stage by its file extension (ttir, ttgir, llir, ptx, cubin), "store";
    # a Counter of floats: `update` adds seconds
    stages: Counter[str] = field(default_factory=Counter)

    def heard(self, src: Any, cache_hit: bool, metadata: Any = None, times: Any = None) -> None:
        if getattr(src, "name", None) != self.name:
            return  # another kernel compiled meanwhile (another thread, a nested compile)
        # Triton's own key: the same for one kernel however many processes meet it
        key = metadata.get("hash") if isinstance(metadata, dict) else None
        if cache_hit:
            self.loads += 1
            self.loaded += [key] if key else []
        else:
            self.builds += 1
            self.built += [key] if key else []
            self.stages.update(stage_seconds(times))


def stage_seconds(times: Any) -> dict[str, float]:
    """Triton's `CompileTimes` (microseconds) as seconds by stage (`BuildCount.stages`); {}
    where the event carries none."""
    if times is None:
        return {}
    try:
        stages = [("source", times.ir_initialization), *times.lowering_stages]
        stages.append(("store", times.store_results))
        return {str(name): int(us) / 1e6 for name, us in stages}
    except (AttributeError, TypeError, ValueError):  # another Triton's shape of it
        return {}


class _Listening:
    """The listener this module installs while any first launch runs, in any thread."""

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.counts: list[BuildCount] = []
        self.previous: Any = None

    def __call__(self, *, src: Any, cache_hit: bool, **event: Any) -> None:
        for count in list(self.counts):
            count.heard(src, cache_hit, event.get("metadata"), event.get("times"))
        if self.previous is not None:
            self.previous(src=src, cache_hit=cache_hit, **event)


_LISTENING = _Listening()


def _compilation_knobs() -> Any:
    """`triton.knobs.compilation` where it has a `listener` (Triton 3.4+), else None."""
    try:
        from triton import knobs
    except ImportError:
        return None
    compilation = getattr(knobs, "compilation", None)
    return compilation if hasattr(compilation, "listener") else None


@contextlib.contextmanager
def counting_builds(fn: Any) -> Iterator[BuildCount]:
    """Counts Triton's compiles and disk-cache loads of kernel `fn` while the block runs.
    Whatever listener was installed before hears every event, and is put back afterwards
    (unless someone else replaced ours meanwhile: theirs then stays)."""
    count = BuildCount(getattr(fn, "__name__", repr(fn)))
    compilation = _compilation_knobs()
    if compilation is None:
        count.known = False
        yield count
        return
    with _LISTENING.guard:
        if not _LISTENING.counts and compilation.listener is not _LISTENING:
            _LISTENING.previous = compilation.listener
            compilation.listener = _LISTENING
        _LISTENING.counts.append(count)
    try:
        yield count
    finally:
        with _LISTENING.guard:
            _LISTENING.counts.remove(count)
            if not _LISTENING.counts:
                if compilation.listener is _LISTENING:
                    compilation.listener = _LISTENING.previous
                _LISTENING.previous = None
