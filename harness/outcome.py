"""What one item's run found, as data (`ItemOutcome`), and the one renderer that turns it into text.

`runner.run_item` returns an `ItemOutcome`: the numeric verdicts, the code-check results, the
compile count, the exception the backend raised, and one *problem* object per failed check. Each
problem knows its failure kind (`gemmconf.kinds`); nothing downstream reads text to learn what
happened: a CUDA fault is a flag set from the exception's class, an out-of-memory error likewise,
and the pytest outcome (xfail, xpass) is decided from `ItemOutcome.passed`.

`render` is the only place that writes words: the record's one-line `reason` (it stands alone),
the `details` (every problem, tracebacks included) and the text pytest shows (the details and how
to reproduce the item).
"""

from __future__ import annotations

import dataclasses
import signal
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

from gemmconf import kinds
from gemmconf.codecheck import CodeCheckResult
from gemmconf.integrity import Difference
from gemmconf.oracle import Verdict
from gemmconf.progress import PHASES

# What a phase covers, for a timeout's reason ("start": before the worker reported any).
PHASE_TEXT = {"start": "before the item reported a phase", **PHASES}

__all__ = [
    "BatchVariant",
    "CodeCheckFailed",
    "Crash",
    "HarnessFault",
    "InputsModified",
    "ItemOutcome",
    "Message",
    "Nondeterministic",
    "NotCompiled",
    "NumericFailure",
    "Raised",
    "Recompiled",
    "ScenarioContradiction",
    "StaleResult",
    "TimedOut",
    "Unsupported",
    "Unwritten",
    "WrongError",
    "describe",
    "exit_text",
    "render",
    "unwrap",
]

# Wrappers torch.compile puts around the error that was raised inside it: dynamo's
# BackendCompilerFailed (inner_exception), TorchRuntimeError (the fake-tensor call's error, two
# links down its __context__ chain), InternalTorchDynamoError, inductor's InductorError and
# LoweringException. The error a backend "raised" is what they wrap.
_WRAPPER_MODULES = ("torch._dynamo", "torch._inductor")
TRACEBACK_FRAMES = 6  # of a backend's exception in the details (a harness fault keeps them all)


# torch._dynamo's wrappers of an error raised while it traced, before any backend ran:
# TorchRuntimeError (a node run on fake tensors failed), InternalTorchDynamoError (dynamo's own)
TRACING_WRAPPERS = ("TorchRuntimeError", "InternalTorchDynamoError")
# dynamo's wrapper of an error the backend's compiler raised, handed the graph (the first call)
COMPILER_WRAPPERS = ("BackendCompilerFailed",)


HEADLINE_CHARS = 300  # of an error's message, in a failure's first line


def headline(message: str) -> str:
    """An error message's first line, as a failure's first line quotes it; where that line
    ends with ":" and its cause follows on the next line (TVM: "Mismatched inp_1.strides on
    argument #0 when calling:"), that line too. At most HEADLINE_CHARS. (The repro's
    `raised_line` says the same words.)"""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    head = lines[0]
    if head.endswith(":") and len(lines) > 1:
        head = f"{head} {lines[1]}"
    return head[:HEADLINE_CHARS]


def unwrap(error: BaseException) -> tuple[BaseException, tuple[str, ...]]:
    """The error inside torch._dynamo / torch._inductor wrappers, and the wrappers' type names."""
    wrappers: list[str] = []
    seen: set[int] = set()
    while type(error).__module__.startswith(_WRAPPER_MODULES) and id(error) not in seen:
        seen.add(id(error))
        inner = getattr(error, "inner_exception", None) or error.__cause__ or error.__context__
        if not isinstance(inner, BaseException):
            break
        wrappers.append(type_name(type(error)))
        error = inner
    return error, tuple(wrappers)


