"""The oracle's judgment: `judge` walks nested outputs pairwise, makes every attribute and value
check it can, and returns a `Verdict`. The rule it applies is gemmconf.oracle's docstring; the
tolerances are gemmconf.oracle.policy's rows."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import torch

from gemmconf.oracle.policy import POLICIES, Policy, policy_for
from gemmconf.oracle.verdict import Check, Verdict, num_text, path_text

# Values judged at once: an output is read in pieces of this many elements, so the oracle's fp64
# temporaries (about ten piece-sized values) do not grow with the output (module docstring).
PIECE_ELEMENTS = 1 << 24


# Relative errors are measured against max(|ref_i|, 1% of RMS(ref)): near-zero outputs would
# otherwise report meaningless huge relative errors.
_REL_GUARD = 0.01


# An fp32 output of at least this many elements whose values all fit a 16-bit float, where
# fp64's mostly do not, was computed or stored in that float and widened (`_precision_check`).
PRECISION_MIN_ELEMENTS = 64


_NARROW = (("bf16", torch.bfloat16), ("fp16", torch.float16))


def judge(
    expected: Any,
    actual: Any,
    reference: Any = None,
    *,
    k: int,
    policy: Policy | None = None,
    magnitude: Any = None,
    rounding: torch.Tensor | None = None,
    intermediate: Any = None,
    strides: bool | Collection[tuple[Any, ...]] = False,
    names: Mapping[tuple[Any, ...], str] | None = None,
    k_name: str = "K",
) -> Verdict:
    """Judge `actual` (backend) against `expected` (eager) and the fp64 `reference`.

    Each may be a tensor, None, or a (nested) tuple/list/dict of them. `k` is the GEMM's reduction
    length (it scales the floor). `policy` overrides `policy_for(expected.dtype)`; integer outputs
    are always judged exactly. `magnitude`, shaped like `reference`, lets the fp64 reference refute
    eager's NaN/Inf values (module docstring). `rounding`, for a single tensor output, is |alpha| *
    (|A| @ |B|): with a policy's `input_rounding` it bounds each element's input-rounding error
    (module docstring). `intermediate`, shaped like the outputs (a tensor, or a sequence of them),
    is the most that rounding the program's intermediate results can cost each element
    (`gemmconf.program.make_intermediate_rounding`); it is added to the element's ulp. With
    `strides`, an output must be row-major contiguous wherever eager's is (the op's contract fixes
    the layout: mm, addmm, bmm and their kin); a failure is a "strides" check. `strides` is True for
    every output, or the paths of the outputs the contract covers (a backward item's forward result,
    path (0,), and not its gradients, whose layout no contract fixes). `names` says what the output
    at a path is (a backward item's gradients); messages name it beside the path. `k_name` says what
    `k` is where it is not the GEMM's K (a backward item's longest sum, "longest sum 64").
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    walk = _Walk(k, policy, strides)
    walk(expected, actual, reference, magnitude, (), rounding, intermediate)
    leaves = walk.leaves
    if names:
        leaves = [replace(v, label=names.get(v.output, "")) for v in leaves]
    if k_name != "K":
        leaves = [replace(v, k_name=k_name) for v in leaves]
    if len(leaves) == 1 and leaves[0].output == ():
        return leaves[0]
    return _combine(tuple(leaves))


