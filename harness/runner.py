"""One item's run: eager, the backend, the oracle, the recompile budget and the code checks.

This is the middle of the flow in docs/design.md, free of pytest so that `gemmconf explain` and the
self-tests can call it directly. The plugin turns an `ItemResult` into a pytest outcome.
"""

from __future__ import annotations

import dataclasses
import math
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import torch

from gemmconf import chunked, codecheck, emulation, inputs, memory, oracle, program, progress
from gemmconf.backends.base import Backend
from gemmconf.scenario import ScenarioInstance


@dataclass
class ItemResult:
    passed: bool
    problems: list[str] = field(default_factory=list)  # one paragraph per failed check
    metrics: dict[str, Any] = field(default_factory=dict)
    summary: str = ""  # the first line of a failure, standing on its own
    code_excerpt: str | None = None
    suite_error: bool = False  # the scenario itself is wrong (eager disagrees with the file)
    duration_s: float = 0.0


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


def _unwrap(error: BaseException) -> BaseException:
    """The error a backend raised, out of dynamo's BackendCompilerFailed wrapper."""
    inner = getattr(error, "inner_exception", None)
    while inner is not None and type(error).__name__ == "BackendCompilerFailed":
        error, inner = inner, getattr(inner, "inner_exception", None)
    return error


def _is_class(error: BaseException, name: str) -> bool:
    return any(cls.__name__ == name for cls in type(error).__mro__)


def run_item(
    instance: ScenarioInstance,
    backend: Backend,
    *,
    seed: int,
    device: str,
    target: str | None,
    repro: str,
) -> ItemResult:
    start = time.perf_counter()
    result = _run(instance, backend, seed=seed, device=device, target=target)
    result.duration_s = time.perf_counter() - start
    if not result.passed and not result.summary:
        result.summary = result.problems[0].splitlines()[0] if result.problems else "failed"
    if not result.passed:
        result.problems.append(f"Reproduce: {repro}")
    return result


def _run(
    instance: ScenarioInstance, backend: Backend, *, seed: int, device: str, target: str | None
) -> ItemResult:
    progress.report("prepare")
    fn = program.make_function(instance)
    reference_fn = program.make_reference(instance)
    rounding_fn = program.make_rounding_magnitude(instance)  # used only by input-rounding policies
    n_sets = len(instance.shape_sets)
    with program.numerics(instance):
        eager_inputs = [inputs.build(instance, i, seed, device) for i in range(n_sets)]
        expected, eager_errors = [], []
        stand_in = emulation.stand_in(instance, device)  # where eager has no kernel here
        for item_inputs in eager_inputs:
            try:
                expected.append(
                    fn(*item_inputs.tensors) if stand_in is None else stand_in(item_inputs)
                )
                eager_errors.append(None)
            except Exception as exc:
                expected.append(None)
                eager_errors.append(exc)
        if instance.checks.raises:
            return _run_error_case(instance, backend, fn, eager_errors, seed, device)
        for item_inputs, error in zip(eager_inputs, eager_errors, strict=True):
            if error is not None:
                raise SuiteBug(
                    f"eager rejected the inputs of {instance.id} "
                    f"({item_inputs.describe()}): {type(error).__name__}: {error}"
                )

        backend_inputs = [inputs.build(instance, i, seed, device) for i in range(n_sets)]
        if instance.compile.mode == "mark_dynamic":
            mark_dynamic_dims(instance, backend_inputs[0])
        result = ItemResult(passed=True)
        progress.report("compile")
        try:
            compiled = backend.compile(
                fn, backend_inputs[0].tensors, dynamic=instance.compile.dynamic
            )
        except Exception as exc:
            return _crashed(result, "compile", exc)
        actual = []
        for index, item_inputs in enumerate(backend_inputs):
            if index:
                progress.report("call")
            try:
                actual.append(compiled(*item_inputs.tensors))
            except Exception as exc:
                return _crashed(result, f"run on shape set {index} ({_shape(item_inputs)})", exc)

    progress.report("check")
    verdicts = []
    for index, item_inputs in enumerate(eager_inputs):
        reference = None
        # fp64 on the item's device (a 16384^2 reference takes a minute on a CPU) in pieces of
        # bounded size, and outputs too large to judge beside a GPU's other items judged on the
        # CPU: workers sharing a GPU share its memory (chunked.py, memory.py).
        judged_on = memory.judging_device(instance, item_inputs.dims, device)
        fp64 = chunked.Evaluator(instance, item_inputs, device, out_device=judged_on)
        if reference_fn is not None and instance.checks.numeric in ("auto", "fp64"):
            reference = fp64(reference_fn)
        policy = _policy(instance, expected[index])
        if stand_in is not None and policy is not None:
            policy = oracle.without_eager(policy)  # judged against fp64 alone
        if instance.checks.numeric == "none":
            continue
        judged_expected, judged_actual = memory.placed(judged_on, expected[index], actual[index])
        magnitude = rounding = None
        if reference is not None and _eager_suspect(judged_expected, reference):
            magnitude = fp64(reference_fn, transform=torch.abs)
        if (
            reference is not None
            and rounding_fn is not None
            and policy is not None
            and policy.input_rounding > 0
        ):
            rounding = fp64(rounding_fn)
        verdict = oracle.judge(
            judged_expected,
            judged_actual,
            reference,
            k=item_inputs.k,
            policy=policy,
            magnitude=magnitude,
            rounding=rounding,
        )
        verdicts.append(verdict)
        sqnr = emulation.block_scaled_metrics(instance, actual[index], reference).get("sqnr_db")
        if sqnr is not None:
            result.metrics["sqnr_db"] = min(sqnr, result.metrics.get("sqnr_db", math.inf))
        if not verdict.passed:
            result.passed = False
            what = f"shape set {index} ({_shape(item_inputs)}): {item_inputs.describe()}"
            result.problems.append(verdict.message(what=what))
    result.metrics.update(_metrics(verdicts))
    if stand_in is not None:
        result.metrics["eager_emulated"] = 1  # eager had no kernel: judged against fp64 alone

    compiles = compiled.compiles()
    budget = compile_budget(instance)
    result.metrics["recompiles"] = max(0, compiles - 1)
    result.metrics["compiles"] = compiles
    kernel_stats = getattr(compiled, "kernel_stats", None)  # optional: signatures, compiles
    if kernel_stats is not None:
        result.metrics.update(kernel_stats())
    if compiles > budget:
        result.passed = False
        result.problems.append(
            f"Recompiled: {compiles} compiles over {n_sets} shape set(s) "
            f"({', '.join(_shape_text(s) for s in instance.shape_sets)}); the scenario allows "
            f"{budget} (compile mode {instance.compile.mode})."
        )

    blocks, not_run = applicable_checks(instance, backend.name, target)
    if not_run:
        result.metrics["code_checks_not_run"] = [block.record() for block in not_run]
    if blocks:
        artifacts = compiled.artifacts()
        for check in codecheck.check_artifacts(blocks, artifacts, target=target):
            if not check.passed:
                result.passed = False
                result.problems.append(
                    f"Code check failed on '{check.block.artifact}':\n{check.diagnostic}"
                )
                text = artifacts.get(check.block.artifact)
                if text and result.code_excerpt is None:
                    result.code_excerpt = text[:4000]
        result.metrics["code_checks"] = len(blocks)
        result.metrics["code_check_engine"] = codecheck.default_engine().name
    if not result.passed:
        result.summary = result.problems[0].splitlines()[0]
    return result