def _root_cause(error: BaseException) -> str:
    """`Type: first line` of the innermost error of `error`'s explicit chain (`raise ... from`):
    torch's `tvm` backend (2.13) raises "Please install apache-tvm" from the ImportError that
    says what is missing, `cannot import name 'relay' from 'tvm'` where apache-tvm 0.27 is
    installed; "" where it was not raised from another error."""
    seen = {id(error)}
    inner = error.__cause__
    while inner is not None and inner.__cause__ is not None and id(inner) not in seen:
        seen.add(id(inner))
        inner = inner.__cause__
    if inner is None:
        return ""
    text = str(inner).strip().splitlines()
    return f"{type_name(type(inner))}: {text[0][:200] if text else '(no message)'}"


def type_name(cls: type) -> str:
    """`RuntimeError` for builtins, else the qualified name (`torch.AcceleratorError`)."""
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def _is_instance(error: BaseException, *names: str) -> bool:
    import torch

    classes = tuple(c for c in (getattr(torch, n, None) for n in names) if isinstance(c, type))
    return bool(classes) and isinstance(error, classes)


@dataclass(frozen=True)
class Raised:
    """An exception as data: its class, message, where it was raised and its traceback.

    `exception` is the live object, kept in the process that caught it (tests read it) and dropped
    by `portable()` before the outcome crosses a process boundary.
    """

    type_name: str
    message: str
    location: str  # "file:line in function" of the innermost frame; "" without a traceback
    traceback: str = ""
    wrappers: tuple[str, ...] = ()  # torch.compile wrappers it was taken out of, outermost first
    cuda_fault: bool = False  # torch.AcceleratorError: the process's CUDA context is lost
    out_of_memory: bool = False  # torch.OutOfMemoryError
    # `Type: first line` of the error it was raised from (`raise ... from error`, innermost
    # first), which a trimmed traceback loses; "" where it was not raised from another
    cause: str = ""
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, error: BaseException, *, frames: int | None = TRACEBACK_FRAMES) -> Raised:
        """`error`, taken out of torch.compile's wrappers."""
        inner, wrappers = unwrap(error)
        stack = traceback.extract_tb(inner.__traceback__)
        location = f"{stack[-1].filename}:{stack[-1].lineno} in {stack[-1].name}" if stack else ""
        lines = traceback.format_exception(type(inner), inner, inner.__traceback__)
        if frames is not None and len(lines) > frames:
            lines = lines[-frames:]
        return cls(
            type_name=type_name(type(inner)),
            message=str(inner).strip(),
            location=location,
            traceback="".join(lines),
            wrappers=wrappers,
            cuda_fault=_is_instance(inner, "AcceleratorError"),
            out_of_memory=_is_instance(inner, "OutOfMemoryError"),
            cause=_root_cause(inner),
            exception=inner,
        )

    @property
    def not_implemented(self) -> bool:
        return self.type_name == "NotImplementedError"

    @property
    def while_tracing(self) -> bool:
        """torch.compile raised it while dynamo traced the program (running a node on fake
        tensors: a meta function, a decomposition; or dynamo itself), before handing the
        backend the graph: a wrapper of `TRACING_WRAPPERS` around it."""
        return any(w.rsplit(".", 1)[-1] in TRACING_WRAPPERS for w in self.wrappers)

    @property
    def while_compiling(self) -> bool:
        """The backend's compiler raised it, given the graph dynamo captured (inside a call of
        the compiled function, but before anything of the backend's ran): a wrapper of
        `COMPILER_WRAPPERS` around it, and not raised while dynamo traced."""
        return not self.while_tracing and any(
            w.rsplit(".", 1)[-1] in COMPILER_WRAPPERS for w in self.wrappers
        )

    @property
    def first_line(self) -> str:
        return headline(self.message) or "(no message)"

    def short(self) -> str:
        """`Type: first line`, then what it was raised from; an empty message still says where
        it was raised."""
        cause = f" (raised from {self.cause})" if self.cause else ""
        if self.message:
            return f"{self.type_name}: {self.first_line}{cause}"
        return f"{self.type_name} (no message) at {self.location or 'an unknown place'}{cause}"

    def portable(self) -> Raised:
        return dataclasses.replace(self, exception=None)


