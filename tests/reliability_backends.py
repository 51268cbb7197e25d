"""Backends for the reliability self-tests (test_reliability.py): flaky, slow on a busy machine,
slow to compile, out of memory (always, or once), one that takes 200 MiB of the host's memory
for a moment, and one that logs when each call ran.

Like `faulty_backends`, each computes eagerly and misbehaves on the trigger item only
(``tiny/mm[fp16-17x9x33]`` of faulty_backends' suite). What must survive a fresh worker process
(how many times an item ran) is kept in files under the directory named by
GEMMCONF_RELIABILITY_DIR.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from faulty_backends import is_trigger

DIR_ENV = "GEMMCONF_RELIABILITY_DIR"


def _directory() -> Path:
    return Path(os.environ[DIR_ENV])


def _runs_before(name: str) -> int:
    """How many times `name`'s trigger item ran before (in any process), counting this run."""
    path = _directory() / f"{name}.count"
    count = int(path.read_text()) if path.exists() else 0
    path.write_text(str(count + 1))
    return count


class _Compiled:
    def __init__(self, fn: Callable[..., Any], backend: _Backend):
        self.fn, self.backend = fn, backend

    def __call__(self, *args: Any) -> Any:
        start = time.time()
        out = self.backend.call(self.fn, args)
        self.backend.log(start, time.time())
        return out

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return 1


class _Backend:
    name = "reliability"

    def availability(self) -> str | None:
        return None

    def compile(self, fn, example_inputs: Sequence[Any], *, dynamic: bool | None) -> _Compiled:
        return _Compiled(fn, self)

    def call(self, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
        return fn(*args)

    def log(self, start: float, end: float) -> None:
        pass


class _FlakyOnce(_Backend):
    """A wrong answer on the trigger item's first run only."""

    name = "flaky-once"

    def call(self, fn, args):
        out = fn(*args)
        return out + 1 if is_trigger(args) and _runs_before(self.name) == 0 else out


class _AlwaysWrong(_Backend):
    name = "always-wrong"

    def call(self, fn, args):
        out = fn(*args)
        return out + 1 if is_trigger(args) else out


class _SlowOnce(_Backend):
    """The trigger item's first run takes 60 s (as on an overloaded machine), later runs none."""

    name = "slow-once"

    def call(self, fn, args):
        if is_trigger(args) and _runs_before(self.name) == 0:
            time.sleep(60.0)
        return fn(*args)


class _SlowCompile(_Backend):
    """Compiling the trigger item takes 60 s: the time to first result runs out."""

    name = "slow-compile"

    def compile(self, fn, example_inputs, *, dynamic):
        if is_trigger(example_inputs):
            time.sleep(60.0)
        return _Compiled(fn, self)


class _OutOfMemory(_Backend):
    """Raises torch's CUDA out-of-memory error, message and all, on the trigger item."""

    name = "out-of-memory"

    def call(self, fn, args):
        if is_trigger(args):
            raise torch.OutOfMemoryError(
                "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
                "23.55 GiB of which 1.25 GiB is free. Including non-PyTorch memory, this process "
                "has 22.30 GiB memory in use."
            )
        return fn(*args)


class _OutOfMemoryOnce(_OutOfMemory):
    """Out of memory on the trigger item's first call only: as where an earlier run's measured
    peak admitted it by too little for what it takes now."""

    name = "out-of-memory-once"

    def call(self, fn, args):
        if is_trigger(args) and _runs_before(self.name) == 0:
            return super().call(fn, args)
        return fn(*args)


class _HostHungry(_Backend):
    """On the trigger item, each call writes 200 MiB of the host's memory (`HUNGRY_BYTES`, every
    page resident) and lets it go before it returns."""

    name = "host-hungry"

    def call(self, fn, args):
        if is_trigger(args):
            held = torch.ones(HUNGRY_BYTES // 4, dtype=torch.float32)
            del held
        return fn(*args)


HUNGRY_BYTES = 200 << 20


class _SlowChecks(_Backend):
    """Fine itself; but on the trigger item the harness's own checks (the oracle) take 60 s, as
    a huge item's fp64 reference did on an H100: gemmconf's fault, never the backend's."""

    name = "slow-checks"

    def compile(self, fn, example_inputs, *, dynamic):
        if is_trigger(example_inputs):
            from gemmconf.checks import values

            judge = values._judge_shape_set

            def slow_judge(*args):
                time.sleep(60.0)
                return judge(*args)

            values._judge_shape_set = slow_judge  # this worker process only
        return _Compiled(fn, self)


class _Timed(_Backend):
    """Every call takes 0.3 s and appends ``<pid> <start> <end>`` to timed.log."""

    name = "timed"

    def call(self, fn, args):
        time.sleep(0.3)
        return fn(*args)

    def log(self, start: float, end: float) -> None:
        with open(_directory() / "timed.log", "a") as log:
            log.write(f"{os.getpid()} {start} {end}\n")


flaky_once = _FlakyOnce()
always_wrong = _AlwaysWrong()
slow_once = _SlowOnce()
slow_compile = _SlowCompile()
out_of_memory = _OutOfMemory()
out_of_memory_once = _OutOfMemoryOnce()
slow_checks = _SlowChecks()
host_hungry = _HostHungry()
timed = _Timed()
