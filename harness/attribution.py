"""Who a record's result belongs to, in words reports count: who computed the GEMM during the
backend's call (`computed_by`), and whether a failure is inherited from PyTorch (`inherited`).

A record's `computed_by` (gemmconf.checks.computed_by observes it):
- "backend": no aten GEMM kernel of PyTorch's own computed the product during the backend's
  call: its own code did (generated kernels, a kernel library's overrides of aten ops; aten GEMMs
  of another kind than the program's, an integer GEMM on operands the backend quantized, are
  steps of its own);
- "pytorch": aten's own GEMM kernels of the program's kinds computed every product eager
  computes (the backend handed the op to aten: a graph given back to dynamo, inductor's extern
  ATEN choice, an override that falls back to aten); its metric `eager_bits` is false where
  the result was not eager's bit for bit: the backend's code changed the operands aten's GEMM
  was given (quantized, cast, laid out anew) or its result (`changed_by_backend`);
- "mixed": aten's own kernels computed some of them, the backend the rest;
- "none": the call raised before any GEMM kernel ran (aten's, or one registered over an aten
  GEMM op): dynamo's tracing, the backend's compile or its own checks raised, and nothing
  computed the product (a crash; never a pass);
absent where the call was not observed (an error scenario, a run before the field existed, a
run under another profiler).

A failed (or xfailed) record's `inherited`:
- "eager": eager is expected to fail the item on this hardware the same way (its entry in
  suites/expectations/eager.yaml expects this failure's kind and reason) and PyTorch computed
  it for the backend: the backend left the op to aten and inherits aten's gap;
- "torch.compile": torch.compile failed before the backend got the graph (dynamo captured no
  graph, or raised while tracing the program: a meta function, dynamo itself; not in a process
  whose devices the backend changed, gemmconf.pristine.device_changed), or the backend
  went through dynamo and failed the item as torch.compile does with a backend that does
  nothing of its own (the torch.compile layer, suites/expectations/torch_compile.yaml: same
  kind, a reason its pattern matches, on that hardware);
absent for the backend's own failures.

Inherited failures are counted apart from the backend's own in the terminal summary and on the
page (--count-inherited counts them in); pytest's outcome of the item stays failed. This module
imports only gemmconf.record, so reports (which may not import torch) can read it.
"""

from __future__ import annotations

from collections.abc import Iterable

from gemmconf.record import Record

BACKEND = "backend"
PYTORCH = "pytorch"
MIXED = "mixed"
NONE = "none"  # the call raised before any GEMM kernel ran
COMPUTED_BY = (BACKEND, PYTORCH, MIXED, NONE)

EAGER = "eager"
TORCH_COMPILE = "torch.compile"
INHERITED = (EAGER, TORCH_COMPILE)

# how a summary line says each
COMPUTED_TEXT = {
    BACKEND: "by the backend",
    PYTORCH: "by PyTorch",
    MIXED: "partly by PyTorch",
    NONE: "by no GEMM kernel",
}
# how `explain` says a pass PyTorch computed whose result was not eager's bits (changed_by_backend)
NOT_EAGER_BITS = (
    ", not on the program's values as they were: the result is not eager's bit for bit (the"
    " backend's code changed what aten's GEMM was given or returned)"
)
INHERITED_TEXT = {
    EAGER: "eager fails them too and PyTorch computed them",
    TORCH_COMPILE: "torch.compile failed before the backend got the graph",
}


def inherited(*, before_backend: bool, eager_fails: bool, computed_by: str | None) -> str | None:
    """Whose failure a failed item is, where not the backend's: torch.compile's when it failed
    before the backend got the graph (or as the torch.compile layer says it fails with a
    pass-through backend); eager's when eager is expected to fail the item here the same way
    (`eager_fails`: its entry expects this kind and reason) and PyTorch computed it for the
    backend (a "mixed" call is the backend's own: part of it ran its kernels)."""
    if before_backend:
        return TORCH_COMPILE
    if eager_fails and computed_by == PYTORCH:
        return EAGER
    return None


def is_inherited(record: Record) -> bool:
    """A failed or xfailed record inherited from eager or torch.compile."""
    return record.inherited in INHERITED


def passes_by_computer(records: Iterable[Record]) -> dict[str, int]:
    """Passed records by who computed them (COMPUTED_BY order, then "unobserved" for records
    without the field); only the keys that occur."""
    found: dict[str, int] = {}
    for record in records:
        if record.outcome == "passed":
            who = record.computed_by
            key = who if who in COMPUTED_BY else "unobserved"
            found[key] = found.get(key, 0) + 1
    order = (*COMPUTED_BY, "unobserved")
    return {k: found[k] for k in order if k in found}


def inherited_failures(records: Iterable[Record]) -> dict[str, int]:
    """Failed records inherited, by whom from (INHERITED order); only the keys that occur."""
    found: dict[str, int] = {}
    for record in records:
        if record.outcome == "failed" and record.inherited in INHERITED:
            found[record.inherited] = found.get(record.inherited, 0) + 1
    return {k: found[k] for k in INHERITED if k in found}