@dataclass(frozen=True)
class NumericFailure:
    """The oracle's verdict on one shape set failed (over `draws` independent input draws)."""

    shape_set: int
    shape: str  # "M=64 N=64 K=64"
    inputs: str  # `Inputs.describe()` of the first draw
    verdict: Verdict
    draws: int = 1
    draws_failed: int = 1
    rounds: int = 1  # judgments over fresh draws (near the bar, further rounds decide)
    rounds_failed: int = 1
    ratios: tuple[float, ...] = ()  # each round's err_ratio (where it has one)

    @property
    def kind(self) -> str:
        return kinds.WRONG_LAYOUT if self.verdict.attributes_failed else kinds.WRONG_VALUES

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        what = f"shape set {self.shape_set} ({self.shape}): {self.inputs}"
        text = self.verdict.message(what=what)
        if self.draws > 1 or self.rounds > 1:
            text += (
                f"\nDraws: {self.draws_failed} of {self.draws} independent input draws "
                f"failed on their own; {self.rounds_failed} of {self.rounds} judgments "
                "over fresh draws failed"
            )
            if len(self.ratios) > 1:
                ratios = ", ".join(f"{r:.3g}" for r in self.ratios)
                text += (
                    f" (err_ratio {ratios}): near its bar, a failure is decided by a "
                    "sequential test over further judgments (gemmconf.drawing)."
                )
            else:
                text += "."
        return text


@dataclass(frozen=True)
class Unwritten:
    """Output elements still holding the pattern fresh memory was filled with before the call."""

    shape_set: int
    output: str  # "" for a single output, else "[1]"
    count: int
    numel: int
    first_index: tuple[int, ...]
    kind = kinds.WRONG_VALUES

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        where = f" of output {self.output}" if self.output else ""
        return (
            f"Unwritten output: {self.count} of {self.numel} elements{where} on shape set "
            f"{self.shape_set} still hold the pattern the harness filled fresh memory with "
            f"before the call (first at index {self.first_index}); the backend never wrote "
            "them, and what it returns there is whatever its allocator handed back."
        )


@dataclass(frozen=True)
class StaleResult:
    """A later call on fresh values of the same shapes returned an earlier call's answer."""

    shape: str
    same_as_earlier: bool  # bitwise the output of the earlier call
    verdict: Verdict | None  # the later call's, where it was judged (None: compared bitwise only)
    kind = kinds.WRONG_VALUES

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        head = (
            "Stale result: a second call on fresh values of the same shapes "
            f"({self.shape}) returned "
            + (
                "the first call's answer, bit for bit"
                if self.same_as_earlier
                else "a wrong answer where the first call's was right"
            )
        )
        head += "; the backend must not reuse results across calls."
        if self.verdict is None:
            return head
        return f"{head}\n" + self.verdict.message(what=f"the second call ({self.shape})")


@dataclass(frozen=True)
class StreamMismatch:
    """A call made on a non-default CUDA stream gave another answer."""

    verdict: Verdict
    kind = kinds.WRONG_VALUES

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        return "A call on a non-default CUDA stream gave a wrong answer: " + (
            self.verdict.message(what="the call on a side stream, read after that stream")
        )


@dataclass(frozen=True)
class InputsModified:
    """The backend's call changed the bytes of an input tensor's storage."""

    name: str
    shape: str
    count: int  # storage elements that changed
    numel: int
    first_index: tuple[int, ...]  # in the input's own indexing; () when outside the view
    before: float | None
    after: float | None
    kind = kinds.INPUTS_MODIFIED

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        where = (
            f"first at index {self.first_index}: {self.before!r} before, {self.after!r} after"
            if self.first_index
            else "outside the view the call was given (its storage's padding or offset)"
        )
        return (
            f"Inputs modified: the call wrote into input {self.name} ({self.shape}): "
            f"{self.count} of {self.numel} stored elements changed, {where}. A GEMM's "
            "inputs are the caller's data."
        )


