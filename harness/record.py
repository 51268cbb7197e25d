"""A results record, typed: the one (de)serializer between results.json's records and the code
that writes or reads them (the recorder, reports, hooks' implementations, merge and diff).

`Record.from_json(value)` checks a record as a stranger's file may hold it and names the field
that is wrong; `Record.to_json()` gives back exactly the JSON it was read from (results.json is a
public contract): fields without a value are left out, as the writer always left them out, and
what a file said is kept as it said it: a field given as null or false (files of earlier versions
wrote `"skip_class": null`), and fields this version does not know (`extra`: a newer gemmconf's,
or a user's own). `Metrics` is the same for a record's metrics: the known ones typed, the rest
kept as they are.

Only `id`, `backend` and `outcome` are required, as they always were for a file to load; a record
that `build_record` writes has every scenario field. This module imports nothing of gemmconf, so
that reports (which may not import torch) and gemmconf.attribution can read it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Generic, TypeVar

OUTCOMES = ("passed", "failed", "xfailed", "xpassed", "skipped", "error")

T = TypeVar("T")


class RecordError(ValueError):
    """A record that is not what gemmconf writes; the message names the field (the reader of a
    file puts the file's name and the record's place in front of it)."""


# How a value is checked, and how an error says what was expected: (types, words)
_TEXT = ((str,), "text")
_INTEGER = ((int,), "an integer")
_NUMBER = ((int, float), "a number")
_FLAG = ((bool,), "true or false")
_OBJECT = ((dict,), "an object")
_LIST = ((list,), "a list")


def _checked(where: str, value: Any, rule: tuple[tuple[type, ...], str]) -> Any:
    """`value` when it is of `rule`'s types or null (a bool is no number), else a RecordError."""
    types, words = rule
    if value is None or (
        isinstance(value, types) and (bool in types or not isinstance(value, bool))
    ):
        return value
    raise RecordError(f"has {where} {value!r:.80}: expected {words} or null")


class _Metric(Generic[T]):
    """A metric this version knows: read typed from a record's metrics, None where absent."""

    def __init__(self, rule: tuple[tuple[type, ...], str]) -> None:
        self.rule = rule
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        KNOWN_METRICS[name] = self

    def __get__(self, metrics: Metrics | None, owner: type | None = None) -> Any:
        if metrics is None:
            return self
        return metrics.values.get(self.name)


KNOWN_METRICS: dict[str, _Metric[Any]] = {}


