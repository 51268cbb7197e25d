"""Checks around the backend's call that one numeric comparison cannot make (DESIGN.md,
"Integrity").

- `Poison`: while the backend runs, fresh memory holds a known byte pattern, so output elements
  the backend never wrote are found (`unwritten`) instead of passing for right when the allocator
  happens to hand back an earlier answer. On a GPU, blocks of the outputs' sizes are filled with
  0xFF (NaN in every float dtype) and returned to the caching allocator just before the call,
  which hands the same blocks to the call's allocations of those sizes (memory the call frees and
  takes again itself is not refilled: the caching allocator has no such hook). On a Linux CPU,
  glibc's `M_PERTURB` (mallopt) fills every allocation made during the call with 0x7F and all it
  frees with 0x80, for the call only. glibc's thread cache (tcache) hands its blocks out without
  the fill, and any free of the call's own can put one there, so the isolation workers that run
  items start with it off (`ALLOCATOR_ENV`, `allocator_env`), but for those that time calls
  (--benchmark: a GPU run, whose poison is the caching allocator's). With it on, a 64-byte output
  took an unfilled block in 21 of 300 calls after a random history of mallocs and frees, with it
  off in none (glibc 2.36, 2026-11-29). In the pytest process itself (``--no-isolate``) the
  blocks of the outputs' sizes that the tcache holds are taken out meanwhile, which narrows the
  gap without closing it. Neither changes what the backend computes, only what memory holds
  before it writes (tests/test_integrity.py compares results with and without it bit for bit).
  A one-byte element (fp8, int8) that holds a pattern may be a value the backend wrote (0x80 is
  e4m3fn's -0.0, which an underflowing product rounds to): such elements count as unwritten only
  when the call, made again under a second pattern (`SECOND_FILL`), leaves them holding that one.
  `torch.utils.deterministic.fill_uninitialized_memory` was not used: it needs
  `torch.use_deterministic_algorithms(True)`, which changes the kernels ops choose (and makes
  CUDA GEMMs raise without CUBLAS_WORKSPACE_CONFIG); a TorchDispatchMode was not used either:
  torch.compile runs the function eagerly, uncompiled, while one is active.
- `InputGuard`: the bytes of every input's storage before and after the call.
- `bitwise_diff`: where two results differ bit for bit (determinism, batch invariance).
- `side_stream_call`: the call made on a non-default CUDA stream while the default stream is busy,
  read back on that stream only: a backend that launches on the default stream returns too early.
  Whether the copy finished before the default stream woke says whether a right answer proves
  anything.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import platform
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gemmconf import staging

M_PERTURB = -6  # glibc mallopt parameter: fill allocations with ~byte and freed memory with byte
PERTURB_BYTE = 0x80
CPU_POISON = PERTURB_BYTE ^ 0xFF  # 0x7F: 3.4e38 in fp32/bf16, NaN in fp16 and fp8, 2139062143
CUDA_POISON = 0xFF  # NaN in every float dtype, -1 in integers
# the second pattern a one-byte output is called again under (`unwritten`): on a CPU the bytes
# freed and allocated memory hold then are 0x35 and 0xCA, on a GPU fresh blocks hold 0x35
SECOND_FILL = 0x35
SIDE_STREAM_SLEEP_CYCLES = 4_000_000  # about 2 ms of the default stream kept busy, at first
CUDA_BLOCKS_PER_SIZE = 2
SMALL_BLOCK_BYTES = 2048  # glibc's tcache and fastbins serve blocks up to about this size
SMALL_BLOCKS_HELD = 16  # more than tcache's 7 per size and a fastbin's usual length
# glibc reads its tunables once, at a process's start: the isolation workers start with this one
ALLOCATOR_ENV = "GLIBC_TUNABLES"
TCACHE_OFF = "glibc.malloc.tcache_count=0"


def _mallopt() -> Callable[[int, int], int] | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None


_MALLOPT = _mallopt()
_PERTURB_BEFORE = int(os.environ.get("MALLOC_PERTURB_", "0") or 0) & 0xFF


def _tcache_off_in(tunables: str) -> bool:
    """Whether a GLIBC_TUNABLES value turns the tcache off: its last tcache_count setting (the
    one glibc keeps) is `TCACHE_OFF`."""
    counts = [t for t in tunables.split(":") if t.startswith("glibc.malloc.tcache_count=")]
    return bool(counts) and counts[-1] == TCACHE_OFF


def allocator_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a process that runs backend calls under `Poison`: glibc's tcache off (module
    docstring), after any tunables `env` sets already (the last setting of one wins)."""
    before = env.get(ALLOCATOR_ENV, "")
    if _tcache_off_in(before):
        return dict(env)
    return {**env, ALLOCATOR_ENV: f"{before}:{TCACHE_OFF}" if before else TCACHE_OFF}