@dataclass(frozen=True)
class Nondeterministic:
    """`deterministic: true`: two calls on the same inputs were not bitwise equal."""

    shape: str
    difference: Difference  # the second call's result against the first's
    kind = kinds.NONDETERMINISTIC

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        d = self.difference
        return (
            f"Nondeterministic: two calls on the same inputs ({self.shape}) differ at "
            f"{d.count} of {d.numel} elements (first at index {d.first_index}: "
            f"{d.first!r} then {d.second!r}); the scenario asks for bitwise-equal "
            "results (checks.deterministic)."
        )


@dataclass(frozen=True)
class BatchVariant:
    """`batch_invariant: true`: rows of a call with fewer rows differ from the full call's."""

    m_full: int
    m_part: int
    difference: Difference  # the call with M = m_part against the full call's first rows
    kind = kinds.BATCH_VARIANT

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        d, full, part = self.difference, self.m_full, self.m_part
        return (
            f"Not batch-invariant: the first {part} row(s) of a call with M={part} differ from "
            f"the same rows of the call with M={full} at {d.count} of {d.numel} elements "
            f"(first at index {d.first_index}: {d.first!r} with M={full}, {d.second!r} with "
            f"M={part}); the scenario asks for rows that do not depend on M "
            "(checks.batch_invariant)."
        )


@dataclass(frozen=True)
class Crash:
    """The backend raised where eager returns (`raised`), or the process running it died."""

    stage: str  # "compile", "call on shape set 0 (M=4 N=4 K=4)", "worker", ...
    raised: Raised | None = None
    returncode: int | None = None  # the worker's, when it died

    @property
    def kind(self) -> str:
        if self.raised is not None and self.raised.out_of_memory:
            return kinds.OUT_OF_MEMORY
        return kinds.CRASH

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        if self.raised is not None:
            cause = (
                " The GPU's CUDA context is lost: the worker is replaced." * self.raised.cuda_fault
            )
            return (
                f"{_who_raised(self.raised, self.stage)}: {self.raised.short()}{cause}\n"
                f"{_raised_text(self.raised)}"
            ).rstrip()
        if self.returncode is not None:
            summary, text = exit_text(self.returncode)
            return (
                f"{summary}: the worker process running this item {text}. The run goes on in a "
                "fresh worker. What the worker printed (for a fatal signal, faulthandler's Python "
                "stack, or what a crash handler the backend installed printed instead; a runtime "
                "check may print its error on stdout before it aborts) is in this item's "
                "captured stderr and stdout and in these details; --no-isolate runs the item "
                "in-process, for a debugger."
            )
        return f"crashed during {self.stage}"


@dataclass(frozen=True)
class NotACompiled:
    """`Backend.compile` returned something every item would fail to use: not callable, or
    without `compiles()` (gemmconf.backends.base.Compiled). A crash of the backend's compile."""

    backend: str  # the backend's name
    returned: str  # what it returned, e.g. "a function" or "an int"
    gaps: tuple[str, ...]  # the members it lacks ("__call__", "compiles()")
    kind = kinds.CRASH

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        return (
            f"Not a Compiled: {self.backend}'s compile() returned {self.returned}, which "
            f"lacks {' and '.join(self.gaps)}. The harness calls the result once per shape "
            "set and reads compiles() for the recompile checks (and artifacts() for the code "
            "checks): return an object with them (gemmconf.backends.base.Compiled), e.g. one "
            "that wraps what torch.compile returns; `gemmconf new-backend NAME` writes one."
        )