@dataclass(frozen=True)
class Metrics:
    """A record's metrics: the known ones as typed attributes (None where the record has none),
    every one, known or not, in `values` as the record holds it."""

    values: dict[str, Any] = field(default_factory=dict)

    # the judgment (gemmconf.oracle): errors, their ratio to eager's and the bar it was held to
    err_ratio = _Metric[float](_NUMBER)
    max_ratio = _Metric[float](_NUMBER)
    max_abs_err = _Metric[float](_NUMBER)
    max_rel_err = _Metric[float](_NUMBER)
    recompiles = _Metric[int](_INTEGER)
    draws = _Metric[int](_INTEGER)
    draws_failed = _Metric[int](_INTEGER)
    borderline = _Metric[int](_INTEGER)  # shape sets left undecided at the bar (gemmconf.drawing)
    rounds = _Metric[int](_INTEGER)  # judgments of the shape set decided near its bar
    eager_wrong = _Metric[int](_NUMBER)
    # the benchmark (gemmconf.bench)
    tflops = _Metric[float](_NUMBER)
    time_ms = _Metric[float](_NUMBER)
    time_spread_ms = _Metric[float](_NUMBER)
    host_ms = _Metric[float](_NUMBER)
    cublas_tflops = _Metric[float](_NUMBER)
    vs_cublas = _Metric[float](_NUMBER)
    vs_cublas_spread = _Metric[float](_NUMBER)
    bench_reps = _Metric[float](_NUMBER)
    gpu_sm_clock_mhz = _Metric[float](_NUMBER)
    # the reference backend's kernels (kernel_stats)
    kernel_signatures = _Metric[list[Any]](_LIST)
    kernel_compiles = _Metric[int](_NUMBER)
    kernel_compile_s = _Metric[float](_NUMBER)
    kernel_builds = _Metric[int](_NUMBER)  # of kernel_compiles: compiled by this process
    kernel_cache_loads = _Metric[int](_NUMBER)  # of kernel_compiles: from Triton's disk cache
    kernel_compile_wait_s = _Metric[float](_NUMBER)  # of kernel_compile_s: another's compile
    kernel_built = _Metric[list[Any]](_LIST)  # Triton's hashes of the kernels kernel_builds made
    kernel_loaded = _Metric[list[Any]](_LIST)  # and of those kernel_cache_loads read
    kernel_build_stages_s = _Metric[dict[str, Any]](_OBJECT)  # kernel_builds' s by Triton stage
    # who computed (gemmconf.checks.computed_by): a result aten's kernels computed, eager's bits
    eager_bits = _Metric[bool](_FLAG)
    aten_gemm_kernels = _Metric[dict[str, Any]](_OBJECT)  # aten's GEMM kernels seen, by op
    # isolation: reruns of failures, timeouts, GPU memory
    flaky = _Metric[bool](_FLAG)
    confirm_runs = _Metric[int](_INTEGER)
    confirm_failed = _Metric[int](_INTEGER)
    timeout_unconfirmed = _Metric[dict[str, Any]](_OBJECT)
    leaked_bytes = _Metric[int](_NUMBER)
    memory_peak_allocated_bytes = _Metric[int](_NUMBER)
    memory_estimate_bytes = _Metric[int](_NUMBER)
    memory_alone = _Metric[bool](_FLAG)
    memory_wait_s = _Metric[float](_NUMBER)
    memory_waits_s = _Metric[dict[str, Any]](_OBJECT)  # of it, by ledger: machine, host, gpu
    memory_admitted_bytes = _Metric[int](_NUMBER)  # what the GPU's ledger held for the item
    memory_admitted_by = _Metric[str](_TEXT)  # "measured" (an earlier run's peak) or "estimate"
    memory_measured_retry = _Metric[dict[str, Any]](_OBJECT)  # ran out by a measured figure
    # the host's memory: what the item added to its process's resident set at its peak (every
    # device), and on GPU machines what the host's ledger held for it, by what
    host_memory_peak_bytes = _Metric[int](_NUMBER)
    host_memory_admitted_bytes = _Metric[int](_NUMBER)
    host_memory_admitted_by = _Metric[str](_TEXT)

    @classmethod
    def from_json(cls, value: Any) -> Metrics:
        """A record's `metrics` object, its known metrics checked (RecordError names one)."""
        _checked("metrics", value, _OBJECT)
        for name, number in value.items():
            metric = KNOWN_METRICS.get(name)
            if metric is not None and type(number) not in metric.rule[0]:  # the common case fast
                _checked(f"metrics.{name}", number, metric.rule)
        return cls(dict(value))

    def to_json(self) -> dict[str, Any]:
        return dict(self.values)

    def get(self, name: str, default: Any = None) -> Any:
        """A metric by name, known or not (`default` where the record has none)."""
        return self.values.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self.values


