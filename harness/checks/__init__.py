"""The checks an item runs after the backend's first calls, as data: `CHECKS` is the ordered
list the runner loops over, `CALL_GUARDS` what watches every call of the backend. Adding a
check is one file here (a class with `name`, `applies(item)` and `run(item) -> Findings`) and
one entry in `CHECKS` at the place its order needs (docs/adding-a-check.md)."""

from __future__ import annotations

from gemmconf.checks.aliasing import OutputsOwnMemory
from gemmconf.checks.base import NOTHING, Check, Findings
from gemmconf.checks.batch_invariance import BatchInvariant
from gemmconf.checks.code import CodeChecks, applicable_checks
from gemmconf.checks.compilation import Captured, KernelStats, Recompiles, compile_budget
from gemmconf.checks.compiled_autograd import CompiledAutogradCounts
from gemmconf.checks.computed_by import ComputedBy, EagerComparison
from gemmconf.checks.computed_by import settle as settle_computed_by
from gemmconf.checks.determinism import Deterministic
from gemmconf.checks.fresh_draw import FreshDraw, FreshDrawBitwise
from gemmconf.checks.guards import InputsUntouched, OutputsWritten, TargetsWritten
from gemmconf.checks.narrow_inputs import NarrowInputs
from gemmconf.checks.notes import EMULATED_NOTE, EmulatedEager, KTail
from gemmconf.checks.overwritten import ResultsKept
from gemmconf.checks.side_stream import SideStream
from gemmconf.checks.values import Values

# ComputedBy last: its profiler records the call alone, not the other guards' work around it
CALL_GUARDS = (
    InputsUntouched(),
    OutputsWritten(),
    TargetsWritten(),
    OutputsOwnMemory(),
    ResultsKept(),
    ComputedBy(),
)

# In order: a check may read what the checks before it found (the fresh-draw checks skip
# unwritten outputs; the notes read the numeric failure). FreshDrawBitwise releases eager's
# first draw (its inputs and result), so it comes last: every check reads that draw before.
CHECKS: tuple[Check, ...] = (
    Captured(),
    KernelStats(),
    Values(),
    FreshDraw(),
    SideStream(),
    Deterministic(),
    BatchInvariant(),
    EagerComparison(),
    Recompiles(),
    CompiledAutogradCounts(),  # after every check that calls the backend: counts all calls
    CodeChecks(),
    EmulatedEager(),
    KTail(),
    NarrowInputs(),
    FreshDrawBitwise(),
)

__all__ = [
    "CALL_GUARDS",
    "CHECKS",
    "EMULATED_NOTE",
    "NOTHING",
    "Check",
    "Findings",
    "applicable_checks",
    "compile_budget",
    "settle_computed_by",
]