@dataclass(frozen=True)
class EagerAltered:
    """The backend changed PyTorch for the whole process (`gemmconf.pristine`): aten's GEMM
    kernels, the torch functions programs call, or the modes on. Eager and the fp64 reference
    would compute with the change and agree with the backend, so the item is not judged."""

    backend: str  # the name of the item's backend
    found: str  # when the harness looked ("before eager ran", ...)
    changes: tuple[str, ...]  # gemmconf.pristine.altered()'s lines
    culprit: str | None = None  # the backend blamed for it (None: not known, the item's own)

    @property
    def kind(self) -> str:
        """The culprit's own items fail as its crash; another backend's items in the same
        process cannot be judged either, and that is not their failure: an error."""
        if self.culprit in (None, self.backend):
            return kinds.CRASH
        return kinds.HARNESS_ERROR

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        changes = "\n".join(f"  - {line}" for line in self.changes)
        culprit = self.culprit or self.backend
        head = f"PyTorch altered: {culprit} changed what eager runs for the whole process"
        tail = ""
        if culprit != self.backend:
            head += f", in the process that runs {self.backend}'s items too"
            tail = (
                f"; run {self.backend} apart from {culprit} (--backend {self.backend}) to "
                "have its items judged"
            )
        return (
            f"{head} (found {self.found}):\n{changes}\n"
            "Eager and the fp64 reference would compute with it and agree with the backend's "
            f"answers, so this item is not judged, nor can any other of this process be{tail}. "
            "A kernel library that overrides aten ops must switch them on inside its Compiled's "
            'call and off before it returns (README, "A backend that overrides aten ops").'
        )


@dataclass(frozen=True)
class Unsupported:
    """`NotImplementedError` from the backend, or a declared refusal (`Backend.supports`)."""

    stage: str
    raised: Raised | None = None
    reason: str | None = None  # the refusal's own words
    backend: str = ""  # the name of the backend that declined
    kind = kinds.UNSUPPORTED

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        if self.reason is not None:
            return f"unsupported by {self.backend or 'the backend'}: {self.reason}"
        assert self.raised is not None
        head = f"Unsupported: {_who_raised(self.raised, self.stage, capital=False)}"
        return f"{head}: {self.raised.short()}\n{_raised_text(self.raised)}"


@dataclass(frozen=True)
class WrongError:
    """An error scenario: the backend did not raise the exception eager raises."""

    expected: Raised  # eager's
    match: str | None  # the scenario's message pattern, if any
    got: Raised | None  # None: the backend returned
    returned: str = ""  # what it returned instead ("Tensor of shape (4, 7)")

    @property
    def kind(self) -> str:
        if self.got is None:
            return kinds.NO_ERROR
        if self.got.not_implemented:
            return kinds.UNSUPPORTED
        return kinds.WRONG_ERROR

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        expected = self.expected
        wanted = f"eager raises {expected.type_name} ({expected.first_line})"
        if self.match:
            wanted += f" matching {self.match!r}"
        got = self.got
        if got is None:
            return f"No exception: {wanted}, the backend returned {self.returned}"
        raiser = "the backend raised"
        # dynamo's tracing (a meta function) raised it: not the backend's code
        if got.while_tracing:
            raiser = (
                "torch.compile raised, while dynamo traced the program (before the backend was "
                "handed its graph),"
            )
        if got.not_implemented:
            head = (
                f"Unsupported: {wanted}; {raiser} NotImplementedError: {got.first_line} "
                "(not implementing the op is not the rejection eager makes)"
            )
        elif got.type_name == expected.type_name:
            head = f"Wrong message: {wanted}; {raiser} {got.short()}"
        else:
            head = f"Wrong exception: {wanted}; {raiser} {got.short()}"
        return f"{head}\n{_raised_text(got)}".rstrip()


@dataclass(frozen=True)
class Recompiled:
    compiles: int
    budget: int
    shape_sets: tuple[str, ...]
    mode: str
    frames: int | None = None  # how many frames (functions dynamo traced) the graphs came from
    kind = kinds.RECOMPILES

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        text = (
            f"Recompiled: {self.compiles} compiles over {len(self.shape_sets)} shape set(s) "
            f"({', '.join(self.shape_sets)}); the scenario allows {self.budget} (compile "
            f"mode {self.mode})."
        )
        if self.frames is not None and self.frames > 1:
            text += (
                f"\nThe graphs came from {self.frames} frames, not from one frame compiled "
                "again: dynamo hands the backend a graph for each function it traces, and a "
                "function besides the program's (the code after a graph break, or one the "
                "backend's own code runs, such as its backward) is one more."
            )
        return text