class _Walk:
    """Walks eager's outputs and the backend's pairwise, appending each leaf's verdict to
    `leaves`; what stays the same over the walk (K, the policy, which paths have fixed strides)
    is held here."""

    def __init__(
        self, k: int, policy: Policy | None, strides: bool | Collection[tuple[Any, ...]]
    ) -> None:
        self.k, self.policy, self.strides = k, policy, strides
        self.leaves: list[Verdict] = []

    def __call__(
        self,
        expected: Any,
        actual: Any,
        reference: Any,
        magnitude: Any,
        path: tuple[Any, ...],
        rounding: torch.Tensor | None = None,  # a single tensor output's (judge's docstring)
        intermediate: Any = None,  # shaped like the outputs (judge's docstring)
    ) -> None:
        if isinstance(expected, torch.Tensor):
            self._tensor(expected, actual, reference, magnitude, path, rounding, intermediate)
        elif expected is None or isinstance(expected, (bool, int, float, complex)):
            self._scalar(expected, actual, reference, path)
        elif isinstance(expected, Mapping):
            self._mapping(expected, actual, reference, magnitude, path)
        elif isinstance(expected, Sequence) and not isinstance(expected, (str, bytes)):
            self._sequence(expected, actual, reference, magnitude, path, intermediate)
        else:
            raise TypeError(f"cannot judge eager output of type {type(expected).__name__}")

    def _tensor(
        self,
        expected: torch.Tensor,
        actual: Any,
        reference: Any,
        magnitude: Any,
        path: tuple[Any, ...],
        rounding: torch.Tensor | None,
        intermediate: Any,
    ) -> None:
        if not isinstance(actual, torch.Tensor):
            self.leaves.append(_type_mismatch(expected, actual, path))
            return
        if reference is not None and not isinstance(reference, torch.Tensor):
            raise TypeError(f"reference for output {path_text(path)} is {type(reference).__name__}")
        fixed = self.strides is True or (self.strides is not False and path in self.strides)
        self.leaves.append(
            _judge_tensor(
                expected,
                actual,
                reference,
                self.k,
                self.policy,
                path,
                magnitude,
                rounding,
                intermediate,
                strides=fixed,
            )
        )

    def _scalar(self, expected: Any, actual: Any, reference: Any, path: tuple[Any, ...]) -> None:
        if type(actual) is not type(expected):
            self.leaves.append(_type_mismatch(expected, actual, path))
        elif expected is None:
            self.leaves.append(_verdict_of((Check("type", True, "", path),), path))
        else:
            # Python numbers (from `.item()`) carry no dtype; judge floats like fp32 outputs.
            policy = self.policy or (POLICIES["fp32"] if isinstance(expected, float) else None)
            e, a = _number_tensor(expected), _number_tensor(actual)
            ref = None if reference is None else _number_tensor(reference)
            self.leaves.append(_judge_tensor(e, a, ref, self.k, policy, path))

    def _mapping(
        self,
        expected: Mapping,
        actual: Any,
        reference: Any,
        magnitude: Any,
        path: tuple[Any, ...],
    ) -> None:
        if not isinstance(actual, Mapping):
            self.leaves.append(_type_mismatch(expected, actual, path))
            return
        if set(expected) != set(actual):
            missing = sorted(map(repr, set(expected) - set(actual)))
            extra = sorted(map(repr, set(actual) - set(expected)))
            message = f"The keys of the mappings do not match: missing {missing}, extra {extra}."
            self.leaves.append(_verdict_of((Check("keys", False, message, path),), path))
        for key in expected:
            if key in actual:
                ref = None if reference is None else reference[key]
                mag = None if magnitude is None else magnitude[key]
                self(expected[key], actual[key], ref, mag, (*path, key))

    def _sequence(
        self,
        expected: Sequence,
        actual: Any,
        reference: Any,
        magnitude: Any,
        path: tuple[Any, ...],
        intermediate: Any,
    ) -> None:
        if not isinstance(actual, Sequence) or isinstance(actual, (str, bytes)):
            self.leaves.append(_type_mismatch(expected, actual, path))
            return
        if reference is not None and len(reference) != len(expected):
            raise ValueError(
                f"reference has {len(reference)} outputs at {path_text(path)}, "
                f"eager {len(expected)}"
            )
        if len(actual) != len(expected):
            message = (
                f"The length of the sequences do not match: {len(actual)} != {len(expected)} "
                "(actual != expected)."
            )
            self.leaves.append(_verdict_of((Check("length", False, message, path),), path))
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            ref = None if reference is None else reference[i]
            mag = None if magnitude is None else magnitude[i]
            inter = None if intermediate is None else intermediate[i]
            self(e, a, ref, mag, (*path, i), None, inter)


def _number_tensor(x: Any) -> torch.Tensor:
    dtype = torch.complex128 if isinstance(x, complex) else torch.float64
    if isinstance(x, bool):
        dtype = torch.bool
    elif isinstance(x, int):
        dtype = torch.int64
    return torch.tensor(x, dtype=dtype)


def _type_mismatch(expected: Any, actual: Any, path: tuple[Any, ...]) -> Verdict:
    message = f"The types do not match: {type(actual)} != {type(expected)} (actual != expected)."
    return _verdict_of((Check("type", False, message, path),), path)


