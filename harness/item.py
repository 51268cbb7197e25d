"""One item's run as its checks see it (`ItemRun`): the instance, the backend and what it
compiled, every draw of every shape set (eager's inputs and result, the backend's), and the
ways a check calls the backend again or judges a result.

gemmconf.runner fills it (eager, compile, the first call per shape set); each check of
gemmconf.checks reads it and returns its findings. The backend is only ever called through
`ItemRun.backend` (which turns what it raises into `BackendFailed`) and `ItemRun.call` (which
also watches the call with the call guards: inputs untouched, outputs written).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any, Protocol

import torch

from gemmconf import (
    chunked,
    emulation,
    inputs,
    integrity,
    memory,
    oracle,
    pristine,
    program,
    progress,
)
from gemmconf.backends.base import Backend
from gemmconf.backends.dynamo import AutogradWatch, FrameWatch, compiled_autograd
from gemmconf.drawing import large
from gemmconf.outcome import (
    Crash,
    EagerAltered,
    NotCompiled,
    Problem,
    Raised,
    ScenarioContradiction,
    Unsupported,
)
from gemmconf.scenario import ScenarioInstance


class CallWatch(Protocol):
    """One call of the backend watched: entered before it, asked for problems after it."""

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> Any: ...

    def problems(self, actual: Any) -> list[Problem]: ...


@dataclasses.dataclass(frozen=True)
class EagerAnswer:
    """What a call of the backend is judged against: eager's inputs of the draw and its result."""

    inputs: inputs.Inputs
    result: Any


class CallGuard(Protocol):
    """What watches every call of the backend (gemmconf.checks.guards: inputs untouched,
    outputs written): `watch` is asked before each call, with eager's answer for the draw."""

    def watch(self, item: ItemRun, tensors: Sequence[Any], eager: EagerAnswer) -> CallWatch: ...


class SuiteBug(Exception):
    """Eager disagrees with what the scenario says (e.g. no error where `raises` expects one)."""


class BackendFailed(Exception):
    """The backend raised: the item ends with this problem."""

    def __init__(self, problem: Problem, raised: Raised | None):
        super().__init__(problem)
        self.problem = problem
        self.raised = raised


@dataclasses.dataclass
class Judged:
    """What the oracle is given for one draw (or the draws pooled): eager's result, the
    backend's, and the fp64 tensors judged against (the reference, and the bounds where the
    item has them: `oracle.judge`'s arguments of the same names)."""

    expected: Any
    actual: Any
    reference: Any = None
    magnitude: Any = None
    rounding: Any = None
    intermediate: Any = None


@dataclasses.dataclass
class Draw:
    """One independent draw of one shape set: eager's inputs and result, the backend's."""

    inputs: inputs.Inputs
    expected: Any
    actual: Any = None
    verdict: oracle.Verdict | None = None
    judged: Judged | None = None  # what the oracle is given (cached)
    sqnr: float | None = None  # dB, of a block-scaled (MX/NVFP4) result against fp64
    # returned before the backend was found to overwrite its results (gemmconf.checks.
    # overwritten): it may hold a later call's values, and its values are not judged
    overwritten: bool = False