@dataclass(frozen=True)
class NotCompiled:
    """torch.compile ran the program without handing the backend a graph (dynamo captured
    nothing: it fell back to eager for the whole frame), so eager computed what was judged."""

    reason: str  # dynamo's graph-break message, or what is known
    kind = kinds.NOT_COMPILED

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        return (
            "Not compiled: torch.compile ran the program without calling the backend (dynamo "
            "captured no graph and ran the frame eagerly), so no result of the backend was "
            f"judged. Dynamo said: {self.reason}"
        )


@dataclass(frozen=True)
class CodeCheckFailed:
    result: CodeCheckResult
    kind = kinds.CODE_CHECK

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        diagnostic = self.result.diagnostic
        first, _, rest = diagnostic.partition("\n")
        head = f"Code check failed on '{self.result.block.artifact}': {first}"
        return f"{head}\n{rest}".rstrip()


@dataclass(frozen=True)
class TimedOut:
    """No result came back in time: the worker was stopped."""

    timeout_s: float | None  # the limit that ran out (None: none was set; `elapsed_s` says)
    elapsed_s: float
    grace_s: float  # between SIGTERM and SIGKILL
    phase: str = ""  # the phase that ran out (gemmconf.progress), "start" before any
    fixed: bool = False  # --item-timeout N (one limit for the whole item), not a phase budget
    confirmation: str = ""  # how the timeout was confirmed before it was charged, or why not
    kind = kinds.TIMEOUT

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        limit = self.timeout_s if self.timeout_s is not None else self.elapsed_s
        head = f"timed out after {limit:g} s"
        if self.fixed:
            head += " (--item-timeout),"
        if self.phase:
            head += f" in phase {self.phase!r}: {PHASE_TEXT.get(self.phase, self.phase)}"
        if self.confirmation:
            head += f"; {self.confirmation}"
        return (
            f"{head}\nNo result came back, so the worker was stopped (SIGTERM, SIGKILL after "
            f"{self.grace_s:g} s) and the run goes on in a fresh one. --item-timeout SECONDS sets "
            "one limit for the whole item (0: none); by default each phase has its own budget, "
            "scaled to the item, and --first-result-timeout SECONDS sets the time to first result "
            "(compile, autotune, JIT; default 180 s, 600 s for a backend that declares "
            "autotunes = True, plus its compile_timeout_s)."
        )


@dataclass(frozen=True)
class HarnessFault:
    """gemmconf's own code raised (its reference, input building, the recorder, the worker)."""

    stage: str
    raised: Raised
    kind = kinds.HARNESS_ERROR

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        raised = self.raised
        return (
            f"Harness error in {self.stage}: {raised.short()}"
            f"{f' (at {raised.location})' if raised.location and raised.message else ''}. This is "
            "gemmconf's own fault, not the backend's.\n" + raised.traceback
        ).rstrip()


@dataclass(frozen=True)
class ScenarioContradiction:
    """The scenario says something eager contradicts: the suite is wrong, not the backend."""

    instance_id: str
    source: str
    expected: str  # what the scenario says eager does ("raise RuntimeError")
    eager: Raised | None  # what eager raised; None: it returned
    inputs: str
    device: str
    kind = kinds.HARNESS_ERROR

    def describe(self) -> str:
        """This problem's paragraph; its first line stands alone."""
        eager = (
            "returned normally"
            if self.eager is None
            else f"raised {self.eager.type_name}: {self.eager.first_line}"
        )
        return (
            f"{self.instance_id} expects eager to {self.expected}, but eager {eager} on "
            f"{self.device} ({self.inputs})\nThe scenario is wrong, not the backend "
            f"({self.source})."
        )


