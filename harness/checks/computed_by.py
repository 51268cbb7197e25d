"""Who computed the GEMM during the backend's call: its own code, or PyTorch's aten kernels
(`ItemRun.computed_by`, the record's `computed_by`: gemmconf.attribution).

A backend can pass without computing anything: a torch.compile backend that hands a graph back
to dynamo, inductor's extern ATEN choice, a kernel library whose override falls back to aten.
A pass is then PyTorch's, and says nothing of the backend's kernels.

How it is seen, on the first call of shape set 0 only (the call guard `ComputedBy`):
- PyTorch's profiler (the autograd one: no GPU tracing) records every aten op the call
  dispatches (quietly: `KINETO_LOG_QUIET`); a GEMM op (`pristine.GEMM_ATEN`) that dispatches no
  further GEMM is a GEMM kernel, and a composite one (linear, matmul) is looked through. The
  compile inside a first call of a torch.compile backend (tracing on fake tensors, lowering,
  autotuning) is not recorded (dynamo's compile callbacks turn recording off), and a compile
  outside those callbacks (aot_autograd's lazy backward) runs under dynamo's `dynamo_timed`
  events: those subtrees are left out.
- A GEMM op the dispatcher hands to Python code (a dispatch mode or a tensor subclass: the
  profiler's `PythonDispatchMode` and `PythonSubclass` events below it) ran no kernel of aten's
  there; what that code dispatches is looked at as any other op. A backend that traces the
  program through such a mode in its first call (torchax's jax.jit: its mode turns aten::mm into
  a jnp op on a tracer, and XLA computes the product) read as PyTorch's before 2026-12-01.
- "aten::mm ran" is not "aten's kernel ran": a kernel library registers its own kernel for
  aten::mm at the CPU or CUDA key while its call runs (README, "A backend that overrides aten
  ops"). So during the observed call, a kernel registered for a GEMM op through
  `torch.library.Library.impl` runs inside a profiler mark, and a GEMM op whose kernel is so
  marked is the backend's; what the kernel dispatches itself (a fallback to aten::mm.out) is
  looked at as any other op. A kernel registered for the whole process is no concern here:
  the harness refuses to judge such a process (gemmconf.pristine).

The check `ComputedBy` then compares the count with eager's (the same program on the same
inputs, profiled; its GEMM kernels are the ones a backend may leave to aten): none of aten's
ran, "backend"; as many as eager's, "pytorch" (and the metric `eager_bits`: whether the result
is eager's bit for bit, or the backend's code changed what aten's GEMM was given or returned);
fewer, "mixed". Only aten GEMMs of the kinds
eager runs count (`pristine.GEMM_KIND`: float, scaled, integer): a kernel library that
quantizes a bf16 program's operands to int8 and multiplies them with aten's `_int_mm` computes
the program its own way, aten's integer GEMM one step of it (a torchao trial, 2026-12-02: 60 of
its int8 passes read "computed by PyTorch"); one that upcasts fp16 to float32 for aten's mm
still leaves the product to aten. Where the backend's call raised (the observed one, or a
later shape set's), the item ends before the checks and the runner makes the same comparison
(`settle`; not after a lost CUDA context, where eager cannot run: aten's kernels seen then
make it "pytorch" unless all were weight-only); a kernel registered over a GEMM op with no
aten kernel under it is "backend", and none of either "none" (the call raised before any GEMM
kernel ran: dynamo's tracing, the backend's compile, a check of its own; nothing computed it,
so it is not the backend's computing).

The observation changes nothing of the call's result (the profiler and the mark only record),
and a failure of its own is no failure of the backend: the call is then "not observed".
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gemmconf import attribution, integrity
from gemmconf.backends.dynamo import compile_callbacks
from gemmconf.backends.eager import EagerBackend
from gemmconf.checks.base import NOTHING, Findings
from gemmconf.item import EagerAnswer, ItemRun, bitwise_equal
from gemmconf.outcome import Problem
from gemmconf.pristine import GEMM_ATEN, GEMM_KIND, WEIGHT_ONLY_KIND

GEMM_EVENTS = frozenset(f"aten::{op}" for op in GEMM_ATEN)
# Kineto, under the profiler, prints "USDT: ... profiler_start" and "... profiler_stop" on stderr
# at every profile in torch 2.13: under a failure, "what the worker printed on stderr during this
# item" showed those lines, the harness's, as if the backend had printed them. Its levels end
# below 6; it reads the variable when it first starts in a process. A level of the user's wins.
KINETO_LOG_QUIET = ("KINETO_LOG_LEVEL", "6")

# the profiler mark around a kernel registered for a GEMM op during the observed call
OVERRIDE_MARK = "gemmconf: kernel registered for "
# the profiler's events where the dispatcher hands an op to Python code: a dispatch mode
# (TorchDispatchMode) or a tensor subclass's __torch_dispatch__ (the record functions of torch's
# Python fallback; both seen below aten::mm with torch 2.13 on a CPU, 2026-12-01)
PYTHON_DISPATCH = frozenset(("PythonDispatchMode", "PythonSubclass"))
COMPILE_MARK = " (dynamo_timed)"  # dynamo's events around its compile steps (torch 2.11-2.13)


@dataclass(frozen=True)
class Observed:
    """What ran during one call: aten's own GEMM kernels, and GEMM ops that kernels registered
    during the call served, by op (`aten::mm`)."""

    aten: dict[str, int]
    overridden: dict[str, int]

    @property
    def aten_count(self) -> int:
        return sum(self.aten.values())

    def kinds(self) -> set[str]:
        """The kinds of aten's GEMMs that ran (`pristine.GEMM_KIND`)."""
        return {_kind(name) for name in self.aten}

    def count_of(self, kinds: set[str]) -> int:
        """How many of aten's GEMM kernels of those kinds ran."""
        return sum(n for name, n in self.aten.items() if _kind(name) in kinds)