def _run_error_case(instance, backend, fn, eager_errors, seed, device) -> ItemResult:
    wanted = instance.checks.raises
    error = eager_errors[0]
    if error is None or not _is_class(error, wanted):
        got = "returned normally" if error is None else f"raised {type(error).__name__}: {error}"
        raise SuiteBug(
            f"{instance.id} expects eager to raise {wanted}, but eager {got} on {device}"
        )
    backend_inputs = inputs.build(instance, 0, seed, device)
    result = ItemResult(passed=True)
    progress.report("compile")
    try:
        compiled = backend.compile(fn, backend_inputs.tensors, dynamic=instance.compile.dynamic)
        value = compiled(*backend_inputs.tensors)
    except Exception as exc:
        raised = _unwrap(exc)
        result.metrics["raised"] = type(raised).__name__
        if _is_class(raised, wanted):
            return result
        result.passed = False
        result.problems.append(
            f"Wrong exception: eager raises {type(error).__name__} ({_first_line(error)}), the "
            f"backend raised {type(raised).__name__}: {_first_line(raised)}"
        )
        return result
    result.passed = False
    shape = getattr(value, "shape", None)
    result.problems.append(
        f"No exception: eager raises {type(error).__name__} ({_first_line(error)}), the backend "
        f"returned {type(value).__name__}{'' if shape is None else f' of shape {tuple(shape)}'}"
    )
    return result


def _crashed(result: ItemResult, stage: str, exc: BaseException) -> ItemResult:
    error = _unwrap(exc)
    result.passed = False
    frames = "".join(traceback.format_exception(type(error), error, error.__traceback__)[-6:])
    result.problems.append(
        f"Backend raised during {stage}: {type(error).__name__}: {_first_line(error)}\n{frames}"
    )
    oom = memory.out_of_memory(error)  # the numbers for the failure kind "out of memory"
    if oom is not None:
        result.metrics["out_of_memory"] = oom.metrics()
    return result


def _policy(instance: ScenarioInstance, expected: Any) -> oracle.Policy | None:
    first = expected[0] if isinstance(expected, tuple | list) else expected
    if not isinstance(first, torch.Tensor):
        return None
    if instance.checks.numeric == "exact":
        return oracle.POLICIES["exact"]
    policy = oracle.policy_for(
        first.dtype, compute=instance.dtype, fast_accum=instance.use_fast_accum
    )
    if instance.checks.max_ratio is not None:
        policy = dataclasses.replace(policy, max_ratio=instance.checks.max_ratio)
    if instance.checks.numeric == "fp64":
        policy = oracle.without_eager(policy)
    return policy


def _eager_suspect(expected: Any, reference: Any) -> bool:
    """Whether eager has NaN/Inf where the fp64 reference is finite: only then is the reference
    of the inputs' magnitudes worth computing (the oracle decides whether it refutes eager)."""
    if isinstance(expected, torch.Tensor) and isinstance(reference, torch.Tensor):
        if not expected.is_floating_point() or expected.shape != reference.shape:
            return False
        finite = torch.isfinite(reference.to(expected.device))
        return bool((~torch.isfinite(expected.float()) & finite).any())  # fp8: no isfinite
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
    eager_wrong = sum(v.eager_wrong for v in verdicts)
    if eager_wrong:
        metrics["eager_wrong"] = eager_wrong  # eager NaN/Inf elements fp64 refuted (oracle.py)
    return metrics


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else "(no message)"


def _shape(item_inputs: inputs.Inputs) -> str:
    return _shape_text(tuple(item_inputs.dims.items()))


def _shape_text(shape_set) -> str:
    return " ".join(f"{d}={s}" for d, s in shape_set)