class DescribedProblem(Protocol):
    """A problem a check defines in its own module (gemmconf.checks): its kind and its words
    (the first line stands alone, as every problem's does)."""

    kind: str

    def describe(self) -> str: ...


Problem = Union[  # noqa: UP007 (a runtime alias)
    DescribedProblem,
    NumericFailure,
    Unwritten,
    StaleResult,
    StreamMismatch,
    InputsModified,
    Nondeterministic,
    BatchVariant,
    Crash,
    NotACompiled,
    EagerAltered,
    Unsupported,
    WrongError,
    Recompiled,
    NotCompiled,
    CodeCheckFailed,
    TimedOut,
    HarnessFault,
    ScenarioContradiction,
]


@dataclass(frozen=True)
class ItemOutcome:
    """Everything one item's run found. `passed` when no check failed."""

    problems: tuple[Problem, ...] = ()
    verdicts: tuple[Verdict, ...] = ()  # the deciding numeric verdict per shape set
    code_checks: tuple[CodeCheckResult, ...] = ()
    compiles: int | None = None
    raised: Raised | None = None  # what the backend raised, unwrapped (error scenarios, crashes)
    metrics: Mapping[str, Any] = field(default_factory=dict)
    code_excerpt: str | None = None
    duration_s: float = 0.0
    phase_s: dict[str, float] | None = None  # seconds per phase (an isolation parent times them)
    notes: tuple[str, ...] = ()  # paragraphs after the problems: how a failure was confirmed
    # who computed the GEMM during the backend's call: "backend", "pytorch" or "mixed"
    # (gemmconf.attribution); None where it was not observed
    computed_by: str | None = None
    # dynamo processed a frame during the backend's compile or calls: the backend is built on
    # torch.compile, so the torch.compile layer of expectations applies to its failures
    through_dynamo: bool = False
    # what the backend changed of torch's devices (gemmconf.pristine.device_changed), looked at
    # where torch.compile failed before the backend got the graph: that failure is then its own
    device_changed: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def kind(self) -> str | None:
        """The failure kind of the item: a harness fault first, else the first problem's."""
        if not self.problems:
            return None
        harness = [p for p in self.problems if p.kind == kinds.HARNESS_ERROR]
        return (harness or list(self.problems))[0].kind

    @property
    def harness_error(self) -> bool:
        return self.kind == kinds.HARNESS_ERROR

    @property
    def before_backend(self) -> bool:
        """torch.compile failed before the backend got the graph: the item's deciding problem is
        dynamo capturing no graph (it ran the program eagerly), or an error raised while dynamo
        traced the program (a meta function, dynamo itself). Inherited from torch.compile
        (gemmconf.attribution): any backend built on it fails so. Not where the backend changed
        torch's devices (`device_changed`): torch.compile fails every program in such a process,
        so the failure is the backend's doing."""
        if not self.problems or self.harness_error or self.device_changed:
            return False
        first = self.problems[0]
        if isinstance(first, NotCompiled):
            return True
        raised = first.got if isinstance(first, WrongError) else getattr(first, "raised", None)
        return isinstance(raised, Raised) and raised.while_tracing

    @property
    def suite_error(self) -> bool:
        return any(isinstance(p, ScenarioContradiction) for p in self.problems)

    @property
    def cuda_fault(self) -> bool:
        """Whether a CUDA fault was seen: the process's CUDA context is unusable."""
        raised = [self.raised, *(getattr(p, "raised", None) for p in self.problems)]
        return any(r is not None and r.cuda_fault for r in raised)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.kind for p in self.problems))

    def with_problem(self, problem: Problem) -> ItemOutcome:
        return dataclasses.replace(self, problems=(*self.problems, problem))

    def portable(self) -> ItemOutcome:
        """This outcome without live exception objects, with plain-value metrics: what a worker
        process sends back (pickle-safe, JSON-ready)."""

        def strip(value: Any) -> Any:
            if isinstance(value, Raised):
                return value.portable()
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                changes = {
                    f.name: strip(getattr(value, f.name))
                    for f in dataclasses.fields(value)
                    if isinstance(getattr(value, f.name), Raised)
                }
                return dataclasses.replace(value, **changes) if changes else value
            return value

        return dataclasses.replace(
            self,
            problems=tuple(strip(p) for p in self.problems),
            raised=None if self.raised is None else self.raised.portable(),
            metrics={str(k): plain(v) for k, v in self.metrics.items()},
        )

    @classmethod
    def harness(cls, stage: str, error: BaseException, **metrics: Any) -> ItemOutcome:
        """A fault of the harness itself (never the backend's)."""
        return cls(problems=(HarnessFault(stage, Raised.of(error, frames=None)),), metrics=metrics)