@dataclass(frozen=True, kw_only=True)
class Record:
    """One results.json record (fields in the order the writer has always written them)."""

    id: str
    suite: str | None = None
    backend: str
    scenario: str | None = None
    op: str | None = None
    dtype: str | None = None
    shape: str | None = None
    dims: dict[str, int] | None = None
    axes: dict[str, Any] | None = None
    markers: list[str] | None = None
    source: str | None = None
    # the scenario's `inductor_config`, where it has one: the inductor backends ran under it
    inductor_config: dict[str, Any] | None = None
    # the scenario's `dynamo_config`, where it has one: torch.compile-based backends ran under it
    dynamo_config: dict[str, Any] | None = None
    nodeid: str | None = None
    outcome: str  # one of OUTCOMES
    duration_s: float | None = None
    environment: dict[str, Any] | None = None
    phase_s: dict[str, float] | None = None
    kind: str | None = None
    reason: str | None = None
    details: str | None = None
    metrics: Metrics | None = None
    code_excerpt: str | None = None
    skip_class: str | None = None
    suite_error: bool = False
    xpass: str | None = None  # on xpassed records: "strict" (a failure) or "non-strict" (not)
    # failed and xfailed records of an item eager is expected to fail too on this hardware
    # (suites/expectations/eager.yaml): a backend that leaves the op to aten inherits it
    eager_fails: bool = False
    # who computed the GEMM during the backend's call, and whose failure a failure is where not
    # the backend's own (gemmconf.attribution)
    computed_by: str | None = None
    inherited: str | None = None
    # a merge of runs that disagree on them stamps each record with its run's (report merge)
    seed: int | None = None
    target_arch: str | None = None
    # what the JSON said beyond the fields above: fields this version does not know, and the
    # fields it gave as null or false (written back as they were)
    extra: dict[str, Any] = field(default_factory=dict)
    explicit: frozenset[str] = frozenset()

    @classmethod
    def from_json(cls, value: Any) -> Record:
        """A record as results.json holds it, checked: a RecordError says which field is wrong
        (its message follows "record N", e.g. "has no id, backend")."""
        if not isinstance(value, dict):
            raise RecordError("is not an object")
        missing = [k for k in ("id", "backend", "outcome") if not isinstance(value.get(k), str)]
        if missing:
            raise RecordError(f"has no {', '.join(missing)}")
        if value["outcome"] not in OUTCOMES:
            raise RecordError(
                f"({value['id']} on {value['backend']}) has outcome {value['outcome']!r}; "
                f"expected one of {', '.join(OUTCOMES)}"
            )
        try:
            given = {name: _field_value(name, value[name]) for name in _FIELDS if name in value}
        except RecordError as exc:
            raise RecordError(f"({value['id']!r} on {value['backend']!r}) {exc}") from None
        return cls(
            **{k: v for k, v in given.items() if v is not None},
            extra={k: v for k, v in value.items() if k not in _FIELDS},
            explicit=frozenset(k for k, v in given.items() if v is None or v is False),
        )

    def to_json(self) -> dict[str, Any]:
        """The record as results.json holds it: the inverse of `from_json`."""
        found: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if (value is not None and value is not False) or name in self.explicit:
                found[name] = value.to_json() if isinstance(value, Metrics) else value
        found.update(self.extra)
        return found

    def stamped(self, name: str, value: Any) -> Record:
        """The record with `name` set to `value` where the JSON has no such field (dict's
        setdefault: a field given, even as null, stays)."""
        if getattr(self, name) not in (None, False) or name in self.explicit:
            return self
        explicit = self.explicit | {name} if value is None or value is False else self.explicit
        return replace(self, **{name: value, "explicit": explicit})

    @property
    def metric(self) -> Metrics:
        """The metrics, empty where the record has none."""
        return self.metrics if self.metrics is not None else _NO_METRICS

    @property
    def device(self) -> str:
        """The device name the record's own environment gives ("" where none)."""
        return device_name(self.environment or {})

    @property
    def printed_error(self) -> str | None:
        """The first error diagnostic the worker printed during a failed item (on stderr, else
        on stdout), as its details keep it (`printed_note`); None where they keep none."""
        return printed_error(self.details)

    @property
    def printed_stream(self) -> str | None:
        """The stream `printed_error` was printed on ("stderr", "stdout"); None: none."""
        found = printed_diagnostic(self.details)
        return None if found is None else found[0]


# What an isolated worker printed on stderr during a failed item, kept in the record's details
# (of a long text its first and last lines): a compiler that raises "JIT compilation failed.
# See diagnostics." prints the diagnostic there, and pytest's captured output is not in
# results.json (an IREE trial, 2026-11-30: 327 such failures of four causes read as one).
PRINTED_NOTE = "What the worker printed on stderr during this item"
# and on stdout, where it printed there: MLIR's runtime checks print their error on stdout, then
# abort (a torch-mlir trial, 2026-12-01: 146 crashes whose records said nothing of their cause)
PRINTED_STDOUT_NOTE = "What the worker printed on stdout during this item"
_PRINTED_NOTES = (PRINTED_NOTE, PRINTED_STDOUT_NOTE)
PRINTED_HEAD, PRINTED_TAIL = 8, 24  # lines kept of a longer text: its first and its last
PRINTED_CHARS = 6000  # of them, at most
_DIAGNOSTIC = re.compile(r"(?:^|[\s:])(?:fatal )?error:\s*\S", re.IGNORECASE)
FAULTHANDLER_LINE = "Fatal Python error"  # what faulthandler prints first on a fatal signal