@functools.cache
def tcache_off_here() -> bool:
    """Whether this process started with glibc's tcache off (what glibc read at its start: the
    environment the process was given, /proc/self/environ), so that the CPU poison reaches every
    fresh block. False where that cannot be read (not Linux)."""
    try:
        given = Path("/proc/self/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    prefix = f"{ALLOCATOR_ENV}=".encode()
    tunables = [v[len(prefix) :].decode(errors="replace") for v in given if v.startswith(prefix)]
    return _tcache_off_in(tunables[-1]) if tunables else False


def cpu_poison_gap(*, in_this_process: bool) -> str | None:
    """Why the CPU poison may miss an unwritten output of items run in this process
    (``--no-isolate``) or else in isolation workers, or None where it does not."""
    if _MALLOPT is None:
        return "not glibc's malloc here: CPU outputs are not poisoned, an unwritten one may pass"
    if in_this_process and not tcache_off_here():
        return (
            "--no-isolate: glibc's thread cache is on in this process, so an unwritten CPU output "
            "of 1 KiB or less may go unfound (isolation workers start with it off)"
        )
    return None


def leaves(value: Any) -> Iterator[tuple[str, Any]]:
    """(path, leaf) pairs of a nested tuple/list/dict result; a single tensor has path ""."""
    if isinstance(value, tuple | list):
        for index, item in enumerate(value):
            for path, leaf in leaves(item):
                yield f"[{index}]{path}", leaf
    elif isinstance(value, dict):
        for key, item in value.items():
            for path, leaf in leaves(item):
                yield f"[{key!r}]{path}", leaf
    else:
        yield "", value


def storage_start(value: Any) -> int | None:
    """Where a tensor's storage begins, or None where it has none to share: no tensor, an empty
    storage (every empty one may begin at 0), or a tensor without storage (a subclass)."""
    if not isinstance(value, torch.Tensor):
        return None
    try:
        storage = value.untyped_storage()
        return storage.data_ptr() if storage.nbytes() else None
    except (RuntimeError, NotImplementedError):
        return None


def tensors_of(value: Any) -> list[torch.Tensor]:
    return [leaf for _, leaf in leaves(value) if isinstance(leaf, torch.Tensor)]


def as_returned(value: Any) -> Any:
    """A nested result with each strided tensor copied storage and all (its offset, strides and
    padding as returned), so that what a later call writes into the backend's memory does not
    reach it; a tensor that requires grad (its graph is the result) is kept as it is."""
    if isinstance(value, tuple | list):
        return type(value)(as_returned(item) for item in value)
    if isinstance(value, dict):
        return {key: as_returned(item) for key, item in value.items()}
    if not isinstance(value, torch.Tensor) or value.requires_grad:
        return value
    if value.layout != torch.strided or type(value) is not torch.Tensor:
        return value
    return view_like(value.untyped_storage().clone(), value)


def view_like(storage: torch.UntypedStorage, like: torch.Tensor) -> torch.Tensor:
    """A tensor over `storage` (a copy of `like`'s) with `like`'s dtype, offset, shape and
    strides: `like` as it was, read from the copy."""
    view = torch.empty(0, dtype=like.dtype, device=storage.device)
    return view.set_(storage, like.storage_offset(), like.shape, like.stride())


class Poison:
    """Fresh memory holds a known pattern in every byte while the backend's call runs (module
    docstring); `patterns` are the bytes an unwritten element may hold. `fill`: another byte
    than the usual (`SECOND_FILL`): on a CPU the byte freed memory holds (allocations hold its
    complement), on a GPU the byte fresh blocks hold."""

    def __init__(
        self,
        device: str,
        sizes: Sequence[int] = (),
        *,
        enabled: bool = True,
        fill: int | None = None,
    ):
        self.device = torch.device(device)
        self.sizes = sorted({int(s) for s in sizes if s > 0})
        self.enabled = enabled
        cuda = self.device.type == "cuda"
        self.fill = (CUDA_POISON if cuda else PERTURB_BYTE) if fill is None else fill
        # on a CPU, memory freed during the call holds the fill when it comes back unfilled
        self.patterns = (self.fill,) if cuda else (self.fill ^ 0xFF, self.fill)
        self._held: list[torch.Tensor] = []

    def __enter__(self) -> Poison:
        if not self.enabled:
            return self
        if self.device.type == "cuda":
            # The allocator hands these blocks (best fit, lowest address first: the ones the
            # call's own allocations of these sizes would get) back to the call, poisoned.
            blocks = [
                torch.empty(n, dtype=torch.uint8, device=self.device)
                for n in self.sizes
                for _ in range(CUDA_BLOCKS_PER_SIZE)
            ]
            for block in blocks:
                block.fill_(self.fill)
            del blocks
        elif self.device.type == "cpu" and _MALLOPT is not None:
            _MALLOPT(M_PERTURB, self.fill)
            if tcache_off_here():  # an isolation worker: every fresh block gets the fill
                return self
            # where glibc's tcache is on (the pytest process: --no-isolate) it hands blocks out
            # without the fill: hold what it has of these sizes, so the call's allocations get
            # filled ones unless the call frees one of them first (module docstring)
            self._held = [
                torch.empty(n, dtype=torch.uint8)
                for n in self.sizes
                if n <= SMALL_BLOCK_BYTES
                for _ in range(SMALL_BLOCKS_HELD)
            ]
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled and self.device.type == "cpu" and _MALLOPT is not None:
            _MALLOPT(M_PERTURB, _PERTURB_BEFORE)
            self._held = []


def nbytes_of(value: Any) -> list[int]:
    """The storage sizes of a result's tensors: what to poison before the backend's call."""
    return [t.untyped_storage().nbytes() for t in tensors_of(value)]


def _poisoned(t: torch.Tensor, byte: int) -> torch.Tensor:
    """Per element of `t`: whether every byte of it is `byte`."""
    flat = t.detach().contiguous().reshape(-1)
    if flat.numel() == 0:
        return torch.zeros(0, dtype=torch.bool, device=t.device)
    size = t.element_size()
    whole = staging.WHOLE_ELEMENT.get(size)
    if whole is not None:  # one comparison per element (a byte-wise all() took 5x the time)
        signed = whole is not torch.uint8
        return flat.view(whole) == int.from_bytes(bytes([byte]) * size, "little", signed=signed)
    raw = flat.view(torch.uint8).reshape(flat.numel(), size)
    return (raw == byte).all(dim=1)


@dataclass(frozen=True)
class UnwrittenFinding:
    """One output's unwritten elements: how many of its `numel`, and the first one's index."""

    output: str  # the output's path among the result's tensors (`leaves`)
    count: int
    numel: int
    first_index: tuple[int, ...]


def unwritten(
    expected: Any,
    actual: Any,
    patterns: Sequence[int],
    again: Callable[[], tuple[Any, Sequence[int]]] | None = None,
) -> list[UnwrittenFinding]:
    """Output elements that still hold a poison pattern and are wrong: eager's value there is not
    the pattern and is farther than 1% of eager's largest magnitude (or not a number at all). A
    pattern can be a legitimate value in a small dtype (0x80 is -0.0 in e4m3fn): the distance
    keeps a right value from passing for unwritten, and a wrong one that happens to be a pattern
    (a product flushed to -0.0) counts only where the call made again under other patterns
    (`again()`: its result and their bytes, asked once, only when a one-byte output has such
    elements) leaves that element holding one of those too. Without `again`, one-byte outputs
    count as the others do."""
    hits = _unwritten_elements(expected, actual, patterns)
    if again is not None and any(_leaf(actual, p).element_size() == 1 for p in hits):
        second, second_patterns = again()
        confirmed = _unwritten_elements(expected, second, second_patterns)
        for path in list(hits):
            if _leaf(actual, path).element_size() != 1:
                continue
            other = confirmed.get(path)
            if other is None or other.shape != hits[path].shape:
                del hits[path]
            else:
                hits[path] = hits[path] & other.to(hits[path].device)
    found = []
    for path, hit in hits.items():
        count = int(hit.sum())
        if count:
            got = _leaf(actual, path)
            first = int(hit.nonzero()[0])
            found.append(UnwrittenFinding(path, count, got.numel(), _unravel(first, got.shape)))
    return found


def _leaf(value: Any, path: str) -> torch.Tensor:
    """The tensor at `path` (`leaves`' path) of a result."""
    return dict(leaves(value))[path]


def _unwritten_elements(
    expected: Any, actual: Any, patterns: Sequence[int]
) -> dict[str, torch.Tensor]:
    """Per output path with unwritten elements (`unwritten`'s rule): where they are (flat)."""
    found = {}
    wanted = dict(leaves(expected))
    for path, got in leaves(actual):
        want = wanted.get(path)
        if not isinstance(got, torch.Tensor) or not isinstance(want, torch.Tensor):
            continue
        if got.shape != want.shape or got.dtype != want.dtype or got.numel() == 0:
            continue
        want = want.to(got.device)
        hit = torch.zeros(got.numel(), dtype=torch.bool, device=got.device)
        for byte in patterns:
            hit |= _poisoned(got, byte) & ~_poisoned(want, byte)
        if not bool(hit.any()):
            continue
        g, w = got.detach().reshape(-1).double(), want.detach().reshape(-1).double()
        scale = float(torch.nan_to_num(w.abs(), nan=0.0, posinf=0.0).max())
        hit &= ~((g - w).abs() <= 0.01 * scale)  # a NaN where eager is finite counts as far
        if want.is_floating_point():
            hit &= torch.isfinite(w)  # where eager is NaN/Inf, a NaN pattern may be a real NaN
        if bool(hit.any()):
            found[path] = hit
    return found


def _unravel(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size if size else 0)
        flat //= size if size else 1
    return tuple(reversed(index))


def bits(t: torch.Tensor) -> torch.Tensor:
    """`t` reinterpreted as integers of its width: bitwise comparison, NaN payloads included."""
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.detach().view(width) if t.dtype != width else t.detach()


@dataclass(frozen=True)
class Difference:
    count: int
    numel: int
    first_index: tuple[int, ...]
    first: float
    second: float


def bitwise_diff(first: torch.Tensor, second: torch.Tensor) -> Difference | None:
    """Where two tensors of one shape and dtype differ bit for bit; None when they do not."""
    if first.shape != second.shape or first.dtype != second.dtype:
        return Difference(max(first.numel(), second.numel()), first.numel(), (), math.nan, math.nan)
    a, b = bits(first), bits(second.to(first.device))
    differ = a != b
    count = int(differ.sum())
    if not count:
        return None
    flat = int(differ.reshape(-1).nonzero()[0])
    index = _unravel(flat, first.shape)
    return Difference(
        count,
        first.numel(),
        index,
        # detached: a value of a tensor that requires grad warned, in the backend's stderr (an
        # optimum-quanto trial, 2026-12-02)
        float(first.detach()[index].float()) if first.dim() else float(first.detach().float()),
        float(second.detach()[index].float()) if second.dim() else float(second.detach().float()),
    )


@dataclass(frozen=True)
class Modified:
    name: str
    shape: tuple[int, ...]
    count: int
    numel: int
    first_index: tuple[int, ...]
    before: float | None
    after: float | None


HOST_COPY_BYTES = 64 << 20  # a GPU input storage at least this large is copied to the host


def first_difference(
    first: Any, second: Any, view: Callable[[torch.Tensor], torch.Tensor] = lambda t: t
) -> Difference | None:
    """The first pair of a result's tensors (the first's seen through `view`) that differ bit
    for bit, as `bitwise_diff` says; None when every pair is equal."""
    for a, b in zip(tensors_of(first), tensors_of(second), strict=False):
        diff = bitwise_diff(view(a), b)
        if diff is not None:
            return diff
    return None


class InputGuard:
    """A copy of the bytes of every input's storage, to compare after a call (one copy of the
    inputs' memory; the view's values before are read back from it when something changed).
    Large GPU storages are copied to the host, so that the check costs the GPU no memory where
    the item is largest."""

    def __init__(self, names: Sequence[str], tensors: Sequence[Any]):
        self.entries = []
        seen: dict[tuple[Any, int], str] = {}
        for name, t in zip(names, tensors, strict=True):
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            key = (storage.device, storage.data_ptr())
            if key in seen:  # an alias (layout `alias`): one storage, checked once
                continue
            seen[key] = name
            raw = torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage)
            on_host = raw.device.type != "cpu" and raw.numel() >= HOST_COPY_BYTES
            copy = (
                staging.to_host(raw) if on_host else staging.words(raw)[0].clone().view(torch.uint8)
            )
            self.entries.append((name, t, raw, copy))

    def modified(self) -> list[Modified]:
        found = []
        for name, t, raw, raw_before in self.entries:
            if _equal_bytes(raw, raw_before):
                continue
            before = view_like(raw_before.untyped_storage(), t)
            diff = bitwise_diff(before, t)
            if diff is None:  # only bytes outside the view changed
                count = int((raw.to(raw_before.device) != raw_before).sum())
                found.append(Modified(name, tuple(t.shape), count, raw.numel(), (), None, None))
            else:
                found.append(
                    Modified(
                        name,
                        tuple(t.shape),
                        diff.count,
                        diff.numel,
                        diff.first_index,
                        diff.first,
                        diff.second,
                    )
                )
        return found


