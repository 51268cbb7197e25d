"""Backends that crash, hang, fault the GPU or leak: isolation must cost only their items.

The self-tests run them on the tiny suite (`suite_files.TINY`, tests/conftest.py's `suite`).

Each computes eagerly (right answers) and misbehaves on the *trigger* item only: the one with an
fp16 operand of shape (17, 33) (``tiny/mm[fp16-17x9x33]`` in the self-tests' suite). Importable
as ``--backend faulty_backends:<name>`` with the tests directory on sys.path. When the environment
names a file in GEMMCONF_FAULTY_LOG, every call appends ``<pid> <backend> <trigger?>`` to it, so a
test can see which process ran what.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

LOG_ENV = "GEMMCONF_FAULTY_LOG"
HANG_S = 120.0
TRIGGER_SHAPE = (17, 33)
TRIGGER_ID = "tiny/mm[fp16-17x9x33]"


@functools.cache
def runs_mm_sm90() -> int:
    """1 where this machine runs a suite's mm_sm90 item (it meets sm90), else 0 (skipped). Asked
    by the tests that count, not at import: workers import this module as a backend."""
    from gemmconf import capability

    wanted = capability.Requirements(min_class="sm90")
    return int(capability.unmet(wanted, capability.detect()) is None)


def logged_calls(path: Path) -> list[tuple[int, str, bool]]:
    """(pid, backend, trigger) per call, from the GEMMCONF_FAULTY_LOG file."""
    if not path.exists():
        return []
    rows = [line.split() for line in path.read_text().splitlines()]
    return [(int(pid), name, flag == "1") for pid, name, flag in rows]


def is_trigger(args: Sequence[Any]) -> bool:
    return any(
        isinstance(a, torch.Tensor) and tuple(a.shape) == TRIGGER_SHAPE and a.dtype == torch.float16
        for a in args
    )


def _log(name: str, trigger: bool) -> None:
    path = os.environ.get(LOG_ENV)
    if path:
        with open(path, "a") as log:
            log.write(f"{os.getpid()} {name} {int(trigger)}\n")


def _segfault() -> None:
    ctypes.string_at(0)  # reads address 0: SIGSEGV


RUNTIME_CHECK = "ERROR: Runtime op verification failed"


def _abort() -> None:
    # as MLIR's runtime checks do (a torch-mlir trial, 2026-12-01): the error on stdout, then abort
    print(RUNTIME_CHECK, flush=True)
    os.abort()


def _exit_3() -> None:
    os._exit(3)


# A compiler's diagnostic printed on stderr behind a generic exception, as IREE's turbine backend
# gives them (a trial, 2026-11-30)
DIAGNOSTIC = "<unknown>:0: error: failed to legalize operation 'torch.constant.bool'"


def _diagnose() -> None:
    print("loc(callsite): in the graph's mm", file=sys.stderr)
    print(DIAGNOSTIC, file=sys.stderr, flush=True)
    raise RuntimeError("JIT compilation failed. See diagnostics.")


def _hang() -> None:
    # Forever, as far as a test is concerned; finite so a broken timeout fails the test (the
    # item passes late) instead of hanging the self-tests.
    time.sleep(HANG_S)


def _fake_cuda_fault() -> None:
    # What torch raises once a kernel wrote out of bounds; the CPU stand-in for oob_write.
    raise torch.AcceleratorError(
        "CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call"
    )


SLOW_S = 0.4  # "slow": clearly longer than an eager item (0.01-0.1 s), short enough to wait on


def _sleep() -> None:
    time.sleep(SLOW_S)


class FaultyCompiled:
    def __init__(self, fn: Callable[..., Any], backend: FaultyBackend):
        self.fn, self.backend = fn, backend
        self.triggered = False

    def __call__(self, *args: Any) -> Any:
        trigger = is_trigger(args)
        self.triggered |= trigger
        _log(self.backend.name, trigger)
        if trigger or self.backend.every_item:
            self.backend.fault()
        return self.fn(*args)

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return 1


class FaultyBackend:
    def __init__(
        self,
        name: str,
        fault: Callable[..., None],
        *,
        every_item: bool = False,
        needs_cuda: bool = False,
    ):
        self.name = name
        self.fault = fault
        self.every_item = every_item
        self.needs_cuda = needs_cuda

    def availability(self) -> str | None:
        if self.needs_cuda and not torch.cuda.is_available():
            return "needs a CUDA GPU"
        return None

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None):
        return FaultyCompiled(fn, self)


@triton.jit
def _scribble(out_ptr, n, far):
    offsets = tl.program_id(0) * 64 + tl.arange(0, 64)
    tl.store(out_ptr + far + offsets, tl.full((64,), 1.0, tl.float32), mask=offsets < n)


def _oob_write() -> None:
    """Launches a Triton kernel that stores 1 TiB past the end of a fresh 64-element buffer."""
    out = torch.empty(64, device="cuda", dtype=torch.float32)
    _scribble[(1,)](out, 64, 1 << 38)  # 2**38 fp32 elements; no sync: the fault surfaces later


_hoard: list[torch.Tensor] = []


def _leak_gpu_memory() -> None:
    _hoard.append(torch.empty(4 << 20, dtype=torch.uint8, device="cuda"))  # 4 MiB kept forever


class _BrokenCompiled(FaultyCompiled):
    def compiles(self) -> int:
        if self.triggered:
            raise AttributeError("'BrokenCompiled' object has no attribute 'graph_count'")
        return 1


class _BrokenProtocol(FaultyBackend):
    """Breaks the Compiled protocol (compiles() raises): a harness-side error, not a crash."""

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None):
        return _BrokenCompiled(fn, self)


segfault = FaultyBackend("segfault", _segfault)
aborts = FaultyBackend("aborts", _abort)
exits = FaultyBackend("exits", _exit_3)
hangs = FaultyBackend("hangs", _hang)
diagnoses = FaultyBackend("diagnoses", _diagnose)
cuda_error = FaultyBackend("cuda-error", _fake_cuda_fault)
slow = FaultyBackend("slow", _sleep, every_item=True)
logs_only = FaultyBackend("logs-only", lambda: None)
oob_write = FaultyBackend("oob-write", _oob_write, needs_cuda=True)
leaks_gpu_memory = FaultyBackend(
    "leaks-gpu-memory", _leak_gpu_memory, every_item=True, needs_cuda=True
)
broken_protocol = _BrokenProtocol("broken-protocol", lambda: None)
