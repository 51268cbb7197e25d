"""One item's run: eager, the backend's compile and first calls, then the checks
(gemmconf.checks) in their order, into an `ItemOutcome` (gemmconf.outcome).

This is the middle of the flow in docs/design.md, free of pytest so that `gemmconf explain` and the
self-tests can call it directly. The harness never makes up the backend's answer: what the
backend returned or raised is what is judged, and an exception of the harness's own (its
reference, inputs, oracle) is a `HarnessFault`, never the backend's failure.

An error scenario (`raises`) is a run of its own: the backend must raise what eager raises.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import torch

from gemmconf import chunked, emulation, inputs, oracle, pristine, program, progress
from gemmconf.backends.base import Backend, compiled_gaps, for_item, refusal
from gemmconf.backends.dynamo import skip_guard_latency_profile
from gemmconf.checks import CALL_GUARDS, CHECKS, Check, Findings, settle_computed_by
from gemmconf.checks.values import verdict_metrics
from gemmconf.item import (
    BackendFailed,
    Draw,
    EagerAnswer,
    ItemRun,
    SuiteBug,
    fixed_strides,
    shape,
)
from gemmconf.outcome import (
    Crash,
    ItemOutcome,
    NotACompiled,
    NumericFailure,
    Raised,
    Unsupported,
    WrongError,
)
from gemmconf.scenario import ScenarioInstance, patterns

# beside a numeric failure of an error scenario that allows a result (raises.or_correct)
BEYOND_EAGER_NOTE = (
    'Eager rejects this call, where the op allows it, and the backend returned a result: "eager" '
    "above is a stand-in (the fp64 reference's program run in fp32, rounded to the output "
    "dtype), and the result was judged against fp64 alone (metrics.eager_rejected). Raising "
    "the class eager raises would pass too."
)


def mark_dynamic_dims(instance: ScenarioInstance, item_inputs: inputs.Inputs) -> None:
    """Apply `torch._dynamo.mark_dynamic` to every tensor dim named in compile.dims."""
    for operand in instance.operands:
        if operand.name not in item_inputs.names:
            continue
        tensor = item_inputs.tensors[item_inputs.names.index(operand.name)]
        dims = list(operand.shape)
        if operand.layout == "t":  # stored transposed
            dims[-2], dims[-1] = dims[-1], dims[-2]
        for index, expr in enumerate(dims):
            if str(expr) in instance.compile.dims:
                torch._dynamo.mark_dynamic(tensor, index)


def run_item(
    instance: ScenarioInstance,
    backend: Backend,
    *,
    seed: int,
    device: str,
    target: str | None,
    repro: str = "",  # kept for callers of the old signature; the renderer adds it
    poison: bool = True,
    checks: Sequence[Check] = CHECKS,
) -> ItemOutcome:
    """Run one item and say what happened. Never raises for the backend's or its own faults."""
    start = time.perf_counter()
    skip_guard_latency_profile()
    item = ItemRun(
        instance,
        for_item(backend, instance),
        seed=seed,
        device=device,
        target=target,
        poison=poison,
        guards=CALL_GUARDS,
    )
    try:
        item.prepare()
        outcome = _execute(item, checks)
    except BackendFailed as failed:
        if failed.raised is None or not failed.raised.cuda_fault:  # eager can still run
            settle_computed_by(item)  # the observed call against eager, as the checks would
        # eager's own error, if nothing compiled
        problems = (*item.not_compiled(failed=True), failed.problem)
        outcome = ItemOutcome(problems=problems, raised=failed.raised, metrics=item.metrics)
    except SuiteBug as bug:
        outcome = ItemOutcome(problems=(bug.args[0],), metrics=item.metrics)
    except Exception as exc:
        raised = Raised.of(exc)
        if raised.cuda_fault and item.backend_started:  # a backend launch faulted; it surfaces here
            stage = f"{item.stage} (a GPU fault surfaces at a later synchronisation)"
            outcome = ItemOutcome(problems=(Crash(stage, raised),), raised=raised)
        else:
            outcome = ItemOutcome.harness(item.stage, exc)
    return dataclasses.replace(
        _owned_if_torch_changed(outcome),
        duration_s=time.perf_counter() - start,
        computed_by=item.computed_by,
        through_dynamo=item.frames.frames > 0,
    )