def _kind(event: str) -> str:
    """What a GEMM event's op multiplies (`aten::_int_mm`: "integer"; pristine.GEMM_KIND)."""
    return GEMM_KIND[event.removeprefix("aten::")]


class ComputedBy:
    """Observes the first call of shape set 0 (its compile included, left out of the count)."""

    name = "who computed"

    def watch(self, item: ItemRun, tensors: Sequence[Any], eager: EagerAnswer) -> _Watch:
        first = item.shape_index == 0 and ComputedBy not in item.stash
        return _Watch(item, eager, observe=first)


# the stash key of shape set 0's eager inputs, kept from the observed call until eager's
# kernels were counted on them (`settle`): an item that ends at a later call still compares
_EAGER_INPUTS = "computed_by: eager's inputs"


class _Watch:
    def __init__(self, item: ItemRun, eager: EagerAnswer, *, observe: bool):
        self.item = item
        self.eager = eager
        self.observe = observe
        self.stack = contextlib.ExitStack()
        self.profile: Any = None

    def __enter__(self) -> _Watch:
        if not self.observe:
            return self
        self.item.stash[ComputedBy] = None  # looked at once, even where nothing came of it
        if _profiling():  # someone else's: never disturbed
            return self
        try:
            self.stack.enter_context(_marked_overrides())
            self.stack.enter_context(_compiles_unrecorded())
            self.profile = self.stack.enter_context(_profiler())
        except Exception:  # a profiler this torch lacks: not observed, never the backend's fault
            self.stack.close()
            self.profile = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.profile is None:
            return
        # a profiler the backend started itself ended ours: what it recorded is not all
        intact = _profiling()
        try:
            self.stack.close()
            if intact:
                observed = kernels_of(self.profile.function_events)
                # eager is PyTorch's own by definition, whatever kind its kernels are
                eager = isinstance(self.item.backend, EagerBackend)
                self.item.stash[ComputedBy] = observed
                self.item.computed_by = _without_eager(
                    observed, raised=exc[0] is not None, eager=eager
                )
                self.item.metrics.update(_metrics(observed))
                if observed.aten_count and not eager:
                    self.item.stash[_EAGER_INPUTS] = self.eager.inputs  # for `settle`
        except Exception:  # the harness's own fault: the call stays not observed
            self.item.stash[ComputedBy] = None
            self.item.computed_by = None

    def problems(self, actual: Any) -> list[Problem]:
        return []


class EagerComparison:
    """Where aten's own GEMM kernels ran during the observed call, whether they computed all of
    what eager computes ("pytorch") or part of it ("mixed"): eager's own run of the program
    on shape set 0's inputs, profiled the same way (one more eager call, only then)."""

    name = "who computed, against eager"

    def applies(self, item: ItemRun) -> bool:
        return _EAGER_INPUTS in item.stash

    def run(self, item: ItemRun) -> Findings:
        item.stage = "profiling eager's GEMM kernels"
        settle(item)
        if item.computed_by == attribution.PYTORCH:
            same = _eager_bits(item)
            if same is not None:
                return Findings(metrics={"eager_bits": same})
        return NOTHING


