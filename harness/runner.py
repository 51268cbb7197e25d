"""One item's run: eager, the backend, integrity checks, the oracle, the recompile budget and the
code checks, into an `ItemOutcome` (gemmconf.outcome).

This is the middle of the flow in docs/design.md, free of pytest so that `gemmconf explain` and the
self-tests can call it directly. The harness never makes up the backend's answer: what the
backend returned or raised is what is judged, and an exception of the harness's own (its
reference, inputs, oracle) is a `HarnessFault`, never the backend's failure.

Numeric verdicts are stable across `--seed`: each shape set is judged over enough independent
input draws that small outputs (a few elements, where eager's own error is a matter of luck) are
judged over at least `DRAW_ELEMENTS` elements, and a failing judgment is confirmed on
`CONFIRM_ROUNDS` further rounds of fresh draws: the shape set fails when most rounds fail. The
second draw of the first shape set is also the check that fresh values give a fresh answer. Only
marginal failures are put to the vote (`CONFIRM_BELOW`): a grossly wrong result fails at once.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from gemmconf import (
    chunked,
    codecheck,
    emulation,
    inputs,
    integrity,
    memory,
    oracle,
    pristine,
    program,
    progress,
)
from gemmconf.backends.base import Backend, compiled_gaps, refusal
from gemmconf.backends.dynamo import FrameWatch, skip_guard_latency_profile
from gemmconf.gemm.ops import OPS
from gemmconf.outcome import (
    BatchVariant,
    CodeCheckFailed,
    Crash,
    EagerAltered,
    InputsModified,
    ItemOutcome,
    Nondeterministic,
    NotACompiled,
    NotCompiled,
    NumericFailure,
    Problem,
    Raised,
    Recompiled,
    ScenarioContradiction,
    StaleResult,
    StreamMismatch,
    Unsupported,
    Unwritten,
    WrongError,
)
from gemmconf.scenario import ScenarioInstance

DRAW_ELEMENTS = 64  # a judgment covers at least this many output elements (more draws if small)
MAX_DRAWS = 64  # draws per judgment, for a one-element output
CONFIRM_ROUNDS = 2  # further judgments over fresh draws when one fails; most decide
# A failure is confirmed only when marginal (err_ratio up to this many times the allowed ratio,
# NaN/Inf positions and attributes right): a grossly wrong result is a bug, whatever other draws do.
CONFIRM_BELOW = 10.0
# The second draw of shape set 0 (fresh values: no result caching) is judged in full below this
# many FLOPs; above it, only compared bit for bit with the first call's answer (a cache returns
# that answer; a fresh computation on other values does not), so the largest items do not pay
# for a second eager run and fp64 reference.
FULL_STALE_CHECK_FLOPS = 2**33
# beside a numeric failure of an item eager has no kernel for (gemmconf.emulation)
EMULATED_NOTE = (
    'Eager has no kernel for this item here: "eager" above is a stand-in (the fp64 '
    "reference's program run in fp32, rounded to the output dtype) that gives the result's "
    "shape and dtype, and the backend was judged against fp64 alone (metrics.eager_emulated)."
)


# The K steps of kernels' main loops a dropped K tail is looked for behind (K - r a multiple of
# one), and the largest failed item whose truncated products are computed to look.
K_TAIL_STEPS = (8, 16, 32, 64, 128, 256)
K_TAIL_MAX_FLOPS = 2**28
# how much closer the result must be to the truncated product than to the whole: bf16 outputs'
# own rounding keeps a dropped tail's results 30x (not 100x) closer at K = 65
K_TAIL_CLOSER = 10.0


# beside a numeric failure of an error scenario that allows a result (raises.or_correct)
BEYOND_EAGER_NOTE = (
    'Eager rejects this call, where the op allows it, and the backend returned a result: "eager" '
    "above is a stand-in (the fp64 reference's program run in fp32, rounded to the output "
    "dtype), and the result was judged against fp64 alone (metrics.eager_rejected). Raising "
    "the class eager raises would pass too."
)


class SuiteBug(Exception):
    """Eager disagrees with what the scenario says (e.g. no error where `raises` expects one)."""


def compile_budget(instance: ScenarioInstance) -> int:
    """Compiles allowed: the file's max_compiles, else 1 when dynamic, else one per shape set."""
    if instance.compile.max_compiles is not None:
        return instance.compile.max_compiles
    if instance.compile.mode != "static":
        return 1
    return len(set(instance.shape_sets))


def mark_dynamic_dims(instance: ScenarioInstance, item_inputs: inputs.Inputs) -> None:
    """Apply `torch._dynamo.mark_dynamic` to every tensor dim named in compile.dims."""
    for operand in instance.operands:
        if operand.name not in item_inputs.names:
            continue
        tensor = item_inputs.tensors[item_inputs.names.index(operand.name)]
        shape = list(operand.shape)
        if operand.layout == "t":  # stored transposed
            shape[-2], shape[-1] = shape[-1], shape[-2]
        for index, expr in enumerate(shape):
            if str(expr) in instance.compile.dims:
                torch._dynamo.mark_dynamic(tensor, index)


