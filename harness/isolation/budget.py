"""What the pytest processes of one run share: each GPU's memory, and the machine.

xdist workers are separate processes, so what they share is kept in files: a *ledger* per GPU
(and one for the machine) in a directory of the run, a JSON state read and written under an
exclusive ``flock``. An item *holds* an amount from the ledger while it runs:

- it is admitted when what is held plus its amount fits the ledger's capacity, in arrival order
  with some patience: an item that fits may pass items waiting ahead of it, but only while none
  of them has waited `PATIENCE_S`; then the queue is strict, so a large item waiting for memory
  is not starved by a stream of small ones; except that a *small* item (at most `SMALL_SHARE`
  of the capacity: seconds long, where the large ones take minutes) still fills the room the
  waiting items cannot use: while the large holds alone keep them waiting. Once the large holds
  are gone no small item passes any more, the small ones drain, and the waiting items start. (On
  an H100, slowest-first ordering put every large item at the front, and the strict queue left
  sixteen workers idle behind them for minutes.)
- an item larger than the capacity runs *alone*: once nothing else is held, and nothing else is
  admitted until it is done (it may still fail for memory; then it is the item, not its
  neighbours, that did not fit);
- an item that asks to run alone (a timeout being confirmed on an otherwise idle machine) waits
  until nothing is held, and holds everything.

Holds of a process that died (a killed xdist worker) are dropped by the next process that looks.
Waiting is polling, with the lock held only to read and write the state.

Every item holds one unit of the machine ledger (unbounded: it only counts), then its estimate of
the host's memory (on GPU machines: the fp64 reference inputs live on the CPU), then of its GPU's;
always in that order, so two items cannot wait on each other.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

POLL_S = (0.02, 0.5)  # first and longest pause between looks at a full ledger
PATIENCE_S = 30.0  # how long a waiting item lets items that arrived after it pass
SMALL_SHARE = 1 / 16  # a hold this share of the capacity or less may fill room others cannot use


@dataclass
class Hold:
    """One admitted hold, and what the item's record may say about it."""

    amount: int
    alone: bool  # nothing else ran beside it (it asked, or it was larger than the capacity)
    waited_s: float = 0.0
    others_at_start: int = 0  # holds beside it when it was admitted
    admitted_at: int = 0  # the ledger's admission count then
    undisturbed: bool = False  # (at release) nothing else held or was admitted meanwhile


@dataclass
class _State:
    capacity: float
    holds: dict[str, dict] = field(default_factory=dict)  # token -> {pid, amount, alone}
    # in arrival order: [token, arrival time, amount, whether it needs the whole ledger]
    queue: list[list] = field(default_factory=list)
    admitted: int = 0