def settle(item: ItemRun) -> None:
    """Who computed the observed call, against eager's GEMM kernels on shape set 0's inputs,
    where aten's own kernels ran in it and eager's were not counted yet (the metric
    `eager_gemm_kernels`): none of the kinds eager runs, "backend"; as many as eager's,
    "pytorch"; fewer, "mixed". Run by `EagerComparison` among the checks, and by the runner
    for an item that ends at a call that raised: the observed call's own failure, or a later
    shape set's (a bitsandbytes trial, 2026-12-02: 41 crashes inside its override, whose call
    had run aten's `_int_mm` on operands it quantized, read "PyTorch's", where the same path's
    passes read the backend's). Never raises: a fault of its own leaves what was seen."""
    eager_inputs = item.stash.pop(_EAGER_INPUTS, None)
    observed = item.stash.get(ComputedBy)
    if eager_inputs is None or not isinstance(observed, Observed):
        return
    with contextlib.suppress(Exception):
        eager = _eager_kernels(item, eager_inputs)
        if eager is None:
            return
        # eager ran none (it has no kernel here): any of aten's count, as before kinds were told
        kinds = eager.kinds() or set(GEMM_KIND.values())
        computed = observed.count_of(kinds)
        if computed == 0:  # only GEMMs of other kinds: on operands the backend made
            item.computed_by = attribution.BACKEND
        elif computed >= eager.aten_count:
            item.computed_by = attribution.PYTORCH
        else:
            item.computed_by = attribution.MIXED
        item.metrics["eager_gemm_kernels"] = eager.aten_count


def _eager_bits(item: ItemRun) -> bool | None:
    """Whether the backend's first result is eager's bit for bit, where aten's kernels computed
    it: the same kernels on the same operands give the same bits, so a result that differs had
    the backend's code between the program and aten's GEMM (operands it quantized, cast or laid
    out anew; an epilogue of its own) and its values carry that code's rounding (an
    optimum-quanto trial, 2026-12-02: 271 passes of aten's mm on weights quanto had quantized
    and dequantized read as PyTorch's like untouched ones). None where eager's result is a
    stand-in's (gemmconf.emulation) or the backend's is not the one it returned."""
    draw = item.first_draw
    if item.stand_in is not None or draw.overwritten or draw.actual is None:
        return None
    expected = integrity.tensors_of(draw.expected)
    if not expected:
        return None
    return bitwise_equal(integrity.tensors_of(draw.actual), expected)


def _profiler() -> Any:
    """PyTorch's autograd profiler, with kineto quiet where the user has not set its level."""
    os.environ.setdefault(*KINETO_LOG_QUIET)
    return torch.autograd.profiler.profile()


def _profiling() -> bool:
    """Whether a profiler of PyTorch's records now (ours, or anyone's)."""
    return bool(torch._C._autograd._profiler_enabled())


def _without_eager(observed: Observed, *, raised: bool, eager: bool = False) -> str:
    """Who computed, before eager's count is known: aten's kernels seen make it PyTorch's, unless
    all of them are weight-only GEMMs (`pristine.WEIGHT_ONLY`), which no program of the suite
    runs in eager: they multiplied operands the backend made, as `EagerComparison` counts it
    where the call returns (an optimum-quanto trial: `_weight_int8pack_mm`'s "expect B to be
    contiguous" on the weight it packed read PyTorch's). Not the op's own kind: aten's CPU
    `_scaled_mm` runs a float mm; and never for `eager`, PyTorch's own by definition). A call
    that raised with no GEMM kernel seen (aten's or an override's), no one's."""
    if observed.aten_count:
        if eager or observed.kinds() != {WEIGHT_ONLY_KIND}:
            return attribution.PYTORCH
        return attribution.BACKEND
    if raised and not observed.overridden:
        return attribution.NONE
    return attribution.BACKEND


def _metrics(observed: Observed) -> dict[str, Any]:
    found: dict[str, Any] = {"aten_gemm_kernels": dict(sorted(observed.aten.items()))}
    if observed.overridden:
        found["overridden_gemm_ops"] = dict(sorted(observed.overridden.items()))
    return found