class ItemRun:
    """The state of one item's run that the checks read; its methods are the harness's ways to
    call the backend again and to judge a result."""

    def __init__(
        self,
        instance: ScenarioInstance,
        backend: Backend,
        *,
        seed: int,
        device: str,
        target: str | None,
        poison: bool,
        guards: Sequence[CallGuard] = (),
    ):
        self.instance = instance
        self.guards = tuple(guards)  # what watches every call of the backend
        self.backend = backend
        self.seed = seed
        self.device = device
        self.target = target
        self.poison = poison
        self.stage = "setting up"  # what the harness was doing: names a harness fault
        self.metrics: dict[str, Any] = {}
        self.problems: list[Problem] = []  # found so far, in the order the outcome gives them
        self.compiled: Any = None
        self.compiles = 0  # the compiled callable's compiles() after the first calls
        self.graph_frames: int | None = None  # how many frames those graphs came from, if known
        self.frames = FrameWatch()  # what dynamo did during the backend's compile and calls
        # what compiled autograd did then, for a scenario whose backward runs under it
        self.autograd = AutogradWatch() if instance.compiled_autograd is not None else None
        # whether the backend was given anything yet: a CUDA fault before that is eager's (or
        # the harness's), never the backend's
        self.backend_started = False
        self.shape_index = 0  # the shape set being called (names unwritten outputs)
        self.draws: list[list[Draw]] = []  # per shape set: its draws, the first call's first
        self.backend_inputs: list[inputs.Inputs] = []  # per shape set: the first call's inputs
        # what a check or call guard keeps across the item's calls, under its own key
        self.stash: dict[Any, Any] = {}
        # set once the backend was found to overwrite a result it returned (gemmconf.checks.
        # overwritten): from that call on, each result is copied as returned (`call`)
        self.copies_results = False
        # who computed the GEMM during the backend's call (gemmconf.attribution's words; None:
        # not observed), as gemmconf.checks.computed_by saw it
        self.computed_by: str | None = None

    def prepare(self) -> None:
        progress.report("prepare")
        self.stage = "making the program"
        self.fn = program.make_function(self.instance)
        self.reference_fn = program.make_reference(self.instance)
        self.rounding_fn = program.make_rounding_magnitude(self.instance)  # input rounding
        # what rounding intermediate results (an unfused bias add, an epilogue) may cost
        self.intermediate_fn = program.make_intermediate_rounding(self.instance)
        # where eager has no kernel here, a stand-in computes its result from the dequantized
        # inputs and the item is judged against fp64 alone (gemmconf.emulation)
        self.stand_in = emulation.stand_in(self.instance, self.device)

    @property
    def backend_name(self) -> str:
        """The item's backend as the problems it is charged with name it."""
        return str(getattr(self.backend, "name", type(self.backend).__name__))

    @property
    def judges_values(self) -> bool:
        return self.instance.checks.numeric != "none"

    @property
    def first_draw(self) -> Draw:
        """The first call's draw (shape set 0's first): inputs, eager's result, the backend's."""
        return self.draws[0][0]

    @property
    def large_first(self) -> bool:
        """Shape set 0 is past FULL_STALE_CHECK_FLOPS (gemmconf.drawing)."""
        return large(self.instance, self.first_draw.inputs.dims)

    def first_call(self) -> Callable[[], Any]:
        """The backend's first call, to make again (`backend_call`): the compiled function on
        the backend's own inputs of shape set 0."""
        tensors, compiled = self.backend_inputs[0].tensors, self.compiled
        return lambda: compiled(*tensors)

    def backend_raises(self, stage: str, call: Callable[[], Any]) -> Any:
        """`call()`, a use of the backend: what it raises ends the item (`BackendFailed`)."""
        try:
            with ExitStack() as scope:
                scope.enter_context(self.frames.watching())
                if self.autograd is not None:  # the backward under compiled autograd
                    scope.enter_context(compiled_autograd())
                    scope.enter_context(self.autograd.watching())
                return call()
        except Exception as exc:
            raised = Raised.of(exc)
            oom = memory.out_of_memory(exc)  # the numbers for the failure kind "out of memory"
            if oom is not None:
                self.metrics["out_of_memory"] = oom.metrics()
            problem: Problem = (
                Unsupported(stage, raised) if raised.not_implemented else Crash(stage, raised)
            )
            raise BackendFailed(problem, raised) from None

    def backend_call(self, stage: str, call: Callable[[], Any]) -> Any:
        """A further call of the backend during the checks: its time is the backend's (phase
        "call"), the rest of the checks' the harness's (a timeout there is not charged to it)."""
        progress.report("call")
        try:
            return self.backend_raises(stage, call)
        finally:
            progress.report("check")

    def call(
        self, stage: str, tensors: Sequence[Any], eager: EagerAnswer
    ) -> tuple[Any, list[Problem]]:
        """The compiled function on `tensors`, watched by the call guards (gemmconf.checks:
        inputs untouched, outputs written); `eager` is what it is judged against (its result:
        the sizes to poison, the pattern to look for)."""
        watches = [guard.watch(self, tensors, eager) for guard in self.guards]
        with ExitStack() as stack:
            for watch in watches:
                stack.enter_context(watch)
            actual = self.backend_raises(stage, lambda: self.compiled(*tensors))
        problems: list[Problem] = []
        copying = self.copies_results
        for watch in watches:
            problems += watch.problems(actual)
        if self.copies_results and not copying:  # found on this call: the draws before it
            for draw in (draw for draws in self.draws for draw in draws):  # may hold its values
                draw.overwritten = True
        if self.copies_results:
            actual = integrity.as_returned(actual)
        return actual, problems

    def names(self) -> tuple[str, ...]:
        return self.instance.input_names

    def eager(self, item_inputs: inputs.Inputs) -> tuple[Any, BaseException | None]:
        try:
            if self.stand_in is not None:
                return self.stand_in(item_inputs), None
            return self.fn(*item_inputs.tensors), None
        except Exception as exc:
            return None, exc

    def draw(
        self, index: int, draw: int, *, confirming: bool = False
    ) -> tuple[Draw, list[Problem]]:
        """Draw `draw` of shape set `index`: fresh values, eager's result, the backend's (and
        what the call guards found on that call). `confirming`: draw `draw` of the item's
        confirmation stream (inputs.CONFIRMATION: the rounds that decide a judgment near its
        bar, the same whatever --seed), not of the run's seed."""
        self.stage = "building the inputs"
        run_seed = inputs.CONFIRMATION if confirming else self.seed
        eager_inputs, backend_inputs = inputs.build_copies(
            self.instance, index, run_seed, self.device, draw=draw
        )
        self.stage = "running eager"
        expected, error = self.eager(eager_inputs)
        if error is not None:
            raise SuiteBug(self.contradiction("return a result", error, eager_inputs))
        self.shape_index = index
        progress.report("call")
        actual, problems = self.call(
            f"the call on shape set {index} ({'confirmation ' if confirming else ''}draw "
            f"{draw}: fresh values, {shape(eager_inputs)})",
            backend_inputs.tensors,
            EagerAnswer(eager_inputs, expected),
        )
        progress.report("check")
        return Draw(eager_inputs, expected, actual), problems

    def contradiction(
        self, expected: str, eager: BaseException | None, item_inputs: inputs.Inputs
    ) -> ScenarioContradiction:
        return ScenarioContradiction(
            self.instance.id,
            self.instance.source,
            expected,
            None if eager is None else Raised.of(eager).portable(),
            item_inputs.describe(),
            self.device,
        )

    def require_pristine(self, found: str, *, ours: bool) -> None:
        """Ends the item when PyTorch is not what eager must run (gemmconf.pristine): eager and
        the fp64 reference would agree with whatever the backend computes. `ours`: only this
        item's backend ran since the last clean look (made before eager ran), so it is blamed."""
        self.stage = "checking that PyTorch is as it was"
        changes = pristine.altered()
        if changes:
            if ours:
                pristine.blame(self.backend_name)
            altered = EagerAltered(self.backend_name, found, changes, pristine.culprit())
            raise BackendFailed(altered, None)

    def not_compiled(self, *, failed: bool = False) -> tuple[NotCompiled, ...]:
        """A normal scenario's program that never reached the backend: dynamo ran the frame
        eagerly (the compiled callable's optional `uncaptured()`; for one without it, what
        dynamo's counters showed during the backend's compile and calls, with `compiles()` at
        0). `failed`: the backend's call raised, so only graph breaks say so (the error was
        eager's), and the failure stands as it is if the adapter's own bookkeeping raises."""
        if self.compiled is None or self.instance.checks.raises:
            return ()
        uncaptured = getattr(self.compiled, "uncaptured", None)
        if uncaptured is None:
            uncaptured = self._watched_uncaptured
        if not failed:
            reason = self.backend_raises("uncaptured()", uncaptured)
        else:
            try:
                reason = uncaptured(broke=True)
            except Exception:
                return ()
        return () if reason is None else (NotCompiled(str(reason)),)

    def _watched_uncaptured(self, *, broke: bool = False) -> str | None:
        return self.frames.uncaptured(self.compiled.compiles(), broke=broke)

    def policy(self, expected: Any) -> oracle.Policy | None:
        """The tolerance row a result of this item is judged by (gemmconf.oracle)."""
        instance = self.instance
        first = expected[0] if isinstance(expected, tuple | list) else expected
        if not isinstance(first, torch.Tensor):
            return None
        # inputs TF32 holds exactly: under TF32 (or bf16x3) every product is exact, so the fp32
        # row's accumulation bound is the whole allowance (a bf16 "medium" product errs 2^-9)
        return oracle.item_policy(
            first.dtype,
            compute="fp32" if instance.values == "tf32_exact" else instance.dtype,
            fast_accum=instance.use_fast_accum,
            exact=instance.checks.numeric == "exact",
            max_ratio=instance.checks.max_ratio,
            fp64_alone=instance.checks.numeric == "fp64" or self.stand_in is not None,
        )

    def judge_one(self, draw: Draw) -> oracle.Verdict:
        judged = self.judgment_inputs(draw)
        self.stage = "judging the values"
        return oracle.judge(
            judged.expected,
            judged.actual,
            judged.reference,
            k=draw.inputs.k,
            policy=self.policy(judged.expected),
            magnitude=judged.magnitude,
            rounding=judged.rounding,
            intermediate=judged.intermediate,
            strides=fixed_strides(self.instance),
            names=output_names(self.instance),
            k_name=draw.inputs.k_name,
        )

    def judgment_inputs(self, draw: Draw) -> Judged:
        """What the oracle is given for `draw` (computed once, kept on the draw)."""
        if draw.judged is None:
            draw.judged = self._compute_judgment_inputs(draw)
        return draw.judged

    def _compute_judgment_inputs(self, draw: Draw) -> Judged:
        self.stage = "computing the fp64 reference"
        instance, device = self.instance, self.device
        item_inputs = draw.inputs
        reference = magnitude = rounding = intermediate = None
        # fp64 on the item's device (a 16384^2 reference takes a minute on a CPU) in pieces of
        # bounded size; the fp64 values of outputs too large to hold beside a GPU's other items
        # are held on the host, and the oracle judges them a piece at a time on the item's
        # device: workers sharing a GPU share its memory (chunked.py, memory.py, oracle.py).
        held_on = memory.reference_device(instance, item_inputs.dims, device)
        fp64 = chunked.Evaluator(instance, item_inputs, device, out_device=held_on)
        if self.reference_fn is not None and instance.checks.numeric in ("auto", "fp64"):
            reference = fp64(self.reference_fn)
        expected, actual = draw.expected, draw.actual
        policy = self.policy(expected)
        if reference is not None and _eager_suspect(expected, reference):
            magnitude = fp64(self.reference_fn, transform=torch.abs)
        if (
            reference is not None
            and self.rounding_fn is not None
            and policy is not None
            and policy.input_rounding > 0
        ):
            rounding = fp64(self.rounding_fn)
        if reference is not None and self.intermediate_fn is not None:
            intermediate = fp64(self.intermediate_fn)
        if draw.sqnr is None and reference is not None:
            draw.sqnr = emulation.block_scaled_metrics(instance, draw.actual, reference).get(
                "sqnr_db"
            )
        return Judged(expected, actual, reference, magnitude, rounding, intermediate)