def _verdict_of(checks: tuple[Check, ...], path: tuple[Any, ...], numel: int = 0) -> Verdict:
    """A verdict made of checks alone: no values were compared."""
    return Verdict(
        passed=all(c.passed for c in checks),
        checks=checks,
        max_abs_err=None,
        max_rel_err=None,
        err_ratio=None,
        eager_abs_err=None,
        floor=None,
        allowed_abs_err=None,
        mismatches=0,
        numel=numel,
        worst_index=None,
        output=path,
    )


def _attribute_check(name: str, actual: Any, expected: Any, path: tuple[Any, ...]) -> Check:
    if actual == expected:
        return Check(name, True, "", path)
    # which side is which, in words (a TVM trial read "torch.float32 != torch.bfloat16" twice)
    message = f"The output's {name} is {actual}, where eager's is {expected}."
    return Check(name, False, message, path)


def _strides_check(expected: torch.Tensor, actual: torch.Tensor, path: tuple[Any, ...]) -> Check:
    """Row-major where eager is (dims of size 1 have no stride that matters)."""
    if (
        expected.layout != torch.strided
        or actual.layout != torch.strided
        or actual.shape != expected.shape
        or expected.numel() <= 1
        or not expected.is_contiguous()
        or actual.is_contiguous()
    ):
        return Check("strides", True, "", path)
    message = (
        f"The output's strides {tuple(actual.stride())} are not row-major: eager returns "
        f"{tuple(expected.stride())} for shape {tuple(expected.shape)}, and the op's contract "
        "fixes that layout."
    )
    return Check("strides", False, message, path)


def _judge_tensor(
    expected: torch.Tensor,
    actual: torch.Tensor,
    reference: torch.Tensor | None,
    k: int,
    policy: Policy | None,
    path: tuple[Any, ...],
    magnitude: torch.Tensor | None = None,
    rounding: torch.Tensor | None = None,
    intermediate: torch.Tensor | None = None,
    *,
    strides: bool = False,
) -> Verdict:
    checks = [
        Check("type", True, "", path),
        _attribute_check("shape", actual.shape, expected.shape, path),
        _attribute_check("dtype", actual.dtype, expected.dtype, path),
        _attribute_check("device", actual.device.type, expected.device.type, path),
        _attribute_check("layout", actual.layout, expected.layout, path),
    ]
    if strides:
        checks.append(_strides_check(expected, actual, path))
    if reference is not None and reference.shape != expected.shape:
        raise ValueError(
            f"reference shape {tuple(reference.shape)} != eager shape {tuple(expected.shape)} "
            f"for output {path_text(path)}: the harness built a wrong reference"
        )
    for name, bound in (("rounding", rounding), ("intermediate", intermediate)):
        if bound is not None and bound.shape != expected.shape:
            raise ValueError(
                f"{name} shape {tuple(bound.shape)} != eager shape {tuple(expected.shape)} "
                f"for output {path_text(path)}: the harness built a wrong {name} bound"
            )
    is_float = expected.is_floating_point() or expected.is_complex()
    if policy is None:
        policy = policy_for(expected.dtype)
    elif not is_float and not policy.exact:
        policy = policy_for(expected.dtype)  # integer outputs are always judged exactly
    common = {"policy": policy.name, "max_ratio": policy.max_ratio, "k": k, "output": path}
    numel = expected.numel()
    # Values are compared where shapes agree, even if dtype or device do not: the numbers help.
    comparable = checks[1].passed and numel > 0 and not (expected.is_meta or actual.is_meta)
    if checks[1].passed and numel == 0:
        checks.append(Check("values", True, "no elements to compare", path))
    elif comparable and {expected.layout, actual.layout} != {torch.strided}:
        checks.append(Check("values", False, "only strided tensors are compared", path))
        comparable = False
    if not comparable:
        return replace(_verdict_of(tuple(checks), path, numel), **common)
    actual = actual.detach().to(expected.device)
    expected = expected.detach()
    if policy.exact or not is_float:
        return _judge_exact(expected, actual, tuple(checks), common)
    narrow = (
        None
        if policy.name == "fp8_fast_accum"
        else _precision_check(expected, actual, reference, path)
    )
    if narrow is not None:
        checks.append(narrow)
    if reference is None:
        return _judge_against_eager(expected, actual, policy, k, tuple(checks), common)
    return _judge_against_reference(
        expected,
        actual,
        reference,
        policy,
        k,
        tuple(checks),
        common,
        magnitude,
        rounding,
        intermediate,
    )