def applicable_checks(
    instance: ScenarioInstance, backend_name: str, target: str | None
) -> tuple[list[codecheck.CheckBlock], list[codecheck.NotRunHere]]:
    """This backend's blocks for the instance's axes: those that run on `target`, the others."""
    axes = instance.axis_record()
    base_name = backend_name.split(":")[0]
    blocks = []
    for spec in instance.checks.filecheck:
        if spec.backends and backend_name not in spec.backends and base_name not in spec.backends:
            continue
        if any(axes.get(axis) not in accepted for axis, accepted in spec.when):
            continue
        blocks.append(codecheck.CheckBlock(spec.artifact, spec.text, spec.source, spec.target))
    return codecheck.split_by_target(blocks, target)


def draws_per_judgment(numel: int) -> int:
    """Independent draws one judgment takes so that it covers `DRAW_ELEMENTS` output elements."""
    if numel <= 0 or numel >= DRAW_ELEMENTS:
        return 1
    return min(MAX_DRAWS, math.ceil(DRAW_ELEMENTS / numel))


def large(instance: ScenarioInstance, dims: dict[str, int]) -> bool:
    """Past FULL_STALE_CHECK_FLOPS: the fresh-values check compares bit for bit only."""
    return OPS[instance.op].flops(dims) > FULL_STALE_CHECK_FLOPS


def judgment_draws(instance: ScenarioInstance, index: int, dims: dict[str, int], numel: int) -> int:
    """Independent draws the first judgment of shape set `index` takes (`numel`: its output
    elements): enough to cover `DRAW_ELEMENTS`, and on shape set 0 below FULL_STALE_CHECK_FLOPS
    at least two, the second with fresh values (a backend must not answer with the first's
    result). Each draw's inputs and results live until the item ends (`memory.estimate`)."""
    draws = draws_per_judgment(numel)
    if index == 0 and not large(instance, dims):
        draws = max(draws, 2)
    return draws


def run_item(
    instance: ScenarioInstance,
    backend: Backend,
    *,
    seed: int,
    device: str,
    target: str | None,
    repro: str = "",  # kept for callers of the old signature; the renderer adds it
    poison: bool = True,
) -> ItemOutcome:
    """Run one item and say what happened. Never raises for the backend's or its own faults."""
    start = time.perf_counter()
    skip_guard_latency_profile()
    run = _ItemRun(instance, backend, seed=seed, device=device, target=target, poison=poison)
    try:
        run.prepare()
        outcome = run.execute()
    except _BackendFailed as failed:
        # eager's own error, if nothing compiled
        problems = (*run.not_compiled(failed=True), failed.problem)
        outcome = ItemOutcome(problems=problems, raised=failed.raised, metrics=run.metrics)
    except SuiteBug as bug:
        outcome = ItemOutcome(problems=(bug.args[0],), metrics=run.metrics)
    except Exception as exc:
        raised = Raised.of(exc)
        if raised.cuda_fault and run.backend_started:  # a backend launch faulted; it surfaces here
            stage = f"{run.stage} (a GPU fault surfaces at a later synchronisation)"
            outcome = ItemOutcome(problems=(Crash(stage, raised),), raised=raised)
        else:
            outcome = ItemOutcome.harness(run.stage, exc)
    return dataclasses.replace(outcome, duration_s=time.perf_counter() - start)


class _BackendFailed(Exception):
    """The backend raised: the item ends with this problem."""

    def __init__(self, problem: Problem, raised: Raised | None):
        super().__init__(problem)
        self.problem = problem
        self.raised = raised


@dataclasses.dataclass
class _Judged:
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
class _Draw:
    """One independent draw of one shape set: eager's inputs and result, the backend's."""

    inputs: inputs.Inputs
    expected: Any
    actual: Any = None
    verdict: oracle.Verdict | None = None
    judged: _Judged | None = None  # what the oracle is given (cached)
    sqnr: float | None = None  # dB, of a block-scaled (MX/NVFP4) result against fp64