def fixed_strides(instance: ScenarioInstance) -> bool | frozenset[tuple[int, ...]]:
    """The outputs whose strides the op's contract fixes: its result is eager's row-major one,
    or the `out=` target it writes (gemmconf.gemm.ops). A backward item returns the forward
    result, then gradients from torch.autograd.grad, whose layout nothing promises (inductor
    pads an fp32 gradient's rows; AccumulateGrad restrides only what lands in `.grad`): the
    result alone (oracle.judge)."""
    spec = instance.spec
    fixed = spec.row_major or bool(spec.writes)
    if fixed and instance.backward:
        return frozenset({(0,)})
    return fixed


def output_names(instance: ScenarioInstance) -> dict[tuple[int, ...], str]:
    """What a backward item's outputs are: its forward result, then one gradient per input."""
    if not instance.backward:
        return {}
    gradients = program.differentiated(instance)
    return {(0,): "the forward result"} | {
        (i + 1,): f"the gradient of {name}" for i, name in enumerate(gradients)
    }


def _eager_suspect(expected: Any, reference: Any) -> bool:
    """Whether eager has NaN/Inf where the fp64 reference is finite: only then is the reference
    of the inputs' magnitudes worth computing (the oracle decides whether it refutes eager)."""
    if isinstance(expected, torch.Tensor) and isinstance(reference, torch.Tensor):
        if not expected.is_floating_point() or expected.shape != reference.shape:
            return False
        # in pieces, on eager's device: a large reference may be held on the host
        e, r = expected.detach().reshape(-1), reference.detach().reshape(-1)
        return any(
            bool((~torch.isfinite(e[p].float()) & torch.isfinite(r[p].to(e.device))).any())
            for _, p in oracle.pieces(e.numel())  # fp8: no isfinite
        )
    if isinstance(expected, tuple | list) and isinstance(reference, tuple | list):
        return any(_eager_suspect(e, r) for e, r in zip(expected, reference, strict=False))
    return False


def bitwise_equal(first: Sequence[Any], second: Sequence[Any]) -> bool:
    """Whether two sequences of tensors are equal bit for bit (shapes and dtypes too)."""
    if len(first) != len(second):
        return False
    return all(
        isinstance(a, torch.Tensor)
        and isinstance(b, torch.Tensor)
        and a.shape == b.shape
        and a.dtype == b.dtype
        and integrity.bitwise_diff(a, b) is None
        for a, b in zip(first, second, strict=True)
    )


def shape(item_inputs: inputs.Inputs) -> str:
    """A shape set as its problems name it: "M=64 N=64 K=64"."""
    return shape_text(tuple(item_inputs.dims.items()))


def shape_text(shape_set: Sequence[tuple[str, int]]) -> str:
    return " ".join(f"{d}={s}" for d, s in shape_set)