def _precision_check(
    expected: torch.Tensor, actual: torch.Tensor, reference: torch.Tensor | None, path: tuple
) -> Check | None:
    """A float32 result whose every value is a bf16 (or fp16) value, where eager's are not and
    fp64's result mostly rounds to other fp32 values: the backend computed or stored it in the
    16-bit float and widened it. The tolerance alone can miss that: an item judged without
    eager (block-scaled fp8, MX, NVFP4) allows the error of Hopper's fp8 accumulation, which at
    K = 128 is larger than a bf16 rounding's (a trial's backend passed 20 such items so). None
    when the check does not apply or passes. Not applied under "fp8_fast_accum": fast
    accumulation may keep the sum in fewer bits, and the suite's model of it (the accumulator
    rounded to 10 mantissa bits, tests/planted_backends.py) leaves fp16 values. Where eager's
    result is itself a 16-bit float's values, only a coarser float is told (a bf16 result of an
    fp16 program), never one as fine or finer."""
    if actual.dtype != torch.float32 or expected.dtype != torch.float32:
        return None
    numel = actual.numel()
    if numel < PRECISION_MIN_ELEMENTS:
        return None
    flat = actual.reshape(-1)
    finite = sum(int(torch.isfinite(flat[where]).sum()) for _, where in pieces(numel))
    if finite < PRECISION_MIN_ELEMENTS:  # NaN and Inf are values of every float: no evidence
        return None
    # eager's own result may be a 16-bit float's values widened (a bf16 GEMM cast to float32):
    # a float no finer than that tells nothing (bf16's values in fp16's normal range are fp16's,
    # and a trial's bf16 item read "computed or stored in fp16" for eager's one fp16-subnormal)
    eager_within = [narrow for _, narrow in _NARROW if _all_fit(expected, narrow)]
    for name, narrow in _NARROW:
        if not _all_fit(actual, narrow) or any(
            torch.finfo(within).eps >= torch.finfo(narrow).eps for within in eager_within
        ):
            continue
        fits = None
        if reference is not None:
            fits = sum(
                int(_fits(reference.reshape(-1)[where].float(), narrow).sum())
                for _, where in pieces(numel)
            )
            if 2 * fits >= numel:  # the exact result is mostly such values: nothing to tell
                continue
        exact = "" if fits is None else f", and fp64's result rounds to one in {fits} of them"
        message = (
            f"The float32 result carries {name}'s precision only: all {numel} of its values are "
            f"{name} values, where eager's are not{exact}. It was computed or stored in {name} "
            "and widened to float32."
        )
        return Check("precision", False, message, path)
    return None


def _fits(values: torch.Tensor, narrow: torch.dtype) -> torch.Tensor:
    """Where float32 `values` are values of the narrower float (NaN and Inf count as such)."""
    return (values.to(narrow).to(values.dtype) == values) | ~torch.isfinite(values)


def _all_fit(tensor: torch.Tensor, narrow: torch.dtype) -> bool:
    flat = tensor.reshape(-1)
    return all(bool(_fits(flat[where], narrow).all()) for _, where in pieces(flat.numel()))


def _index(flat: int, shape: torch.Size) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return tuple(reversed(index))


def pieces(numel: int) -> Iterator[tuple[int, slice]]:
    """(offset, slice) of each piece of a flattened output: at most PIECE_ELEMENTS values each."""
    for start in range(0, numel, PIECE_ELEMENTS):
        yield start, slice(start, min(start + PIECE_ELEMENTS, numel))


class _Reader:
    """An output's tensors (eager's, the backend's, the fp64 bounds) flattened, read a piece at a
    time on the compute device in the work dtype. A tensor may be held elsewhere (a large fp64
    reference on the host): only its pieces move."""

    def __init__(self, device: torch.device, work: torch.dtype, **tensors: torch.Tensor | None):
        self.device, self.work = device, work
        self.flat = {n: t.detach().reshape(-1) for n, t in tensors.items() if t is not None}

    def __call__(self, name: str, piece: slice, dtype: torch.dtype | None = None) -> torch.Tensor:
        return self.flat[name][piece].to(device=self.device, dtype=dtype or self.work)