def _owned_if_torch_changed(outcome: ItemOutcome) -> ItemOutcome:
    """A failure before the backend got the graph, in a process whose devices the backend
    changed (gemmconf.pristine.device_changed), says so: it is the backend's own."""
    if not outcome.before_backend:
        return outcome
    changed = pristine.device_changed()
    return dataclasses.replace(outcome, device_changed=changed) if changed else outcome


def _execute(item: ItemRun, checks: Sequence[Check]) -> ItemOutcome:
    instance = item.instance
    declined = item.backend_raises("supports()", lambda: refusal(item.backend, instance))
    if declined is not None:  # declined: the item does not run
        problem = Unsupported("supports()", reason=declined, backend=item.backend.name)
        return ItemOutcome(problems=(problem,))
    with program.numerics(instance):
        item.stage = "building the inputs"
        # eager's inputs and the backend's: the same values, drawn once, in storage apart
        copies = [
            inputs.build_copies(instance, i, item.seed, item.device)
            for i in range(len(instance.shape_sets))
        ]
        first = [eager_inputs for eager_inputs, _ in copies]
        backend_inputs = [backend_copy for _, backend_copy in copies]
        copies.clear()
        item.require_pristine("before eager ran", ours=False)
        item.stage = "running eager"
        eager = [item.eager(item_inputs) for item_inputs in first]
        if item.device == "cuda":  # a fault of eager's own launches surfaces here, not later
            torch.cuda.synchronize()
        if instance.checks.raises:
            return _error_case(item, first[0], eager[0], backend_inputs[0])
        # (no loop variable here: one would keep eager's last inputs alive to the item's end)
        refused = next((i for i, (_, error) in enumerate(eager) if error is not None), None)
        if refused is not None:
            error = eager[refused][1]
            raise SuiteBug(item.contradiction("return a result", error, first[refused]))
        expected = [value for value, _ in eager]
        eager.clear()  # the draws own the results now (the checks release what they are done with)
        _first_calls(item, first, expected, backend_inputs)
        return _checked(item, checks)


def _first_calls(
    item: ItemRun, first: list[inputs.Inputs], expected: list[Any], backend_inputs: list[Any]
) -> None:
    """Compile on shape set 0, then call once per shape set: the draws the checks start from."""
    if item.instance.compile.mode == "mark_dynamic":
        mark_dynamic_dims(item.instance, backend_inputs[0])
    _compile(item, backend_inputs[0])
    item.backend_inputs = backend_inputs
    for index, item_inputs in enumerate(backend_inputs):
        if index:
            progress.report("call")
        item.shape_index = index
        actual, problems = item.call(
            f"the call on shape set {index} ({shape(item_inputs)})",
            item_inputs.tensors,
            EagerAnswer(first[index], expected[index]),
        )
        item.problems += problems
        item.draws.append([Draw(first[index], expected[index], actual)])
    first.clear()  # the draws hold eager's inputs and results from here on
    expected.clear()
    progress.report("check")
    compiled = item.compiled
    item.compiles = item.backend_raises("compiles()", lambda: compiled.compiles())
    frames = getattr(compiled, "graph_frames", None)  # TorchCompiled's: graphs' frames
    item.graph_frames = item.backend_raises("graph_frames()", frames) if frames else None
    item.metrics["recompiles"] = max(0, item.compiles - 1)
    item.metrics["compiles"] = item.compiles


def _compile(item: ItemRun, example: inputs.Inputs) -> None:
    progress.report("compile")
    item.backend_started = True
    compiled = item.backend_raises(
        "compile",
        lambda: item.backend.compile(
            item.fn, example.tensors, dynamic=item.instance.compile.dynamic
        ),
    )
    gaps = compiled_gaps(compiled)
    if gaps:  # said once, plainly, rather than as whichever use of it fails first
        returned = type(compiled).__name__
        article = "an" if returned[:1].lower() in "aeiou" else "a"
        raise BackendFailed(NotACompiled(item.backend_name, f"{article} {returned}", gaps), None)
    item.compiled = compiled