def _equal_bytes(raw: torch.Tensor, before: torch.Tensor) -> bool:
    """Whether a storage's bytes equal their copy (held on the same device or on the host)."""
    if raw.device == before.device:
        return staging.equal_bytes(raw, before)
    return staging.equal_on_host(raw, before)


@dataclass(frozen=True)
class SideStreamAnswer:
    """What `side_stream_call` read: the results as copied on the side stream, whether that copy
    finished while the default stream still slept (`in_time`: then a right answer shows that
    nothing the call left to the default stream wrote it; a wrong one is wrong whenever it was
    read), and whether the call had returned and the copy was queued while it still slept
    (`queued_asleep`: a copy queued then that finished after the wake was kept waiting, by
    the side stream's own work or by a wait for the default stream's)."""

    value: Any
    in_time: bool
    queued_asleep: bool
    slept_cycles: int


def side_stream_call(
    call: Callable[[], Any],
    sizes: Sequence[int] = (),
    cycles: int = SIDE_STREAM_SLEEP_CYCLES,
    *,
    again: bool = False,
) -> SideStreamAnswer:
    """`call()` on a fresh CUDA stream while the default stream sleeps `cycles`; the results are
    copied on that stream and read once it (alone) finished, as a caller that uses streams
    would. Blocks of the outputs' `sizes` are poisoned on that stream first, and on the default
    stream too when the call is made `again`: an output the call leaves to the default stream
    is read as the poison, not as whatever an earlier call left in its block, which can be this
    very answer (an H200, 2026-11-30: a planted default-stream backend passed this way on a side
    stream from the pool; 2026-12-01: it passed on a call made again, in the default stream's
    block of the call before).

    Whatever the call put on the default stream runs after the sleep, so a copy that finished
    before the sleep ended (CUDA events on both streams: `in_time`) read the answer of the side
    stream's work alone; a later one may have read the default stream's too."""
    default = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    side.wait_stream(default)  # the inputs are ready
    if again:  # the default stream's blocks (the side stream's: below)
        with Poison("cuda", sizes):
            pass
    torch.cuda._sleep(cycles)  # the default stream is busy a while
    woke = torch.cuda.Event(enable_timing=True)
    woke.record(default)  # what the call puts on the default stream runs after this
    copied_at = torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(side), Poison("cuda", sizes):
        result = call()
        copied = _map_tensors(result, lambda t: t.clone())
        copied_at.record(side)
    queued_asleep = not woke.query()
    side.synchronize()
    torch.cuda.synchronize()
    return SideStreamAnswer(copied, copied_at.elapsed_time(woke) > 0, queued_asleep, cycles)


def _map_tensors(value: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple | list):
        return type(value)(_map_tensors(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map_tensors(v, fn) for k, v in value.items()}
    return value