class _First:
    """The first element a mask selects over all pieces (its flat index and values there), and
    how many it selects."""

    def __init__(self) -> None:
        self.count = 0
        self.index: int | None = None
        self.values: tuple[Any, ...] = ()

    def add(self, mask: torch.Tensor, offset: int, *values: torch.Tensor) -> None:
        count = int(mask.sum())
        if count and self.index is None:
            first = int(mask.nonzero()[0])
            self.index = offset + first
            self.values = tuple(v[first].item() for v in values)
        self.count += count


class _Largest:
    """The flat index of the largest value over all pieces; the first one on ties, and a NaN
    above any number (torch.argmax's rule over the whole)."""

    def __init__(self) -> None:
        self.index = 0
        self.value: float | None = None

    def add(self, values: torch.Tensor, offset: int) -> int | None:
        """Take one piece; the index within it where a new largest value sits, else None."""
        local = int(values.argmax())
        value = float(values[local])
        if (
            self.value is None
            or value > self.value
            or (math.isnan(value) and not math.isnan(self.value))
        ):
            self.index, self.value = offset + local, value
            return local
        return None


class _Errors:
    """The second pass's figures over all pieces: how many elements exceed their allowance, the
    largest error and what was allowed there, and the largest relative error."""

    def __init__(self) -> None:
        self.mismatches = 0
        self.worst, self.rel_worst = _Largest(), _Largest()
        self.worst_allowed = 0.0

    def add(
        self,
        offset: int,
        err: torch.Tensor,
        failed: torch.Tensor,
        allowance: torch.Tensor,
        magnitude: torch.Tensor,
        guard: float,
        scale: float = 1.0,
    ) -> None:
        """One piece: `err` and, where `failed`, an element past its allowance; what is allowed
        at an element is `scale * allowance`; relative errors are err / max(magnitude, guard)."""
        self.mismatches += int(failed.sum())
        local = self.worst.add(err, offset)
        if local is not None:
            self.worst_allowed = float(scale * allowance[local])
        self.rel_worst.add(err / magnitude.clamp_min(guard), offset)


def _judge_exact(
    expected: torch.Tensor,
    actual: torch.Tensor,
    checks: tuple[Check, ...],
    common: dict[str, Any],
) -> Verdict:
    path = common["output"]
    floating = any(t.is_floating_point() or t.is_complex() for t in (expected, actual))
    if floating:
        work = torch.complex128 if expected.is_complex() or actual.is_complex() else torch.float64
        guard = torch.finfo(expected.dtype).tiny if expected.is_floating_point() else 1.0
    else:
        work, guard = torch.int64, 1.0
    # Values are compared on eager's device (a device mismatch is already a failed check).
    read = _Reader(expected.device, work, e=expected, a=actual)
    mismatches = 0
    worst, rel_worst = _Largest(), _Largest()
    for offset, piece in pieces(expected.numel()):
        e, a = read("e", piece), read("a", piece)
        if floating:
            equal = (a == e) | (torch.isnan(a) & torch.isnan(e))
            diff = torch.where(equal, 0.0, (a - e).abs().nan_to_num(math.inf, math.inf, math.inf))
        else:
            equal = a == e
            diff = (a - e).abs().to(torch.float64)
        rel = diff / e.abs().to(torch.float64).clamp_min(guard)
        mismatches += int((~equal).sum())
        worst.add(diff, offset)
        rel_worst.add(rel, offset)
    shape = expected.shape
    max_abs = worst.value
    if mismatches:
        message = (
            f"{mismatches} / {expected.numel()} elements differ; greatest absolute difference "
            f"{num_text(max_abs, exact=True)} at index {_index(worst.index, shape)}"
        )
    else:
        message = "all elements equal"
    checks = (*checks, Check("values", mismatches == 0, message, path))
    return Verdict(
        passed=all(c.passed for c in checks),
        checks=checks,
        max_abs_err=max_abs,
        max_rel_err=rel_worst.value,
        err_ratio=None,
        eager_abs_err=None,
        floor=None,
        allowed_abs_err=0.0,
        mismatches=mismatches,
        numel=expected.numel(),
        worst_index=_index(worst.index, shape),
        mode="exact",
        worst_allowed=0.0,
        rel_index=_index(rel_worst.index, shape),
        **common,
    )