def plain(value: Any) -> Any:
    """A metric as a JSON-ready Python value (numpy and torch scalars included)."""
    import numbers

    if value is None or type(value) in (bool, int, float, str):  # not subclasses (numpy)
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        return plain(value.item())
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return str(value)


@dataclass(frozen=True)
class Message:
    reason: str  # one line that stands alone (records, the terminal summary)
    details: str  # every problem, tracebacks included
    text: str  # what pytest shows: the details, then how to reproduce


def exit_text(returncode: int) -> tuple[str, str]:
    """(the short reason, the longer text) for a worker that ended with `returncode`."""
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
        except ValueError:
            return f"crashed: signal {-returncode}", f"was killed by signal {-returncode}"
        return f"crashed: {sig.name}", f"was killed by {sig.name} ({signal.strsignal(sig)})"
    return f"crashed: exit code {returncode}", f"exited with code {returncode}"


def render(outcome: ItemOutcome, *, repro: str = "") -> Message:
    """The words for an outcome: a passing one says so in one line."""
    if outcome.passed:
        return Message("passed", "", "passed")
    paragraphs = describe(outcome)
    reason = paragraphs[0].splitlines()[0] if paragraphs[0] else type(outcome.problems[0]).__name__
    if outcome.metrics.get("flaky") is True:  # --confirm-failures: a rerun passed
        runs = 1 + int(outcome.metrics.get("confirm_runs", 0))
        failed = 1 + int(outcome.metrics.get("confirm_failed", 0))
        reason = f"{reason} (flaky: failed {failed} of {runs} runs)"
    details = "\n\n".join(paragraphs).strip()
    text = f"{details}\nReproduce: {repro}" if repro else details
    return Message(reason, details, text)


def describe(outcome: ItemOutcome) -> list[str]:
    """One paragraph per problem, then the notes; each paragraph's first line stands alone."""
    return [_describe(p) for p in outcome.problems] + list(outcome.notes)


def _describe(problem: Problem) -> str:
    """One problem's paragraph; its first line stands alone (each problem's own `describe`)."""
    return problem.describe()


def _raised_text(raised: Raised) -> str:
    unwrapped = f"(raised inside {' > '.join(raised.wrappers)})\n" if raised.wrappers else ""
    return (unwrapped + raised.traceback).rstrip()


def _who_raised(raised: Raised, stage: str, *, capital: bool = True) -> str:
    """Whose code raised and when, for a failure's first line: torch.compile's while dynamo
    traced the program, before the backend was handed a graph of it (the backend's compiler
    never saw the op that failed; a meta function or dynamo itself did); the backend's compiler,
    handed the graph in the first call; else the backend, during `stage`. (The repro's
    `raised_line` says the same words.)"""
    if raised.while_tracing:
        return (
            f"torch.compile raised while dynamo traced the program, before the backend was "
            f"handed its graph ({stage})"
        )
    backend = "Backend" if capital else "the backend"
    if raised.while_compiling:
        return f"{backend} raised while compiling its graph, in {stage}"
    return f"{backend} raised during {stage}"