def _checked(item: ItemRun, checks: Sequence[Check]) -> ItemOutcome:
    """The checks in their order, each given what the ones before it found."""
    notes: list[str] = []
    verdicts: list[oracle.Verdict] = []
    code: Findings = Findings()
    for check in checks:
        if not check.applies(item):
            continue
        found = check.run(item)
        item.problems[:0] = found.lead
        item.problems += found.problems
        item.metrics.update(found.metrics)
        notes += found.notes
        verdicts += found.verdicts
        if found.code_checks or found.code_excerpt:
            code = found
    return ItemOutcome(
        notes=tuple(notes),
        problems=tuple(item.problems),
        verdicts=tuple(verdicts),
        code_checks=code.code_checks,
        compiles=item.compiles,
        metrics=item.metrics,
        code_excerpt=code.code_excerpt,
    )


def _error_case(
    item: ItemRun,
    item_inputs: inputs.Inputs,
    eager: tuple[Any, BaseException | None],
    backend_inputs: inputs.Inputs,
) -> ItemOutcome:
    """An error scenario: the backend must raise the class eager raised (and match `match`)."""
    wanted, match = item.instance.checks.raises, item.instance.checks.raises_match
    error = eager[1]
    expectation = f"raise {wanted}" + (f" matching {match!r}" if match else "")
    if (
        error is None
        or Raised.of(error).type_name != wanted
        or (match is not None and not patterns.search(match, str(error)))
    ):
        raise SuiteBug(item.contradiction(expectation, error, item_inputs))
    expected = Raised.of(error).portable()
    progress.report("compile")
    item.backend_started = True
    try:
        with item.frames.watching():  # whether dynamo traced it (the torch.compile layer)
            compiled = item.backend.compile(
                item.fn, backend_inputs.tensors, dynamic=item.instance.compile.dynamic
            )
            value = compiled(*backend_inputs.tensors)
    except Exception as exc:
        got = Raised.of(exc)
        item.metrics["raised"] = got.type_name
        exact = got.type_name == expected.type_name and not got.not_implemented
        if exact and (match is None or patterns.search(match, got.message)):
            return ItemOutcome(raised=got, metrics=item.metrics)
        return ItemOutcome(
            problems=(WrongError(expected, match, got),), raised=got, metrics=item.metrics
        )
    if item.instance.checks.raises_or_correct:
        return _result_beyond_eager(item, item_inputs, value)
    return ItemOutcome(
        problems=(WrongError(expected, match, None, _describe_value(value)),),
        metrics=item.metrics,
    )


def _result_beyond_eager(item: ItemRun, item_inputs: inputs.Inputs, value: Any) -> ItemOutcome:
    """An error scenario whose rejection is eager's own limit (`raises: {or_correct: true}`),
    where the backend returned a result: it passes when the result is right, judged against
    fp64 alone with eager's result stood in for by the fp64 program's, rounded to the result
    dtype (`emulation.rounded_reference`), as for an item eager has no kernel for. One draw is
    judged: a failure is not confirmed on further draws."""
    instance = item.instance
    item.metrics["eager_rejected"] = 1
    item.stage = "computing the fp64 reference"
    rounded = emulation.rounded_reference(instance, item.device)
    assert rounded is not None and item.reference_fn is not None  # the loader's rule
    reference = chunked.Evaluator(instance, item_inputs, item.device)(item.reference_fn)
    expected = rounded(item_inputs)
    policy = item.policy(expected)
    item.stage = "judging the values"
    verdict = oracle.judge(
        expected,
        value,
        reference,
        k=item_inputs.k,
        policy=None if policy is None else oracle.without_eager(policy),
        strides=fixed_strides(instance),
        k_name=item_inputs.k_name,
    )
    item.metrics.update(verdict_metrics([verdict]))
    if verdict.passed:
        return ItemOutcome(verdicts=(verdict,), metrics=item.metrics)
    failure = NumericFailure(0, shape(item_inputs), item_inputs.describe(), verdict)
    return ItemOutcome(
        problems=(failure,),
        verdicts=(verdict,),
        metrics=item.metrics,
        notes=(BEYOND_EAGER_NOTE,),
    )


def _describe_value(value: Any) -> str:
    dims = getattr(value, "shape", None)
    return f"{type(value).__name__}{'' if dims is None else f' of shape {tuple(dims)}'}"