def _nonfinite_disagree(e: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(where both are finite, where their NaN/Inf positions disagree) for one piece."""
    finite_e, finite_a = torch.isfinite(e), torch.isfinite(a)
    both = finite_e & finite_a
    same = (torch.isnan(e) & torch.isnan(a)) | (~finite_e & ~finite_a & (e == a))
    return both, ~both & ~same


def _specials_check(bad: _First, shape: torch.Size, path: tuple[Any, ...]) -> Check:
    """The check on NaN/Inf positions, from the disagreements `bad` found (values: a, e)."""
    if not bad.count:
        return Check("nonfinite", True, "NaN/Inf positions match eager", path)
    assert bad.index is not None
    a, e = bad.values
    message = (
        f"NaN/Inf positions differ from eager at {bad.count} element(s), first at index "
        f"{_index(bad.index, shape)}: actual {a}, expected {e}."
    )
    return Check("nonfinite", False, message, path)


def _refuted_note(
    refuted: _First, dtype: torch.dtype, shape: torch.Size, path: tuple[Any, ...]
) -> Check:
    """The note on eager values the fp64 reference refuted (values: eager's, fp64's)."""
    assert refuted.index is not None
    e, r = refuted.values
    message = (
        f"Eager is wrong at {refuted.count} element(s): NaN/Inf where the fp64 reference is "
        f"finite and no partial sum can overflow {str(dtype).replace('torch.', '')}; first at "
        f"index {_index(refuted.index, shape)}: eager {e}, fp64 {r:.6g}. Judged against fp64 there."
    )
    return Check("eager", True, message, path)


def _dtype_ulp(dtype: torch.dtype) -> tuple[float, float]:
    info = torch.finfo(dtype)
    return info.eps, info.tiny


class _ReferencePieces:
    """One output read a piece at a time for judgment against fp64: eager's values (those the
    fp64 reference refutes replaced by it), the backend's, fp64's, and where all three are finite.
    Values are compared on eager's device (a device mismatch is already a failed check); the
    reference and the bounds may be held on the host."""

    def __init__(
        self,
        expected: torch.Tensor,
        actual: torch.Tensor,
        reference: torch.Tensor,
        magnitude: torch.Tensor | None,
        rounding: torch.Tensor | None,
        intermediate: torch.Tensor | None,
    ) -> None:
        self.dtype = expected.dtype
        # which bounds widen each element's ulp (judge's docstring)
        self.bounded, self.carried = rounding is not None, intermediate is not None
        work = torch.complex128 if expected.is_complex() else torch.float64
        self.read = _Reader(
            expected.device,
            work,
            e=expected,
            a=actual,
            r=reference,
            m=magnitude,
            q=rounding,
            i=intermediate,
        )
        self.refute = magnitude is not None and not expected.is_complex()
        self.limit = torch.finfo(expected.dtype).max / 2 if self.refute else 0.0

    def __call__(
        self, offset: int, piece: slice, refuted: _First | None = None, bad: _First | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One piece's (eager with refuted values replaced, actual, reference, compared mask)."""
        read, limit = self.read, self.limit
        e, a, r = read("e", piece), read("a", piece), read("r", piece)
        if self.refute:
            m = read("m", piece, e.dtype).abs()
            wrong = ~torch.isfinite(e) & torch.isfinite(r) & (r.abs() <= limit) & (m <= limit)
            if refuted is not None:
                refuted.add(wrong, offset, e, r)
            e = torch.where(wrong, r.to(self.dtype).to(e.dtype), e)
        both, disagree = _nonfinite_disagree(e, a)
        if bad is not None:
            bad.add(disagree, offset, a, e)
        return e, a, r, both & torch.isfinite(r)