def by_backend(records: Iterable[Record]) -> dict[str, dict[str, dict[str, int]]]:
    """results.json's `attribution`: per backend label, its passes by who computed them and its
    failures inherited by whom from (each left out where empty)."""
    grouped: dict[str, list[Record]] = {}
    for record in records:
        grouped.setdefault(record.backend, []).append(record)
    found = {}
    for backend, own in sorted(grouped.items()):
        entry = {"passed": passes_by_computer(own), "inherited": inherited_failures(own)}
        entry = {k: v for k, v in entry.items() if v}
        if entry:
            found[backend] = entry
    return found


def computed_text(who: str | None) -> str:
    """How a summary says who computed a pass ("by PyTorch"); "not observed" for a record
    without the field (no profiler reading)."""
    return COMPUTED_TEXT.get(who or "", "not observed")


def not_eager_bits(computed_by: str | None, eager_bits: object) -> bool:
    """PyTorch's kernels computed a result that was not eager's bit for bit (the metric
    `eager_bits`): the backend's code changed what aten's GEMM was given or what it returned."""
    return computed_by == PYTORCH and eager_bits is False


def changed_by_backend(record: Record) -> bool:
    """A record that is `not_eager_bits`."""
    eager_bits = None if record.metrics is None else record.metrics.eager_bits
    return not_eager_bits(record.computed_by, eager_bits)


def through_aten(record: Record) -> bool:
    """A record the backend computed with aten's GEMM kernels of another kind than eager's
    (`metrics.aten_gemm_kernels`: an integer or weight-only GEMM on operands it quantized)."""
    if record.computed_by != BACKEND or record.metrics is None:
        return False
    return bool(record.metrics.aten_gemm_kernels)


# what a summary adds to a computer's count of passes: how many of them were so
_PASS_NOTES = (
    (BACKEND, through_aten, "with aten's GEMM kernels of another kind"),
    (PYTORCH, changed_by_backend, "not eager's bits"),
)


def failures_text(records: Iterable[Record]) -> str | None:
    """What computed a group of failures, where aten's kernels had a hand in any of them:
    "computed by the backend 1,406 (through aten::_int_mm in 1,398)", "computed by the backend
    3, by PyTorch 12" (the backend's through aten's GEMM kernels of another kind than eager's,
    `through_aten`). None where every observed member is the backend's without aten's GEMMs,
    or none was observed: the failures are then its own code's, as a group of an aten override
    or a compiler is. A bitsandbytes
    trial (2026-12-02): 56 failures that aten's CPU `_int_mm` computed wrong (a [1, N]
    operand) sat in a group of 1,406 whose reason could not say where the numbers came from."""
    counts: dict[str, int] = {}
    through: dict[str, int] = {}
    for record in records:
        who = record.computed_by
        if who not in COMPUTED_BY:
            continue
        counts[who] = counts.get(who, 0) + 1
        if through_aten(record):
            for op in record.metrics.aten_gemm_kernels:  # type: ignore[union-attr]
                through[op] = through.get(op, 0) + 1
    if not (counts.get(PYTORCH) or counts.get(MIXED) or through):
        return None
    parts = []
    for who in (w for w in COMPUTED_BY if w in counts):
        part = f"{computed_text(who)} {counts[who]:,}"
        if who == BACKEND and through:  # its calls that ran aten's GEMMs of another kind
            part += f" (through {', '.join(f'{op} in {n:,}' for op, n in sorted(through.items()))})"
        parts.append(part)
    return "computed " + ", ".join(parts)


def passes_text(records: Iterable[Record]) -> str:
    """ "2,261 passed (7 computed by the backend, 2,254 by PyTorch (271 not eager's bits))": the
    parenthesis names every computer that occurs, and how many of a computer's passes were
    made with the other's help: the backend's with aten's GEMMs of another kind than eager's
    (`through_aten`), PyTorch's with the backend's code around aten's GEMM
    (`changed_by_backend`): the same quantization library's passes read one or the other by
    which aten GEMM it calls (a bitsandbytes trial, 2026-12-02: `_int_mm` or a float mm)."""
    passed = [r for r in records if r.outcome == "passed"]
    counts = passes_by_computer(passed)
    total = sum(counts.values())
    parts = []
    noted = {who: (sum(map(test, passed)), words) for who, test, words in _PASS_NOTES}
    for key, n in counts.items():
        many, words = noted.get(key, (0, ""))
        note = f" ({many:,} {words})" if many else ""
        parts.append(f"{n:,} {computed_text(key)}{note}")
    if parts:
        parts[0] = parts[0].replace(" by ", " computed by ", 1)
    return f"{total:,} passed" + (f" ({', '.join(parts)})" if parts else "")