def printed_note(printed: str, stream: str = "stderr") -> str | None:
    """The details paragraph for what a worker printed on `stream` (stderr, stdout) during a
    failed item: all of it, or of a longer text its first and last lines (a compiler's first
    error, faulthandler's signal line, and the end), `PRINTED_CHARS` at most; None where it
    printed nothing."""
    lines = [line.rstrip() for line in printed.splitlines() if line.strip()]
    if not lines:
        return None
    shown = "all of it"
    if len(lines) > PRINTED_HEAD + PRINTED_TAIL:
        left_out = len(lines) - PRINTED_HEAD - PRINTED_TAIL
        lines = [*lines[:PRINTED_HEAD], f"[{left_out} lines left out]", *lines[-PRINTED_TAIL:]]
        shown = f"its first {PRINTED_HEAD} and last {PRINTED_TAIL} lines"
    kept = "\n".join(lines)
    if len(kept) > PRINTED_CHARS:
        half = PRINTED_CHARS // 2
        kept = f"{kept[:half]}\n[...]\n{kept[-half:]}"
    head = PRINTED_STDOUT_NOTE if stream == "stdout" else PRINTED_NOTE
    return f"{head} ({shown}; pytest's captured {stream} has everything):\n{kept}"


def printed_error(details: str | None) -> str | None:
    """The first line of a details' `printed_note` that reads as a compiler's error
    diagnostic (`error: ...`, `<location>: error: ...`), stderr's before stdout's; None where
    there is none."""
    found = printed_diagnostic(details)
    return None if found is None else found[1]


def printed_diagnostic(details: str | None) -> tuple[str, str] | None:
    """(stream, line) of `printed_error`: which stream the worker printed it on."""
    if not details:
        return None
    for note, stream in zip(_PRINTED_NOTES, ("stderr", "stdout"), strict=True):
        if note not in details:
            continue
        text = details.split(note, 1)[1]
        for other in _PRINTED_NOTES:  # this note's lines only
            text = text.split(other, 1)[0]
        for line in text.splitlines()[1:]:
            if _DIAGNOSTIC.search(line) and FAULTHANDLER_LINE not in line:
                # (faulthandler's line names the signal, no cause; two threads' stacks printed
                # at once interleave it with a frame's line: an optimum-quanto trial,
                # 2026-12-02, read one SIGSEGV as a group titled by such a line)
                return stream, " ".join(line.split())
    return None


def device_name(environment: Mapping[str, Any]) -> str:
    """The device name an environment gives: its `device_name` (a GPU's), else its `device`
    ("cpu"); "" where it gives neither."""
    return str(environment.get("device_name") or environment.get("device") or "")


_NO_METRICS = Metrics()
_LATER = ("extra", "explicit")  # what the JSON said beyond the fields: not fields of it
_FIELDS = tuple(f.name for f in fields(Record) if f.name not in _LATER)
_RULES: dict[str, tuple[tuple[type, ...], str]] = {
    **dict.fromkeys(_FIELDS, _TEXT),
    "dims": _OBJECT,
    "axes": _OBJECT,
    "inductor_config": _OBJECT,
    "dynamo_config": _OBJECT,
    "markers": _LIST,
    "duration_s": _NUMBER,
    "environment": _OBJECT,
    "phase_s": _OBJECT,
    "suite_error": _FLAG,
    "eager_fails": _FLAG,
    "seed": _INTEGER,
}


def _field_value(name: str, value: Any) -> Any:
    """A field's value from the JSON, checked against its rule (metrics as `Metrics`)."""
    if name == "metrics":
        return None if value is None else Metrics.from_json(value)
    rule = _RULES[name]
    if type(value) not in rule[0]:  # the common case fast: JSON gives exact types
        _checked(name, value, rule)
    if name == "markers" and value is not None:
        for marker in value:
            if type(marker) is not str:
                _checked("a marker", marker, _TEXT)
    elif name in ("dims", "phase_s") and value is not None:
        for key, number in value.items():
            if type(number) not in _NUMBER[0]:
                _checked(f"{name}.{key}", number, _NUMBER)
    return value


def typed(records: Iterable[Record | Mapping[str, Any]]) -> list[Record]:
    """Records as `Record`s: those given as JSON objects read with `Record.from_json` (a
    RecordError names the record's place), those already typed as they are."""
    found = []
    for index, record in enumerate(records):
        if isinstance(record, Record):
            found.append(record)
            continue
        try:
            found.append(Record.from_json(record))
        except RecordError as exc:
            raise RecordError(f"record {index} {exc}") from None
    return found