def _judge_against_reference(
    expected: torch.Tensor,
    actual: torch.Tensor,
    reference: torch.Tensor,
    policy: Policy,
    k: int,
    checks: tuple[Check, ...],
    common: dict[str, Any],
    magnitude: torch.Tensor | None = None,
    rounding: torch.Tensor | None = None,
    intermediate: torch.Tensor | None = None,
) -> Verdict:
    path = common["output"]
    bounded = bool(policy.input_rounding) and rounding is not None
    values = _ReferencePieces(
        expected, actual, reference, magnitude, rounding if bounded else None, intermediate
    )
    # First pass: what the tolerance depends on (eager's error, RMS(ref)) over the whole output.
    refuted, bad = _First(), _First()
    eager_err = squares = 0.0
    count = 0
    for offset, piece in pieces(expected.numel()):
        e, _a, r, mask = values(offset, piece, refuted, bad)
        eager_err = max(eager_err, float(torch.where(mask, (e - r).abs(), 0.0).max()))
        count += int(mask.sum())
        squares += float(torch.where(mask, r.abs(), 0.0).pow(2).sum())
    if refuted.count:
        checks = (*checks, _refuted_note(refuted, expected.dtype, expected.shape, path))
    rms = math.sqrt(squares / count) if count else 0.0
    # Where eager itself is known to be wrong (`numeric: fp64`), the floor and the ulp decide.
    trusted = eager_err if policy.trust_eager else 0.0
    floor = policy.floor(k, rms)
    errors, err_ratio = _reference_errors(
        values, expected.numel(), policy, max(trusted, floor), rms
    )
    # no element where eager's, the backend's and fp64's values are all finite (an output the
    # backend left unwritten, NaN): its error is not measured, not 0 (a bitsandbytes trial,
    # 2026-12-02: an all-NaN fp16 output read err_ratio 0, and its group "median 0")
    measured = count > 0 or expected.numel() == 0
    return _value_verdict(
        expected.shape,
        errors,
        bad,
        checks,
        common,
        mode="reference",
        floor=floor,
        allowed_abs_err=policy.max_ratio * max(trusted, floor),
        err_ratio=err_ratio if measured else None,
        eager_abs_err=eager_err,
        eager_wrong=refuted.count,
    )


def _reference_errors(
    values: _ReferencePieces,
    numel: int,
    policy: Policy,
    least: float,
    rms: float,
) -> tuple[_Errors, float]:
    """The second pass: each element's error against its own allowance (the larger of its ulp,
    widened by the input-rounding and intermediate bounds, and `least`, eager's error or the
    floor); the errors' figures and the largest err_ratio."""
    eps_out, tiny_out = _dtype_ulp(values.dtype)
    read = values.read
    errors = _Errors()
    err_ratio = 0.0
    for offset, piece in pieces(numel):
        _e, a, r, mask = values(offset, piece)
        err = torch.where(mask, (a - r).abs(), 0.0)
        ref_abs = torch.where(mask, r.abs(), 0.0)
        ulp = eps_out * ref_abs.clamp_min(tiny_out)
        if values.bounded:
            bound = policy.input_rounding * torch.where(mask, read("q", piece, r.dtype).abs(), 0.0)
            ulp = ulp + bound.nan_to_num(0.0, 0.0, 0.0)
        if values.carried:
            carried = torch.where(mask, read("i", piece, torch.float64), 0.0)
            ulp = ulp + carried.nan_to_num(0.0, 0.0, 0.0)
        denominator = (ulp / policy.max_ratio).clamp_min(least)
        ratio = err / denominator
        err_ratio = max(err_ratio, float(ratio.max()))
        failed = mask & (ratio > policy.max_ratio)
        guard = max(_REL_GUARD * rms, tiny_out)
        errors.add(offset, err, failed, denominator, ref_abs, guard, scale=policy.max_ratio)
    return errors, err_ratio


def _judge_against_eager(
    expected: torch.Tensor,
    actual: torch.Tensor,
    policy: Policy,
    k: int,
    checks: tuple[Check, ...],
    common: dict[str, Any],
) -> Verdict:
    work = torch.complex128 if expected.is_complex() else torch.float64
    # Values are compared on eager's device (a device mismatch is already a failed check).
    read = _Reader(expected.device, work, e=expected, a=actual)
    bad = _First()
    squares = 0.0
    count = 0
    for offset, piece in pieces(expected.numel()):
        e, a = read("e", piece), read("a", piece)
        mask, disagree = _nonfinite_disagree(e, a)
        bad.add(disagree, offset, a, e)
        count += int(mask.sum())
        squares += float(torch.where(mask, e.abs(), 0.0).pow(2).sum())
    rms = math.sqrt(squares / count) if count else 0.0
    floor = policy.floor(k, rms)
    eps_out, tiny_out = _dtype_ulp(expected.dtype)
    # Both sides round to the output dtype, possibly in opposite directions: two ulps.
    rtol = max(policy.rtol, 2 * eps_out)
    bar = policy.max_ratio * floor  # what every element is allowed besides its rtol share
    guard = max(_REL_GUARD * rms, tiny_out)
    errors = _Errors()
    for offset, piece in pieces(expected.numel()):
        e, a = read("e", piece), read("a", piece)
        mask, _ = _nonfinite_disagree(e, a)
        err = torch.where(mask, (a - e).abs(), 0.0)
        e_abs = torch.where(mask, e.abs(), 0.0)
        allowed = bar + rtol * e_abs.clamp_min(tiny_out)
        errors.add(offset, err, mask & (err > allowed), allowed, e_abs, guard)
    return _value_verdict(
        expected.shape, errors, bad, checks, common, mode="eager", floor=floor, allowed_abs_err=bar
    )