class Ledger:
    """One shared resource of `capacity` units (bytes of a GPU; items of the machine)."""

    def __init__(self, path: Path, capacity: float, *, patience_s: float = PATIENCE_S):
        self.path = Path(path)
        self.capacity = capacity
        self.patience_s = patience_s
        self._lock_path = self.path.with_suffix(".lock")
        self._count = 0

    @contextmanager
    def hold(self, amount: int, *, alone: bool = False) -> Iterator[Hold]:
        """Hold `amount` while the block runs (waiting first, as the module docstring says)."""
        self._count += 1
        token = f"{os.getpid()}-{id(self)}-{self._count}"
        start = time.monotonic()
        pause = POLL_S[0]
        try:
            with self._state() as state:  # queued and, where nothing stands in the way, admitted
                state.queue.append([token, time.time(), amount, alone or amount > state.capacity])
                granted = self._admit(state, token, amount, alone)
            while granted is None:
                time.sleep(pause)
                pause = min(pause * 1.5, POLL_S[1])
                with self._state() as state:
                    granted = self._admit(state, token, amount, alone)
            granted.waited_s = time.monotonic() - start
        except BaseException:
            with self._state() as state:
                state.queue = [entry for entry in state.queue if entry[0] != token]
            raise
        try:
            yield granted
        finally:
            with self._state() as state:
                state.holds.pop(token, None)
                granted.undisturbed = (
                    granted.others_at_start == 0 and state.admitted == granted.admitted_at
                )

    def _admit(self, state: _State, token: str, amount: int, alone: bool) -> Hold | None:
        tokens = [entry[0] for entry in state.queue]
        if token not in tokens:
            return None
        ahead = state.queue[: tokens.index(token)]
        exceeds = amount > state.capacity
        if ahead and (alone or exceeds):
            return None  # nothing passes by running alone
        now = time.time()
        overdue = [entry for entry in ahead if now - entry[1] >= self.patience_s]
        if overdue and not self._fills_unusable_room(state, amount, overdue):
            return None  # someone ahead has waited long enough: strict order now
        if any(h["alone"] for h in state.holds.values()):
            return None
        held = sum(h["amount"] for h in state.holds.values())
        if (alone or exceeds) and state.holds:
            return None
        if not (alone or exceeds) and held + amount > state.capacity:
            return None
        state.queue = [entry for entry in state.queue if entry[0] != token]
        state.admitted += 1
        hold = Hold(
            amount,
            alone=alone or exceeds,
            others_at_start=len(state.holds),
            admitted_at=state.admitted,
        )
        state.holds[token] = {"pid": os.getpid(), "amount": amount, "alone": hold.alone}
        return hold

    @staticmethod
    def _fills_unusable_room(state: _State, amount: int, overdue: list[list]) -> bool:
        """A small item may pass items that waited long enough while the large holds alone keep
        them waiting (the module docstring): it uses room they could not have used."""
        small = state.capacity * SMALL_SHARE
        if amount > small:
            return False
        large = [h["amount"] for h in state.holds.values() if h["amount"] > small]
        if any(whole for _, _, _, whole in overdue):  # waits for an idle ledger
            return bool(large)
        needed = sum(wanted for _, _, wanted, _ in overdue)
        return sum(large) + needed > state.capacity

    def snapshot(self) -> _State:
        with self._state() as state:
            return state

    @contextmanager
    def _state(self) -> Iterator[_State]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self._lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state = self._read()
                _drop_dead(state)
                yield state
                self._write(state)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self) -> _State:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return _State(self.capacity)
        return _State(
            capacity=float(data.get("capacity", self.capacity)),
            holds=dict(data.get("holds") or {}),
            queue=list(data.get("queue") or []),
            admitted=int(data.get("admitted") or 0),
        )

    def _write(self, state: _State) -> None:
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        capacity = state.capacity if math.isfinite(state.capacity) else 1e300
        tmp.write_text(
            json.dumps(
                {
                    "capacity": capacity,
                    "holds": state.holds,
                    "queue": state.queue,
                    "admitted": state.admitted,
                }
            )
        )
        os.replace(tmp, self.path)


def _drop_dead(state: _State) -> None:
    for token, hold in list(state.holds.items()):
        if not _alive(int(hold["pid"])):
            del state.holds[token]
    state.queue = [e for e in state.queue if _alive(int(str(e[0]).split("-", 1)[0]))]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Grant:
    """An item's holds on the machine, the host's memory and its GPU's, as its record reports
    them."""

    machine: Hold
    device: Hold | None
    host: Hold | None = None

    @property
    def waited_s(self) -> float:
        return sum(self.waits_s().values())

    def waits_s(self) -> dict[str, float]:
        """Seconds waited for each ledger: "machine" (an item running alone), "host", "gpu"."""
        holds = {"machine": self.machine, "host": self.host, "gpu": self.device}
        return {name: hold.waited_s for name, hold in holds.items() if hold is not None}

    @property
    def ran_alone(self) -> bool:
        """No other item of this run ran at any moment of this one."""
        return self.machine.undisturbed


class RunBudget:
    """The ledgers one pytest process uses: the machine's, the host memory's and its GPU's (None:
    not budgeted, as on a CPU unless `--gpu-memory-budget` simulates a GPU)."""

    def __init__(
        self,
        directory: Path,
        *,
        device_key: str | None,
        shared_bytes: int | None,
        host_bytes: int | None = None,
    ):
        self.directory = Path(directory)
        self.machine = Ledger(self.directory / "machine.json", math.inf)
        self.device: Ledger | None = None
        self.host: Ledger | None = None
        self.shared_bytes = shared_bytes
        if device_key is not None and shared_bytes is not None:
            key = re.sub(r"[^A-Za-z0-9_.-]", "_", device_key)
            self.device = Ledger(self.directory / f"device-{key}.json", shared_bytes)
        if host_bytes is not None:
            self.host = Ledger(self.directory / "host.json", host_bytes)

    @contextmanager
    def hold(self, estimate: int, *, host: int = 0, alone: bool = False) -> Iterator[Grant]:
        """Hold the machine, `host` bytes of the host's memory, `estimate` bytes of the GPU's."""
        with contextlib.ExitStack() as stack:
            machine = stack.enter_context(self.machine.hold(1, alone=alone))
            on_host = (
                None
                if self.host is None
                else stack.enter_context(self.host.hold(host, alone=alone))
            )
            device = (
                None
                if self.device is None
                else stack.enter_context(self.device.hold(estimate, alone=alone))
            )
            yield Grant(machine, device, on_host)