class _ItemRun:
    def __init__(
        self,
        instance: ScenarioInstance,
        backend: Backend,
        *,
        seed: int,
        device: str,
        target: str | None,
        poison: bool,
    ):
        self.instance = instance
        self.backend = backend
        self.seed = seed
        self.device = device
        self.target = target
        self.poison = poison
        self.stage = "setting up"  # what the harness was doing: names a harness fault
        self.metrics: dict[str, Any] = {}
        self.problems: list[Problem] = []
        self.compiled: Any = None
        self.frames = FrameWatch()  # what dynamo did during the backend's compile and calls
        # whether the backend was given anything yet: a CUDA fault before that is eager's (or
        # the harness's), never the backend's
        self.backend_started = False
        self._shape_index = 0  # the shape set being called (names unwritten outputs)

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

    def _backend(self, stage: str, call: Callable[[], Any]) -> Any:
        try:
            with self.frames.watching():
                return call()
        except Exception as exc:
            raised = Raised.of(exc)
            oom = memory.out_of_memory(exc)  # the numbers for the failure kind "out of memory"
            if oom is not None:
                self.metrics["out_of_memory"] = oom.metrics()
            problem: Problem = (
                Unsupported(stage, raised) if raised.not_implemented else Crash(stage, raised)
            )
            raise _BackendFailed(problem, raised) from None

    def _backend_call(self, stage: str, call: Callable[[], Any]) -> Any:
        """A further call of the backend during the checks: its time is the backend's (phase
        "call"), the rest of the checks' the harness's (a timeout there is not charged to it)."""
        progress.report("call")
        try:
            return self._backend(stage, call)
        finally:
            progress.report("check")

    def _call(self, stage: str, tensors: Sequence[Any], like: Any) -> tuple[Any, list[Problem]]:
        """The compiled function on `tensors`, with fresh memory poisoned and inputs guarded;
        `like` is eager's result (the sizes to poison, the pattern to look for)."""
        writes = OPS[self.instance.op].writes  # `out=` targets: the op's to write into
        guarded = [(n, t) for n, t in zip(self._names(), tensors, strict=True) if n not in writes]
        guard = integrity.InputGuard([n for n, _ in guarded], [t for _, t in guarded])
        poison = integrity.Poison(self.device, integrity.nbytes_of(like), enabled=self.poison)
        with poison:
            actual = self._backend(stage, lambda: self.compiled(*tensors))
        self.stage = "checking the inputs after the call"
        problems: list[Problem] = [
            InputsModified(
                m.name, _shape_of(m.shape), m.count, m.numel, m.first_index, m.before, m.after
            )
            for m in guard.modified()
        ]
        if self.poison:
            self.stage = "looking for unwritten outputs"
            problems += [
                Unwritten(self._shape_index, f.output, f.count, f.numel, f.first_index)
                for f in integrity.unwritten(like, actual, poison.patterns)
            ]
        return actual, problems

    def _names(self) -> tuple[str, ...]:
        return program.input_names(self.instance)

    def execute(self) -> ItemOutcome:
        instance = self.instance
        refusal = self._backend("supports()", self._refusal)
        if refusal is not None:  # declined: the item does not run
            declined = Unsupported("supports()", reason=refusal, backend=self.backend.name)
            return ItemOutcome(problems=(declined,))
        with program.numerics(instance):
            self.stage = "building the inputs"
            # eager's inputs and the backend's: the same values, drawn once, in storage apart
            copies = [
                inputs.build_copies(instance, i, self.seed, self.device)
                for i in range(len(instance.shape_sets))
            ]
            first = [eager_inputs for eager_inputs, _ in copies]
            backend_inputs = [backend_copy for _, backend_copy in copies]
            copies.clear()
            self._require_pristine("before eager ran", ours=False)
            self.stage = "running eager"
            eager = [self._eager(item_inputs) for item_inputs in first]
            if self.device == "cuda":  # a fault of eager's own launches surfaces here, not later
                torch.cuda.synchronize()
            if instance.checks.raises:
                return self._error_case(first[0], eager[0], backend_inputs[0])
            # (no loop variable here: one would keep eager's last inputs alive to the item's end)
            refused = next((i for i, (_, error) in enumerate(eager) if error is not None), None)
            if refused is not None:
                error = eager[refused][1]
                raise SuiteBug(self._contradiction("return a result", error, first[refused]))
            expected = [value for value, _ in eager]
            eager.clear()  # _normal_case owns the results now (it releases what it no longer needs)
            return self._normal_case(first, expected, backend_inputs)

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
            reason = self._backend("uncaptured()", uncaptured)
        else:
            try:
                reason = uncaptured(broke=True)
            except Exception:
                return ()
        return () if reason is None else (NotCompiled(str(reason)),)

    def _watched_uncaptured(self, *, broke: bool = False) -> str | None:
        return self.frames.uncaptured(self.compiled.compiles(), broke=broke)

    def _require_pristine(self, found: str, *, ours: bool) -> None:
        """Ends the item when PyTorch is not what eager must run (gemmconf.pristine): eager and
        the fp64 reference would agree with whatever the backend computes. `ours`: only this
        item's backend ran since the last clean look (made before eager ran), so it is blamed."""
        self.stage = "checking that PyTorch is as it was"
        changes = pristine.altered()
        if changes:
            if ours:
                pristine.blame(self._backend_name)
            altered = EagerAltered(self._backend_name, found, changes, pristine.culprit())
            raise _BackendFailed(altered, None)

    @property
    def _backend_name(self) -> str:
        """The item's backend as the problems it is charged with name it."""
        return str(getattr(self.backend, "name", type(self.backend).__name__))

    def _refusal(self) -> str | None:
        return refusal(self.backend, self.instance)

    def _eager(self, item_inputs: inputs.Inputs) -> tuple[Any, BaseException | None]:
        try:
            if self.stand_in is not None:
                return self.stand_in(item_inputs), None
            return self.fn(*item_inputs.tensors), None
        except Exception as exc:
            return None, exc

    def _contradiction(
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

    def _compile(self, example: inputs.Inputs) -> None:
        progress.report("compile")
        self.backend_started = True
        compiled = self._backend(
            "compile",
            lambda: self.backend.compile(
                self.fn, example.tensors, dynamic=self.instance.compile.dynamic
            ),
        )
        gaps = compiled_gaps(compiled)
        if gaps:  # said once, plainly, rather than as whichever use of it fails first
            returned = type(compiled).__name__
            article = "an" if returned[:1].lower() in "aeiou" else "a"
            problem = NotACompiled(self._backend_name, f"{article} {returned}", gaps)
            raise _BackendFailed(problem, None)
        self.compiled = compiled

    def _error_case(
        self,
        item_inputs: inputs.Inputs,
        eager: tuple[Any, BaseException | None],
        backend_inputs: inputs.Inputs,
    ) -> ItemOutcome:
        wanted, match = self.instance.checks.raises, self.instance.checks.raises_match
        error = eager[1]
        expectation = f"raise {wanted}" + (f" matching {match!r}" if match else "")
        if (
            error is None
            or Raised.of(error).type_name != wanted
            or (match is not None and not re.search(match, str(error)))
        ):
            raise SuiteBug(self._contradiction(expectation, error, item_inputs))
        expected = Raised.of(error).portable()
        progress.report("compile")
        self.backend_started = True
        try:
            compiled = self.backend.compile(
                self.fn, backend_inputs.tensors, dynamic=self.instance.compile.dynamic
            )
            value = compiled(*backend_inputs.tensors)
        except Exception as exc:
            got = Raised.of(exc)
            self.metrics["raised"] = got.type_name
            exact = got.type_name == expected.type_name and not got.not_implemented
            if exact and (match is None or re.search(match, got.message)):
                return ItemOutcome(raised=got, metrics=self.metrics)
            return ItemOutcome(
                problems=(WrongError(expected, match, got),), raised=got, metrics=self.metrics
            )
        if self.instance.checks.raises_or_correct:
            return self._result_beyond_eager(item_inputs, value)
        return ItemOutcome(
            problems=(WrongError(expected, match, None, _describe_value(value)),),
            metrics=self.metrics,
        )

    def _result_beyond_eager(self, item_inputs: inputs.Inputs, value: Any) -> ItemOutcome:
        """An error scenario whose rejection is eager's own limit (`raises: {or_correct:
        true}`), where the backend returned a result: it passes when the result is right,
        judged against fp64 alone with eager's result stood in for by the fp64 program's,
        rounded to the result dtype (`emulation.rounded_reference`), as for an item eager has no
        kernel for. One draw is judged: a failure is not confirmed on further draws."""
        instance = self.instance
        self.metrics["eager_rejected"] = 1
        self.stage = "computing the fp64 reference"
        rounded = emulation.rounded_reference(instance, self.device)
        assert rounded is not None and self.reference_fn is not None  # the loader's rule
        reference = chunked.Evaluator(instance, item_inputs, self.device)(self.reference_fn)
        expected = rounded(item_inputs)
        policy = self._policy(expected)
        self.stage = "judging the values"
        verdict = oracle.judge(
            expected,
            value,
            reference,
            k=item_inputs.k,
            policy=None if policy is None else oracle.without_eager(policy),
            strides=_fixed_strides(instance),
            k_name=item_inputs.k_name,
        )
        self.metrics.update(_metrics([verdict]))
        if verdict.passed:
            return ItemOutcome(verdicts=(verdict,), metrics=self.metrics)
        failure = NumericFailure(0, _shape(item_inputs), item_inputs.describe(), verdict)
        return ItemOutcome(
            problems=(failure,),
            verdicts=(verdict,),
            metrics=self.metrics,
            notes=(BEYOND_EAGER_NOTE,),
        )

    def _normal_case(
        self, first: list[inputs.Inputs], expected: list[Any], backend_inputs: list[inputs.Inputs]
    ) -> ItemOutcome:
        instance = self.instance
        if instance.compile.mode == "mark_dynamic":
            mark_dynamic_dims(instance, backend_inputs[0])
        self._compile(backend_inputs[0])
        draws: list[list[_Draw]] = []
        for index, item_inputs in enumerate(backend_inputs):
            if index:
                progress.report("call")
            self._shape_index = index
            actual, problems = self._call(
                f"the call on shape set {index} ({_shape(item_inputs)})",
                item_inputs.tensors,
                expected[index],
            )
            self.problems += problems
            draws.append([_Draw(first[index], expected[index], actual)])
        first.clear()  # the draws hold eager's inputs and results from here on
        expected.clear()

        progress.report("check")
        compiles = self._backend("compiles()", lambda: self.compiled.compiles())
        budget = compile_budget(instance)
        self.metrics["recompiles"] = max(0, compiles - 1)
        self.metrics["compiles"] = compiles
        self.problems[:0] = self.not_compiled()  # first: it explains whatever else went wrong
        kernel_stats = getattr(self.compiled, "kernel_stats", None)  # optional
        if kernel_stats is not None:
            self.metrics.update(self._backend("kernel_stats()", kernel_stats))

        verdicts = []
        large_first = large(instance, draws[0][0].inputs.dims)  # shape set 0 past the threshold
        if instance.checks.numeric != "none":
            for index in range(len(backend_inputs)):
                verdicts.append(self._judge_shape_set(index, draws[index]))
            sqnr = [d[0].sqnr for d in draws if d[0].sqnr is not None]
            if sqnr:
                self.metrics["sqnr_db"] = min(sqnr)  # block-scaled results (gemmconf.emulation)
            if not large_first:
                self._check_stale(draws[0])
        self.metrics.update(_metrics(verdicts))
        if self.stand_in is not None:
            self.metrics["eager_emulated"] = 1  # eager had no kernel: judged against fp64 alone
        if self.device == "cuda" and instance.checks.numeric != "none":
            self._check_side_stream(backend_inputs[0], draws[0][0])
        if instance.checks.deterministic:
            self._check_deterministic(backend_inputs[0], draws[0][0])
        if instance.checks.batch_invariant:
            self._check_batch_invariant(backend_inputs[0], draws[0][0])
        if instance.checks.numeric != "none" and large_first:
            self._check_stale_bitwise(draws[0][0])  # last: it releases eager's first shape set

        if compiles > budget:
            self.problems.append(
                Recompiled(
                    compiles,
                    budget,
                    tuple(_shape_text(s) for s in instance.shape_sets),
                    instance.compile.mode,
                )
            )
        code_checks, excerpt = self._code_checks()
        notes: tuple[str, ...] = ()
        if self.stand_in is not None and any(isinstance(p, NumericFailure) for p in self.problems):
            notes = (EMULATED_NOTE,)
        k_tail = self._k_tail_note(draws)
        if k_tail is not None:
            notes += (k_tail,)
        return ItemOutcome(
            notes=notes,
            problems=tuple(self.problems),
            verdicts=tuple(verdicts),
            code_checks=code_checks,
            compiles=compiles,
            metrics=self.metrics,
            code_excerpt=excerpt,
        )

    def _draw(self, index: int, draw: int) -> _Draw:
        """Draw `draw` of shape set `index`: fresh values, eager's result, the backend's."""
        self.stage = "building the inputs"
        eager_inputs, backend_inputs = inputs.build_copies(
            self.instance, index, self.seed, self.device, draw=draw
        )
        self.stage = "running eager"
        expected, error = self._eager(eager_inputs)
        if error is not None:
            raise SuiteBug(self._contradiction("return a result", error, eager_inputs))
        self._shape_index = index
        progress.report("call")
        actual, problems = self._call(
            f"the call on shape set {index} (draw {draw}: fresh values, {_shape(eager_inputs)})",
            backend_inputs.tensors,
            expected,
        )
        progress.report("check")
        # one finding of a kind is enough: the first draw's already says it
        kinds_seen = {type(q) for q in self.problems}
        self.problems += [p for p in problems if type(p) not in kinds_seen]
        return _Draw(eager_inputs, expected, actual)

    def _judge_shape_set(self, index: int, drawn: list[_Draw]) -> oracle.Verdict:
        self._require_pristine(
            f"after the backend's calls, before judging shape set {index}", ours=True
        )
        numel = sum(t.numel() for t in integrity.tensors_of(drawn[0].expected))
        per_judgment = judgment_draws(self.instance, index, drawn[0].inputs.dims, numel)
        next_draw = len(drawn)
        while len(drawn) < per_judgment:
            drawn.append(self._draw(index, next_draw))
            next_draw += 1
        first = self._judge(drawn)
        rounds = [first]
        while _marginal(first) and _undecided(rounds):
            batch = []
            for _ in range(per_judgment):
                batch.append(self._draw(index, next_draw))
                next_draw += 1
            rounds.append(self._judge(batch))
            drawn = [*drawn, *batch]
        failed_rounds = [v for v in rounds if not v.passed]
        draws_failed = sum(1 for d in drawn if d.verdict is not None and not d.verdict.passed)
        self.metrics["draws"] = self.metrics.get("draws", 0) + len(drawn)
        self.metrics["draws_failed"] = self.metrics.get("draws_failed", 0) + draws_failed
        deciding = failed_rounds[0] if len(failed_rounds) * 2 > len(rounds) else first
        if len(failed_rounds) * 2 > len(rounds):
            self.problems.append(
                NumericFailure(
                    index,
                    _shape(drawn[0].inputs),
                    drawn[0].inputs.describe(),
                    deciding,
                    draws=len(drawn),
                    draws_failed=draws_failed,
                    rounds=len(rounds),
                    rounds_failed=len(failed_rounds),
                )
            )
        elif not first.passed:
            deciding = next(v for v in rounds if v.passed)
        return deciding

    def _judge(self, drawn: list[_Draw]) -> oracle.Verdict:
        """One judgment over draws: each draw's own (attributes, strides), then, for small
        outputs, all values pooled as one output, so that a few elements per draw add up to
        many; a large output's draws are judged each on its own."""
        numel = sum(t.numel() for t in integrity.tensors_of(drawn[0].expected))
        verdicts = []
        for draw in drawn:
            if draw.verdict is None:
                draw.verdict = self._judge_one(draw)
                if numel >= DRAW_ELEMENTS:
                    draw.judged = None  # judged on its own: its fp64 tensors are not needed again
            verdicts.append(draw.verdict)
        attributes_failed = [v for v in verdicts if v.attributes_failed]
        if attributes_failed:
            return attributes_failed[0]
        if len(drawn) == 1 or numel >= DRAW_ELEMENTS:
            failed = [v for v in verdicts if not v.passed]
            return failed[0] if failed else max(verdicts, key=lambda v: v.err_ratio or 0.0)
        self.stage = "judging the pooled draws"
        parts = [self._judgment_inputs(d) for d in drawn]
        pooled = _Judged(
            *(_stack([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(_Judged))
        )
        return oracle.judge(
            pooled.expected,
            pooled.actual,
            pooled.reference,
            k=drawn[0].inputs.k,
            policy=self._policy(drawn[0].expected),
            magnitude=pooled.magnitude,
            rounding=pooled.rounding,
            intermediate=pooled.intermediate,
            names=_output_names(self.instance),
            k_name=drawn[0].inputs.k_name,
        )

    def _k_tail_note(self, draws: list[list[_Draw]]) -> str | None:
        """A failed shape set's result that is, to a tenth of its error, the product without
        K's last r elements (K - r a multiple of one of K_TAIL_STEPS): the note that says so.
        A wrong-values reason alone ("err_ratio 7e+05") does not point at K; a kernel that
        steps K by a tile and skips the remainder is a common bug. None otherwise, and for
        backward scenarios, results that are not one tensor, and items past K_TAIL_MAX_FLOPS."""
        instance = self.instance
        failure = next((p for p in self.problems if isinstance(p, NumericFailure)), None)
        if failure is None or self.reference_fn is None or instance.backward:
            return None
        draw = draws[failure.shape_set][0]
        item_inputs, actual = draw.inputs, draw.actual
        k = item_inputs.dims.get("K", 0)
        if item_inputs.reference is None or k < 2:
            return None
        if not isinstance(actual, torch.Tensor) or not isinstance(draw.expected, torch.Tensor):
            return None
        if not actual.numel() or not (actual.is_floating_point() or actual.is_complex()):
            return None
        if OPS[instance.op].flops(item_inputs.dims) > K_TAIL_MAX_FLOPS:
            return None
        axes = {}  # input name -> the axis of K in its reference tensor
        for operand in instance.operands:
            exprs = [str(e) for e in operand.shape]
            if "K" not in exprs or operand.name not in item_inputs.names:
                continue
            axes[operand.name] = inputs.reference_axis(operand, exprs.index("K"))
        if not axes:
            return None
        self.stage = "looking for a dropped K tail"
        got = actual.detach().to("cpu", torch.complex128 if actual.is_complex() else torch.float64)
        if tuple(got.shape) != tuple(draw.expected.shape):  # a wrong layout: told apart already
            return None

        def error_against(reference: torch.Tensor) -> float:
            return float((got - reference.to("cpu", got.dtype)).abs().max())

        def error(reference_inputs: tuple[torch.Tensor, ...]) -> float:
            changed = dataclasses.replace(item_inputs, reference=reference_inputs)
            return error_against(chunked.Evaluator(instance, changed, "cpu")(self.reference_fn))

        judged = draw.judged  # the judgment's fp64 reference, where the draw kept it
        if judged is not None and isinstance(judged.reference, torch.Tensor):
            full = error_against(judged.reference)
        else:
            full = error(item_inputs.reference)
        if not math.isfinite(full):  # NaN or Inf in the result: no tail explains that
            return None
        # a tail of all of K would leave zeros (or the bias): nothing tells that from a backend
        # that returns zeros, so some of K must have been summed
        for tail in sorted({k % step for step in K_TAIL_STEPS} - {0, k}):
            cut = []
            for name, tensor in zip(item_inputs.names, item_inputs.reference, strict=True):
                if name in axes:
                    tensor = tensor.clone()
                    tensor.narrow(axes[name], k - tail, tail).zero_()
                cut.append(tensor)
            cut_error = error(tuple(cut))
            if cut_error * K_TAIL_CLOSER <= full:
                return (
                    f"The result is the product without K's last "
                    f"{'element' if tail == 1 else f'{tail} elements'} (K = {k}, "
                    f"{k - tail} of them summed): its largest error is {cut_error:.3g} against "
                    f"that product and {full:.3g} against the whole. A K tail dropped, as by a "
                    "kernel that steps K and skips what is left."
                )
        return None

    def _judgment_inputs(self, draw: _Draw) -> _Judged:
        if draw.judged is None:
            draw.judged = self._compute_judgment_inputs(draw)
        return draw.judged

    def _compute_judgment_inputs(self, draw: _Draw) -> _Judged:
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
        policy = self._policy(expected)
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
        return _Judged(expected, actual, reference, magnitude, rounding, intermediate)

    def _judge_one(self, draw: _Draw) -> oracle.Verdict:
        judged = self._judgment_inputs(draw)
        self.stage = "judging the values"
        return oracle.judge(
            judged.expected,
            judged.actual,
            judged.reference,
            k=draw.inputs.k,
            policy=self._policy(judged.expected),
            magnitude=judged.magnitude,
            rounding=judged.rounding,
            intermediate=judged.intermediate,
            strides=_fixed_strides(self.instance),
            names=_output_names(self.instance),
            k_name=draw.inputs.k_name,
        )

    def _policy(self, expected: Any) -> oracle.Policy | None:
        instance = self.instance
        first = expected[0] if isinstance(expected, tuple | list) else expected
        if not isinstance(first, torch.Tensor):
            return None
        if instance.checks.numeric == "exact":
            return oracle.POLICIES["exact"]
        # inputs TF32 holds exactly: under TF32 (or bf16x3) every product is exact, so the fp32
        # row's accumulation bound is the whole allowance (a bf16 "medium" product errs 2^-9)
        compute = "fp32" if instance.values == "tf32_exact" else instance.dtype
        policy = oracle.policy_for(first.dtype, compute=compute, fast_accum=instance.use_fast_accum)
        if instance.checks.max_ratio is not None:
            policy = dataclasses.replace(policy, max_ratio=instance.checks.max_ratio)
        if instance.checks.numeric == "fp64" or self.stand_in is not None:
            policy = oracle.without_eager(policy)  # judged against fp64 alone
        return policy

    def _check_stale(self, drawn: list[_Draw]) -> None:
        """The second draw (fresh values, same shapes) must not return the first draw's answer."""
        self.stage = "comparing the fresh draw with the first"
        if len(drawn) < 2 or drawn[1].verdict is None or drawn[1].verdict.passed:
            return
        if drawn[0].verdict is None or not drawn[0].verdict.passed:
            return  # wrong from the start: not a stale answer
        if not any(t.numel() for t in integrity.tensors_of(drawn[0].actual)):
            return
        if any(isinstance(p, Unwritten) for p in self.problems):
            return  # two outputs full of the poison pattern are equal: that is not a cache
        earlier, later = drawn[0], drawn[1]
        first = integrity.tensors_of(earlier.actual)
        if first and _bitwise_equal(first, integrity.tensors_of(later.actual)):
            self.problems.insert(0, StaleResult(_shape(later.inputs), True, later.verdict))

    def _check_stale_bitwise(self, first: _Draw) -> None:
        """A large shape set's fresh-values check (FULL_STALE_CHECK_FLOPS): the backend's answer
        on a second draw must not be the first call's answer bit for bit. Eager's inputs and
        result of the first draw are released first (every check that judges them has run), so
        that the fresh inputs take their place in memory."""
        self.stage = "building the inputs"
        probe = _probe(first.inputs.tensors)
        first.inputs = first.expected = first.judged = None  # type: ignore[assignment]
        fresh = inputs.build(self.instance, 0, self.seed, self.device, draw=1)
        if _bitwise_equal(probe, _probe(fresh.tensors)):
            return  # the scenario's values do not change between draws
        actual = self._backend_call(
            f"the call on shape set 0 (draw 1: fresh values, {_shape(fresh)})",
            lambda: self.compiled(*fresh.tensors),
        )
        self.stage = "comparing the fresh draw with the first"
        if any(isinstance(p, Unwritten) for p in self.problems):
            return  # two outputs full of the poison pattern are equal: that is not a cache
        earlier = integrity.tensors_of(first.actual)
        if any(t.numel() for t in earlier) and _bitwise_equal(
            earlier, integrity.tensors_of(actual)
        ):
            self.problems.insert(0, StaleResult(_shape(fresh), True, None))

    def _check_side_stream(self, backend_inputs: inputs.Inputs, first: _Draw) -> None:
        self.stage = "calling on a side stream"
        tensors = backend_inputs.tensors
        actual = self._backend_call(
            "the call on a non-default CUDA stream",
            lambda: integrity.side_stream_call(lambda: self.compiled(*tensors)),
        )
        self.stage = "comparing the side stream's answer"
        if _bitwise_equal(integrity.tensors_of(first.actual), integrity.tensors_of(actual)):
            return  # the answer of the default stream, bit for bit (judged already)
        self.stage = "judging the side stream's answer"
        verdict = self._judge_one(_Draw(first.inputs, first.expected, actual))
        if not verdict.passed:
            self.problems.append(StreamMismatch(verdict))

    def _check_deterministic(self, backend_inputs: inputs.Inputs, first: _Draw) -> None:
        tensors = backend_inputs.tensors
        again = self._backend_call(
            "the second call on the same inputs", lambda: self.compiled(*tensors)
        )
        self.stage = "comparing two calls bit for bit"
        for a, b in zip(
            integrity.tensors_of(first.actual), integrity.tensors_of(again), strict=False
        ):
            diff = integrity.bitwise_diff(a, b)
            if diff is not None:
                self.problems.append(
                    Nondeterministic(
                        _shape(backend_inputs),
                        diff.count,
                        diff.numel,
                        diff.first_index,
                        diff.first,
                        diff.second,
                    )
                )
                return

    def _check_batch_invariant(self, backend_inputs: inputs.Inputs, first: _Draw) -> None:
        m = backend_inputs.dims.get("M", 0)
        for part in sorted({1, m // 2} - {0, m}):
            self.stage = "slicing the inputs to fewer rows"
            sliced = _rows(self.instance, backend_inputs, part)
            result = self._backend_call(
                f"the call with the first {part} row(s) (M={part})",
                lambda sliced=sliced: self.compiled(*sliced),
            )
            self.stage = "comparing rows between calls"
            for a, b in zip(
                integrity.tensors_of(first.actual), integrity.tensors_of(result), strict=False
            ):
                diff = integrity.bitwise_diff(a[..., :part, :], b)
                if diff is not None:
                    self.problems.append(
                        BatchVariant(
                            m,
                            part,
                            diff.count,
                            diff.numel,
                            diff.first_index,
                            diff.first,
                            diff.second,
                        )
                    )
                    return

    def _code_checks(self) -> tuple[tuple[codecheck.CodeCheckResult, ...], str | None]:
        blocks, not_run = applicable_checks(self.instance, self.backend.name, self.target)
        if not_run:
            self.metrics["code_checks_not_run"] = [block.record() for block in not_run]
        if not blocks:
            return (), None
        artifacts = self._backend("artifacts()", lambda: self.compiled.artifacts())
        self.stage = "running the code checks"
        results = tuple(codecheck.check_artifacts(blocks, artifacts, target=self.target))
        excerpt = None
        for check in results:
            if not check.passed:
                self.problems.append(CodeCheckFailed(check))
                text = artifacts.get(check.block.artifact)
                if text and excerpt is None:
                    excerpt = text[:4000]
        self.metrics["code_checks"] = len(blocks)
        self.metrics["code_check_engine"] = codecheck.default_engine().name
        return results, excerpt


def _undecided(rounds: list[oracle.Verdict]) -> bool:
    """Whether more rounds are needed: the first failed, and neither side has a majority of
    1 + CONFIRM_ROUNDS yet."""
    if rounds[0].passed:
        return False
    total = 1 + CONFIRM_ROUNDS
    failed = sum(1 for v in rounds if not v.passed)
    return failed * 2 <= total and (len(rounds) - failed) * 2 <= total


def _marginal(verdict: oracle.Verdict) -> bool:
    """A failure that further draws may not confirm: values off by a small factor only."""
    if any(not c.passed and c.name != "values" for c in verdict.checks):
        return False
    failed = [p for p in (verdict.parts or (verdict,)) if not p.passed]
    return all(
        p.err_ratio is not None and p.err_ratio <= CONFIRM_BELOW * (p.max_ratio or 1.0)
        for p in failed
    )


def _probe(tensors: Sequence[Any], elements: int = 4096) -> list[torch.Tensor]:
    """The first elements of each tensor: enough to tell two draws apart."""
    return [
        t.detach().reshape(-1)[:elements].clone()
        for t in tensors
        if isinstance(t, torch.Tensor) and t.is_contiguous()
    ]


def _bitwise_equal(first: Sequence[Any], second: Sequence[Any]) -> bool:
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


def _stack(values: list[Any]) -> Any:
    """Draws of one result stacked along a new leading dimension (leaf by leaf)."""
    first = values[0]
    if first is None:
        return None
    if isinstance(first, torch.Tensor):
        return torch.stack([v.to(first.device) for v in values])
    if isinstance(first, tuple | list):
        return type(first)(_stack([v[i] for v in values]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _stack([v[k] for v in values]) for k in first}
    return first


def _rows(instance: ScenarioInstance, item_inputs: inputs.Inputs, m: int) -> tuple[Any, ...]:
    """The inputs with only the first `m` rows of every dimension that is M."""
    shapes: dict[str, tuple[Any, ...]] = {}
    for operand in instance.operands:
        shape = list(operand.shape)
        if operand.layout == "t":
            shape[-2], shape[-1] = shape[-1], shape[-2]
        shapes[operand.name] = tuple(shape)
    addend = OPS[instance.op].addend
    if instance.bias is not None and addend is not None:
        shapes[addend.name] = instance.bias
    steps = [s for s in instance.epilogue if s.kind == "add_tensor"]
    for i, step in enumerate(steps):
        shapes[f"other{i}"] = tuple(step.arg)
    m_full = item_inputs.dims["M"]
    sliced = []
    for name, tensor in zip(item_inputs.names, item_inputs.tensors, strict=True):
        exprs = shapes.get(name)
        if name == "scale_a" and tensor.dim() >= 1 and tensor.shape[0] == m_full:
            exprs = ("M",) + ("_",) * (tensor.dim() - 1)
        if exprs is not None and len(exprs) == tensor.dim():
            for dim, expr in enumerate(exprs):
                if str(expr) == "M":
                    tensor = tensor.narrow(dim, 0, m)
        sliced.append(tensor)
    return tuple(sliced)


def _fixed_strides(instance: ScenarioInstance) -> bool | frozenset[tuple[int, ...]]:
    """The outputs whose strides the op's contract fixes: its result is eager's row-major one,
    or the `out=` target it writes (gemmconf.gemm.ops). A backward item returns the forward
    result, then gradients from torch.autograd.grad, whose layout nothing promises (inductor
    pads an fp32 gradient's rows; AccumulateGrad restrides only what lands in `.grad`): the
    result alone (oracle.judge)."""
    spec = OPS[instance.op]
    fixed = spec.row_major or bool(spec.writes)
    if fixed and instance.backward:
        return frozenset({(0,)})
    return fixed


def _output_names(instance: ScenarioInstance) -> dict[tuple[int, ...], str]:
    """What a backward item's outputs are: its forward result, then one gradient per input."""
    if not instance.backward:
        return {}
    gradients = program.differentiated(instance)
    return {(0,): "the forward result"} | {
        (i + 1,): f"the gradient of {name}" for i, name in enumerate(gradients)
    }


def _describe_value(value: Any) -> str:
    shape = getattr(value, "shape", None)
    return f"{type(value).__name__}{'' if shape is None else f' of shape {tuple(shape)}'}"


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


def _metrics(verdicts: list[oracle.Verdict]) -> dict[str, Any]:
    def worst(attr: str) -> float | None:
        values = [getattr(v, attr) for v in verdicts if getattr(v, attr) is not None]
        return max(values) if values else None

    metrics = {
        "max_abs_err": worst("max_abs_err"),
        "max_rel_err": worst("max_rel_err"),
        "err_ratio": worst("err_ratio"),
    }
    bars = [v.max_ratio for v in verdicts if v.err_ratio is not None and v.max_ratio is not None]
    if bars:
        metrics["max_ratio"] = min(bars)  # the bar err_ratio was held to
    eager_wrong = sum(v.eager_wrong for v in verdicts)
    if eager_wrong:
        metrics["eager_wrong"] = eager_wrong  # eager NaN/Inf elements fp64 refuted (oracle.py)
    return metrics


def _shape(item_inputs: inputs.Inputs) -> str:
    return _shape_text(tuple(item_inputs.dims.items()))


def _shape_of(shape: tuple[int, ...]) -> str:
    return "x".join(str(s) for s in shape) or "scalar"


def _shape_text(shape_set) -> str:
    return " ".join(f"{d}={s}" for d, s in shape_set)