def _value_verdict(
    shape: torch.Size,
    errors: _Errors,
    bad: _First,
    checks: tuple[Check, ...],
    common: dict[str, Any],
    *,
    mode: str,
    floor: float,
    allowed_abs_err: float,
    err_ratio: float | None = None,
    eager_abs_err: float | None = None,
    eager_wrong: int = 0,
) -> Verdict:
    """One output's verdict on its values: the second pass's `errors`, the NaN/Inf disagreements
    `bad`, and the bar they were judged against (against eager: no err_ratio, no eager error)."""
    path, max_ratio = common["output"], common["max_ratio"]
    mismatches = errors.mismatches
    if mismatches:
        if err_ratio is not None:
            text = f"err_ratio {num_text(err_ratio)} > {num_text(max_ratio)} allowed"
        else:
            text = "differences from eager exceed the allowed tolerance"
        values = Check("values", False, f"{text} at {mismatches} element(s)", path)
    elif err_ratio is not None:
        values = Check(
            "values", True, f"err_ratio {num_text(err_ratio)} <= {num_text(max_ratio)}", path
        )
    elif mode == "reference":
        values = Check("values", True, "no element finite in all three to measure", path)
    else:
        values = Check("values", True, "within tolerance of eager", path)
    checks = (*checks, _specials_check(bad, shape, path), values)
    return Verdict(
        passed=all(c.passed for c in checks),
        checks=checks,
        max_abs_err=errors.worst.value,
        max_rel_err=errors.rel_worst.value,
        err_ratio=err_ratio,
        eager_abs_err=eager_abs_err,
        floor=floor,
        allowed_abs_err=allowed_abs_err,
        mismatches=mismatches + bad.count,
        numel=math.prod(shape),
        worst_index=_index(errors.worst.index, shape),
        mode=mode,
        worst_allowed=errors.worst_allowed,
        rel_index=_index(errors.rel_worst.index, shape),
        eager_wrong=eager_wrong,
        **common,
    )


def _combine(leaves: tuple[Verdict, ...]) -> Verdict:
    """One verdict for a multi-output result; its numbers are those of the worst output."""
    failed = [v for v in leaves if not v.passed]
    compared = [v for v in leaves if v.max_abs_err is not None]
    worst = failed[0] if failed else max(compared, key=lambda v: v.err_ratio or 0.0, default=None)
    worst = worst or leaves[0]
    ratios = [v.err_ratio for v in leaves if v.err_ratio is not None]
    return Verdict(
        passed=not failed,
        checks=tuple(c for v in leaves for c in v.checks),
        max_abs_err=max((v.max_abs_err for v in compared), default=None),
        max_rel_err=max(
            (v.max_rel_err for v in compared if v.max_rel_err is not None), default=None
        ),
        err_ratio=max(ratios, default=None),
        eager_abs_err=worst.eager_abs_err,
        floor=worst.floor,
        allowed_abs_err=worst.allowed_abs_err,
        mismatches=sum(v.mismatches for v in leaves),
        numel=sum(v.numel for v in leaves),
        worst_index=worst.worst_index,
        policy=worst.policy,
        max_ratio=worst.max_ratio,
        k=worst.k,
        k_name=worst.k_name,
        mode=worst.mode,
        worst_allowed=worst.worst_allowed,
        rel_index=worst.rel_index,
        parts=leaves,
        eager_wrong=sum(v.eager_wrong for v in leaves),
    )