def _eager_kernels(item: ItemRun, eager_inputs: Any) -> Observed | None:
    """The aten GEMM kernels eager's program runs on shape set 0's inputs (an op eager has no
    kernel for here still counts: it raises inside the kernel's dispatch); None where eager
    cannot be profiled (another profiler is on)."""
    if _profiling():
        return None
    writes = item.instance.spec.writes
    tensors = [  # eager's own out= targets stay as they were: they may be its judged result
        t.clone() if name in writes and isinstance(t, torch.Tensor) else t
        for name, t in zip(item.names(), eager_inputs.tensors, strict=True)
    ]
    with _profiler() as profile, contextlib.suppress(Exception):
        item.fn(*tensors)
    return kernels_of(profile.function_events)


def kernels_of(events: Sequence[Any]) -> Observed:
    """The GEMM kernels among a profile's events (autograd profiler `FunctionEvent`s)."""
    aten: Counter[str] = Counter()
    overridden: Counter[str] = Counter()
    dispatches_gemm: dict[int, bool] = {}

    def has_gemm(event: Any) -> bool:
        key = id(event)
        if key not in dispatches_gemm:
            dispatches_gemm[key] = event.name in GEMM_EVENTS or any(
                has_gemm(c) for c in event.cpu_children
            )
        return dispatches_gemm[key]

    def walk(event: Any) -> None:
        name = event.name
        if name.endswith(COMPILE_MARK):  # compile time: fake tensors, autotuning
            return
        children = event.cpu_children
        if name in GEMM_EVENTS:
            if any(c.name.startswith(OVERRIDE_MARK) for c in children):
                overridden[name] += 1
            elif not any(c.name in PYTHON_DISPATCH or has_gemm(c) for c in children):
                # aten's kernel: not handed to Python code (a dispatch mode, a subclass), and
                # nothing below it dispatches a GEMM; where either, its children are walked
                aten[name] += 1
                return
        for child in children:
            walk(child)

    for event in events:
        if event.cpu_parent is None:
            walk(event)
    return Observed(dict(aten), dict(overridden))


@contextlib.contextmanager
def _compiles_unrecorded():
    """While open, dynamo's compiles record no profiler events: what a compile runs (tracing on
    fake tensors, lowering, autotuning) is left out of the count anyway, and recording each of
    its ops made a torch.compile backend's first call about a quarter slower (the reference on
    suites/dense/ops.yaml, this CPU: 236 s of CPU against 186 s unobserved). Record functions
    are off from dynamo's compile-start callback to its compile-end one (run in a `finally`),
    in the compiling thread only; a torch without those callbacks records the compile as before.
    """
    enable = getattr(torch._C._autograd, "_enable_record_function", None)
    if enable is None:
        yield
        return

    def pause(_: Any) -> None:
        enable(False)

    def resume(_: Any) -> None:
        enable(True)

    # dynamo as it is: importing it here would put seconds into the observed call (a backend
    # that compiles with dynamo imported it already; one that does not has no compiles to skip)
    with compile_callbacks(start=pause, end=resume, import_dynamo=False) as available:
        try:
            yield
        finally:
            if available:
                enable(True)


@contextlib.contextmanager
def _marked_overrides():
    """While open, a kernel registered for an aten GEMM op through torch.library runs inside a
    profiler mark (it is called as it was, with what it was given)."""
    library = torch.library.Library
    original = library.impl

    @functools.wraps(original)
    def impl(self: Any, op_name: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return original(self, op_name, _marked(self, op_name, fn), *args, **kwargs)

    library.impl = impl  # type: ignore[method-assign]
    try:
        yield
    finally:
        library.impl = original  # type: ignore[method-assign]


def _marked(library: Any, op_name: Any, fn: Any) -> Any:
    if getattr(library, "ns", None) != "aten" or not callable(fn):
        return fn
    if fn is getattr(torch.library, "fallthrough_kernel", None):
        return fn
    name = op_name if isinstance(op_name, str) else getattr(op_name, "__name__", str(op_name))
    op = name.split("::")[-1].split(".")[0]
    if op not in GEMM_ATEN:
        return fn
    mark = f"{OVERRIDE_MARK}aten::{op}"

    @functools.wraps(fn)
    def kernel(*args: Any, **kwargs: Any) -> Any:
        with torch.autograd.profiler.record_function(mark):
            return fn(*args, **kwargs)

    return kernel


__all__ = ["ComputedBy", "EagerComparison", "Observed", "kernels_of", "settle"]
