"""The numeric oracle: decides whether a backend's GEMM outputs are right (docs/design.md,
"Oracle").

For every output the harness hands over three things: `expected` (eager PyTorch), `actual` (the
backend under test) and `reference` (float64, computed from the same upcast/dequantized inputs).
Eager is the result users trust, but it has rounding of its own, so the backend is measured against
the fp64 reference and judged relative to eager's own error:

    err_ratio = max_i |actual_i - ref_i|
                / max(eager_err, floor, (ulp_i + bound_i + carried_i) / max_ratio)

and passes when `err_ratio <= max_ratio`. The terms of the denominator:

- `eager_err = max_i |expected_i - ref_i|`: the backend may be a small factor worse than eager.
- `floor = floor_eps * sqrt(max(K, 1)) * RMS(ref)`: what a correct backend may be off by even when
  eager happens to be (nearly) exact. Rounding errors of a K-term fp32 sum of zero-mean products
  grow like eps·sqrt(K)·RMS(ref) for sequential summation, the worst order a correct backend
  uses; blocked and tree orders do better. RMS rather than max|ref| keeps the floor low:
  docs/measurements.md measured that a floor of eps_out·max|ref| hides fp16/bf16-accumulation
  bugs below K≈1024.
  `floor_eps` is set by the *accumulation* a correct backend must use (two fp32 ulps, 2^-22, for
  fp32, fp16, bf16 and fp8 inputs; 2^-10 for TF32, whose products each carry two input roundings
  of 2^-11), not by the output's epsilon: with eps_out in it, the floor would swallow the bugs.
  `POLICIES` records the measurements behind each number.
- `bound_i = input_rounding * rounding_i` (TF32 only): the most rounding the inputs of element
  i's products can cost, `rounding` being |alpha| * (|A| @ |B|) in fp64 (the GEMM alone: C and
  the bias are not rounded to TF32; the harness gives it only where the output is that GEMM, no
  epilogue). Like the ulp it is a bound, added to the ulp and not multiplied by max_ratio.
- `carried_i` (items with an addend or an epilogue; of a backward item, its forward result,
  the gradients having none): what rounding the program's intermediate results can cost,
  where a correct backend hands them from op to op in the result dtype as eager's ops do:
  alpha * (A @ B) rounded before C or the bias is added (an unfused addmm or linear), the
  GEMM's result before each epilogue step; eps * |value| each, carried through the later
  steps' slopes (`gemmconf.program.make_intermediate_rounding`). Without it, a library
  whose GEMM has no bias epilogue failed clamped addmm/linear items on most seeds: where the bias
  cancels most of the product, the product's rounding is several ulps of the output. It is
  added to the ulp. The price: an accumulation in bf16/fp16 at K of 24-72, 3-4x eager's error,
  is no longer told apart on such items (a planted 16-bit accumulator failed 37-38 items of an
  842-item subset on seeds 0-2, where it had failed 41-47; seed 0's ten lost items had err_ratio
  3.0-3.9 but one); items without an addend or an epilogue still catch it.
- `ulp_i = eps_out * max(|ref_i|, tiny_out)`: one unit of the output dtype's rounding at that
  element. A correct backend is off by its accumulation error plus half an ulp of output rounding
  (plus `carried_i` where it rounds intermediate results too). Eager's max error over a large output
  already holds the half ulp, but over a few elements it can be far smaller (lucky roundings), and
  then ratio-to-eager alone would fail a correct backend one ulp away. The ulp is not multiplied by
  max_ratio (it is the bound already): where eager's max error is its half-ulp rounding, it loosens
  the rule by at most 4/3 and only at the largest elements, so it hides no accumulation bug. It also
  keeps the denominator positive, so an exactly computed result (eager error 0, or a reference of
  zeros at K=0) is never judged against 0.

Integer outputs (int32 from int8 GEMMs) and the `exact` policy must equal eager. NaN/Inf positions
(and the signs of infinities) must equal eager's everywhere; a difference counts as a mismatch.
fp8 outputs are upcast and judged like any float (torch.testing compares them bitwise). Without a
reference the backend is compared with eager directly, within
`max_ratio * floor(expected) + max(rtol, 2 * eps_out) * |expected_i|` (assert_close's rtol, with
the absolute part made K- and scale-aware).

Eager can be wrong (an H200 with torch 2.11 returned inf for half of a blockwise-scaled fp8 GEMM
with fp16 output). Given `magnitude` (the fp64 reference of the inputs' absolute values, which
bounds every partial sum of the GEMM), an eager NaN/Inf is *refuted* where the reference is finite
and both it and the magnitude stay below half the output dtype's max: no summation order can
overflow there. Refuted elements are judged against the fp64 reference rounded to the output
dtype, and the verdict counts them (`eager_wrong`), so a right backend passes, eager run as a
backend fails, and the report says eager was wrong. (With a subtracting epilogue, a negative
alpha or beta, the magnitude can understate the GEMM's partial sums; no suite scenario pairs that
with near-overflow operands.)

An output is read in pieces of `PIECE_ELEMENTS` values, each moved to eager's device (its own
or the host, where a large fp64 reference may be held) and judged there in two passes: the
first finds what the tolerance depends on over the whole output (eager's error, RMS(ref), the
NaN/Inf checks), the second each element's error against its allowance. The oracle's fp64
temporaries are one piece's, whatever the output's size; an output of one piece is judged as
one tensor, so its figures are those of a whole-output computation bit for bit.

`judge` walks nested tuples/lists/dicts of outputs pairwise like `torch.testing.assert_close`, makes
every check it can (attributes first, then values) and returns a `Verdict` that keeps its numbers;
`Verdict.message` is the one formatter.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

__all__ = [
    "PIECE_ELEMENTS",
    "POLICIES",
    "Check",
    "Policy",
    "Verdict",
    "judge",
    "pieces",
    "policy_for",
    "without_eager",
]

# Values judged at once: an output is read in pieces of this many elements, so the oracle's fp64
# temporaries (about ten piece-sized values) do not grow with the output (module docstring).
PIECE_ELEMENTS = 1 << 24


@dataclass(frozen=True)
class Policy:
    """How an output is judged; one row of `POLICIES`."""

    name: str
    max_ratio: float  # backend error may be at most this multiple of max(eager error, floor)
    floor_eps: float  # epsilon of the accumulation a correct backend uses; scales the floor
    exact: bool  # values must equal eager's (integer outputs)
    rtol: float = 0.0  # used only without an fp64 reference (assert_close's value for the dtype)
    trust_eager: bool = True  # False: eager's own error does not widen the tolerance (fp64 alone)
    # Relative error each product may carry from rounding its inputs (TF32), bounded per element
    # by input_rounding * rounding_i, rounding being |alpha| * (|A| @ |B|) (judge's `rounding`).
    input_rounding: float = 0.0


_FP32_ACC = 2.0**-22  # two fp32 ulps per sqrt(K): see the measurements above POLICIES

# Why these numbers (inputs randn/K^0.25, ratios against max(eager error, floor)):
# - max_ratio 3.0: docs/measurements.md measured fp16/bf16 accumulation in the input dtype
#   (32-wide chunks) at 4.6-8.2x eager's error for K=1024 and 9.1-16.7x for K=4096, so 3.0
#   catches that bug from
#   K=1024 on; over 40 seeds (64x64 outputs) its smallest ratio was 3.13 at K=1024 (bf16), 4.7
#   at K=2048 and 7.1 at K=4096. Correct backends measure about 1.0 on CPU (other summation
#   orders, split-K, K=16..65536) and 0.88-1.04 on an H200 (Triton and cuBLAS fp32, fp16, bf16,
#   fp8; outputs up to 4096x4096, K up to 65536).
# - fp32 accumulation, floor_eps 2^-22: sequential FMA accumulation (Triton `ieee` tl.dot, cuBLAS
#   SGEMM) reached a max error of 2^-22.1 * sqrt(K) * RMS(ref) over 4M outputs on an H200; eager on
#   the CPU (MKL) is ~5x more accurate, so the floor decides and must cover that order (with
#   2^-23 it measured 1.95).
# - fp32 computed as TF32 has ~2,300x eager's error (docs/measurements.md), 70-1,600x with this
#   floor for K=16..16384, so fp32 stays tight and "tf32" is its own row (floor: two input
#   roundings of
#   2^-11 per product; TF32 results measure 0.02-0.4 under it). Tensor cores fed fp32 *truncate*
#   to TF32 (Triton's tl.dot, so inductor's templates), twice cuBLAS's round-to-nearest error,
#   and eager may skip TF32 altogether (at K=1 on an H200 its error stayed under the floor, as an
#   fp32 result's would; the same inputs with CPU fp32 as eager gave the GPU's 4.8x). At small K the
#   largest product dwarfs RMS(ref), so the floor alone failed a correct truncating backend
#   (inductor's TRITON addmm at K=1: 4.8x; over 30 seeds up to 3.2x even with 2^-9): each
#   element may also be off by its own input-rounding bound, (2^-10 + 2^-10 + 2^-20) * |alpha| *
#   (|A|@|B|)_i (`input_rounding`). At large K the floor is larger than that bound, so it loosens
#   nothing there.
# - fp8 inputs with use_fast_accum=False accumulate in fp32 (cuBLAS, and a Triton kernel adding
#   each K tile into an fp32 accumulator: 1.00-1.04). With use_fast_accum=True, Hopper
#   accumulates in the tensor core's reduced precision: cuBLAS and Triton measured
#   2^-11.1 * sqrt(K) * RMS(ref), 1.3-5.2x exact eager for K=1024-32768; "fp8_fast_accum" allows
#   2^-10 (they measure 0.43-0.71). A backend that ignores use_fast_accum=False fails from
#   K~16384 on (4.1-5.2x).
POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy("fp64", max_ratio=3.0, floor_eps=2.0**-51, exact=False, rtol=1e-7),
        Policy("fp32", max_ratio=3.0, floor_eps=_FP32_ACC, exact=False, rtol=1.3e-6),
        Policy(
            "tf32",
            max_ratio=3.0,
            floor_eps=2.0**-10,
            exact=False,
            rtol=1e-3,
            input_rounding=(1 + 2.0**-10) ** 2 - 1,
        ),
        Policy("fp16", max_ratio=3.0, floor_eps=_FP32_ACC, exact=False, rtol=1e-3),
        Policy("bf16", max_ratio=3.0, floor_eps=_FP32_ACC, exact=False, rtol=1.6e-2),
        Policy("fp8", max_ratio=3.0, floor_eps=_FP32_ACC, exact=False, rtol=1.6e-2),
        Policy("fp8_fast_accum", max_ratio=3.0, floor_eps=2.0**-10, exact=False, rtol=1.6e-2),
        Policy("int", max_ratio=1.0, floor_eps=0.0, exact=True),
        Policy("exact", max_ratio=1.0, floor_eps=0.0, exact=True),
    )
}

_FP8_DTYPES = frozenset(
    getattr(torch, name)
    for name in (
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
    )
    if hasattr(torch, name)
)
_FP8_COMPUTE = frozenset({"e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz", "fp4"})  # fp4: fp32 sums too
_COMPUTE = frozenset({"fp64", "fp32", "tf32", "fp16", "bf16", "int8", "int32"}) | _FP8_COMPUTE
_BY_DTYPE = {
    torch.float64: "fp64",
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.complex128: "fp64",
    torch.complex64: "fp32",
}

# Relative errors are measured against max(|ref_i|, 1% of RMS(ref)): near-zero outputs would
# otherwise report meaningless huge relative errors.
_REL_GUARD = 0.01

# The checks about an output's values (a failure of one is "wrong values"); every other check is
# about its attributes (dtype, shape, device, layout, strides: "wrong layout").
VALUE_CHECKS = ("values", "nonfinite", "precision")
# An fp32 output of at least this many elements whose values all fit a 16-bit float, where
# fp64's mostly do not, was computed or stored in that float and widened (`_precision_check`).
PRECISION_MIN_ELEMENTS = 64
_NARROW = (("bf16", torch.bfloat16), ("fp16", torch.float16))


def without_eager(policy: Policy) -> Policy:
    """`policy` for `numeric: fp64`: eager's own error does not widen the tolerance, so the floor
    must cover every accumulation a correct backend may use. For fp8 inputs that is Hopper's
    tensor-core accumulation, which even without use_fast_accum keeps fewer than fp32's bits
    inside a wgmma (an H200, 2026-11-22: eager and the reference backend both 2^-13 * sqrt(K) *
    RMS(ref) from fp64 on blockwise GEMMs, 50-77x the fp32 floor): the fp8_fast_accum floor."""
    floor_eps = policy.floor_eps
    if policy.name == "fp8":
        floor_eps = max(floor_eps, POLICIES["fp8_fast_accum"].floor_eps)
    return replace(policy, trust_eager=False, floor_eps=floor_eps)


def policy_for(
    out_dtype: torch.dtype, *, compute: str | None = None, fast_accum: bool = False
) -> Policy:
    """The policy for an output of `out_dtype` from a GEMM whose inputs are `compute`.

    `compute` names the scenario's input dtype ("fp32", "tf32", "fp16", "bf16", "e4m3fn", "e5m2",
    "int8"); it matters for TF32 (an fp32 output judged with the TF32 row) and fp8 inputs, where
    `fast_accum` (`_scaled_mm(..., use_fast_accum=True)`) selects the reduced-precision row.
    """
    if compute is not None and compute not in _COMPUTE:
        raise ValueError(f"unknown compute {compute!r}; known: {', '.join(sorted(_COMPUTE))}")
    if out_dtype == torch.bool:
        return POLICIES["exact"]
    if not (out_dtype.is_floating_point or out_dtype.is_complex):
        return POLICIES["int"]
    if compute in _FP8_COMPUTE and fast_accum:
        return POLICIES["fp8_fast_accum"]
    if out_dtype in _FP8_DTYPES or compute in _FP8_COMPUTE:
        return POLICIES["fp8"]
    if compute == "tf32" and out_dtype in (torch.float32, torch.complex64):
        return POLICIES["tf32"]
    try:
        return POLICIES[_BY_DTYPE[out_dtype]]
    except KeyError:
        raise ValueError(f"no tolerance policy for output dtype {out_dtype}") from None


@dataclass(frozen=True)
class Check:
    """One attribute or value check; `output` locates it in a multi-output result."""

    name: str
    passed: bool
    message: str
    output: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """The numeric verdict on one output, or on all outputs of a function (`parts`)."""

    passed: bool
    checks: tuple[Check, ...]
    max_abs_err: float | None
    max_rel_err: float | None
    err_ratio: float | None
    eager_abs_err: float | None
    floor: float | None
    allowed_abs_err: float | None  # max_ratio * max(eager error, floor); one ulp more per element
    mismatches: int
    numel: int
    worst_index: tuple[int, ...] | None  # of the greatest absolute difference
    policy: str = ""
    max_ratio: float | None = None
    k: int | None = None
    k_name: str = "K"  # what `k` is: a backward item's is the longest sum its outputs take
    mode: str = "reference"  # "reference" (vs fp64), "eager" (no reference), "exact"
    worst_allowed: float | None = None  # what was allowed at worst_index
    rel_index: tuple[int, ...] | None = None  # of the greatest relative difference
    output: tuple[Any, ...] = ()  # where this output sits in a multi-output result
    parts: tuple[Verdict, ...] = ()  # per-output verdicts of a multi-output result
    eager_wrong: int = 0  # eager NaN/Inf elements the fp64 reference refuted (module docstring)
    label: str = ""  # what this output is, from judge's `names` ("the gradient of b")

    @property
    def attributes_failed(self) -> bool:
        """Whether a check of the output's attributes (dtype, shape, device, layout, strides,
        type) failed, not only of its values: kind "wrong layout"."""
        return any(not c.passed and c.name not in VALUE_CHECKS for c in self.checks)

    def metrics(self) -> dict[str, float | None]:
        """The error metrics a result record carries."""
        return {
            "max_abs_err": self.max_abs_err,
            "max_rel_err": self.max_rel_err,
            "err_ratio": self.err_ratio,
        }

    def message(self, *, what: str = "", repro: str = "") -> str:
        """torch.testing-style text; the first line stands alone."""
        return _format(self, what=what, repro=repro)


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
    leaves: list[Verdict] = []
    _walk(
        expected,
        actual,
        reference,
        magnitude,
        (),
        k,
        policy,
        leaves,
        rounding,
        intermediate,
        strides=strides,
    )
    if names:
        leaves = [replace(v, label=names.get(v.output, "")) for v in leaves]
    if k_name != "K":
        leaves = [replace(v, k_name=k_name) for v in leaves]
    if len(leaves) == 1 and leaves[0].output == ():
        return leaves[0]
    return _combine(tuple(leaves))


def _walk(
    expected: Any,
    actual: Any,
    reference: Any,
    magnitude: Any,
    path: tuple[Any, ...],
    k: int,
    policy: Policy | None,
    leaves: list[Verdict],
    rounding: torch.Tensor | None = None,  # a single tensor output's (judge's docstring)
    intermediate: Any = None,  # shaped like the outputs (judge's docstring)
    *,
    strides: bool | Collection[tuple[Any, ...]] = False,
) -> None:
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            leaves.append(_type_mismatch(expected, actual, path))
            return
        if reference is not None and not isinstance(reference, torch.Tensor):
            raise TypeError(f"reference for output {_where(path)} is {type(reference).__name__}")
        fixed = strides is True or (strides is not False and path in strides)
        leaves.append(
            _judge_tensor(
                expected,
                actual,
                reference,
                k,
                policy,
                path,
                magnitude,
                rounding,
                intermediate,
                strides=fixed,
            )
        )
    elif expected is None or isinstance(expected, (bool, int, float, complex)):
        if type(actual) is not type(expected):
            leaves.append(_type_mismatch(expected, actual, path))
        elif expected is None:
            leaves.append(_verdict_of((Check("type", True, "", path),), path))
        else:
            # Python numbers (from `.item()`) carry no dtype; judge floats like fp32 outputs.
            number_policy = policy or (POLICIES["fp32"] if isinstance(expected, float) else None)
            e, a = _number_tensor(expected), _number_tensor(actual)
            ref = None if reference is None else _number_tensor(reference)
            leaves.append(_judge_tensor(e, a, ref, k, number_policy, path))
    elif isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            leaves.append(_type_mismatch(expected, actual, path))
            return
        if set(expected) != set(actual):
            missing = sorted(map(repr, set(expected) - set(actual)))
            extra = sorted(map(repr, set(actual) - set(expected)))
            message = f"The keys of the mappings do not match: missing {missing}, extra {extra}."
            leaves.append(_verdict_of((Check("keys", False, message, path),), path))
        for key in expected:
            if key in actual:
                ref = None if reference is None else reference[key]
                mag = None if magnitude is None else magnitude[key]
                _walk(
                    expected[key],
                    actual[key],
                    ref,
                    mag,
                    (*path, key),
                    k,
                    policy,
                    leaves,
                    strides=strides,
                )
    elif isinstance(expected, Sequence) and not isinstance(expected, (str, bytes)):
        if not isinstance(actual, Sequence) or isinstance(actual, (str, bytes)):
            leaves.append(_type_mismatch(expected, actual, path))
            return
        if reference is not None and len(reference) != len(expected):
            raise ValueError(
                f"reference has {len(reference)} outputs at {_where(path)}, eager {len(expected)}"
            )
        if len(actual) != len(expected):
            message = (
                f"The length of the sequences do not match: {len(actual)} != {len(expected)} "
                "(actual != expected)."
            )
            leaves.append(_verdict_of((Check("length", False, message, path),), path))
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            ref = None if reference is None else reference[i]
            mag = None if magnitude is None else magnitude[i]
            inter = None if intermediate is None else intermediate[i]
            _walk(e, a, ref, mag, (*path, i), k, policy, leaves, None, inter, strides=strides)
    else:
        raise TypeError(f"cannot judge eager output of type {type(expected).__name__}")


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
    message = f"The values for attribute '{name}' do not match: {actual} != {expected}."
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
            f"for output {_where(path)}: the harness built a wrong reference"
        )
    for name, bound in (("rounding", rounding), ("intermediate", intermediate)):
        if bound is not None and bound.shape != expected.shape:
            raise ValueError(
                f"{name} shape {tuple(bound.shape)} != eager shape {tuple(expected.shape)} "
                f"for output {_where(path)}: the harness built a wrong {name} bound"
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
    rounded to 10 mantissa bits, tests/planted_backends.py) leaves fp16 values."""
    if actual.dtype != torch.float32 or expected.dtype != torch.float32:
        return None
    numel = actual.numel()
    if numel < PRECISION_MIN_ELEMENTS:
        return None
    for name, narrow in _NARROW:
        if not _all_fit(actual, narrow) or _all_fit(expected, narrow):
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
            f"{_num(max_abs, exact=True)} at index {_index(worst.index, shape)}"
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
    work = torch.complex128 if expected.is_complex() else torch.float64
    # Values are compared on eager's device (a device mismatch is already a failed check), in
    # pieces: the reference and the bounds may be held on the host.
    bounded = bool(policy.input_rounding) and rounding is not None
    read = _Reader(
        expected.device,
        work,
        e=expected,
        a=actual,
        r=reference,
        m=magnitude,
        q=rounding if bounded else None,
        i=intermediate,
    )
    refute = magnitude is not None and not expected.is_complex()
    limit = torch.finfo(expected.dtype).max / 2 if refute else 0.0

    def values(
        offset: int, piece: slice, refuted: _First | None = None, bad: _First | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One piece's (eager with refuted values replaced, actual, reference, compared mask)."""
        e, a, r = read("e", piece), read("a", piece), read("r", piece)
        if refute:
            m = read("m", piece, e.dtype).abs()
            wrong = ~torch.isfinite(e) & torch.isfinite(r) & (r.abs() <= limit) & (m <= limit)
            if refuted is not None:
                refuted.add(wrong, offset, e, r)
            e = torch.where(wrong, r.to(expected.dtype).to(e.dtype), e)
        both, disagree = _nonfinite_disagree(e, a)
        if bad is not None:
            bad.add(disagree, offset, a, e)
        return e, a, r, both & torch.isfinite(r)

    # First pass: what the tolerance depends on (eager's error, RMS(ref)) over the whole output.
    refuted, bad = _First(), _First()
    eager_err = squares = 0.0
    count = 0
    for offset, piece in pieces(expected.numel()):
        e, a, r, mask = values(offset, piece, refuted, bad)
        eager_err = max(eager_err, float(torch.where(mask, (e - r).abs(), 0.0).max()))
        count += int(mask.sum())
        squares += float(torch.where(mask, r.abs(), 0.0).pow(2).sum())
    if refuted.count:
        checks = (*checks, _refuted_note(refuted, expected.dtype, expected.shape, path))
    rms = math.sqrt(squares / count) if count else 0.0
    # Where eager itself is known to be wrong (`numeric: fp64`), the floor and the ulp decide.
    trusted = eager_err if policy.trust_eager else 0.0
    floor = policy.floor_eps * math.sqrt(max(k, 1)) * rms
    eps_out, tiny_out = _dtype_ulp(expected.dtype)

    # Second pass: each element against its own allowance.
    errors = _Errors()
    err_ratio = 0.0
    for offset, piece in pieces(expected.numel()):
        e, a, r, mask = values(offset, piece)
        err = torch.where(mask, (a - r).abs(), 0.0)
        ref_abs = torch.where(mask, r.abs(), 0.0)
        ulp = eps_out * ref_abs.clamp_min(tiny_out)
        if bounded:
            bound = policy.input_rounding * torch.where(mask, read("q", piece, r.dtype).abs(), 0.0)
            ulp = ulp + bound.nan_to_num(0.0, 0.0, 0.0)
        if intermediate is not None:
            carried = torch.where(mask, read("i", piece, torch.float64), 0.0)
            ulp = ulp + carried.nan_to_num(0.0, 0.0, 0.0)
        denominator = (ulp / policy.max_ratio).clamp_min(max(trusted, floor))
        ratio = err / denominator
        err_ratio = max(err_ratio, float(ratio.max()))
        failed = mask & (ratio > policy.max_ratio)
        guard = max(_REL_GUARD * rms, tiny_out)
        errors.add(offset, err, failed, denominator, ref_abs, guard, scale=policy.max_ratio)
    return _value_verdict(
        expected.shape,
        errors=errors,
        bad=bad,
        checks=checks,
        common=common,
        err_ratio=err_ratio,
        eager_abs_err=eager_err,
        floor=floor,
        allowed_abs_err=policy.max_ratio * max(trusted, floor),
        mode="reference",
        max_ratio=policy.max_ratio,
        eager_wrong=refuted.count,
    )


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
    floor = policy.floor_eps * math.sqrt(max(k, 1)) * rms
    eps_out, tiny_out = _dtype_ulp(expected.dtype)
    # Both sides round to the output dtype, possibly in opposite directions: two ulps.
    rtol = max(policy.rtol, 2 * eps_out)
    errors = _Errors()
    for offset, piece in pieces(expected.numel()):
        e, a = read("e", piece), read("a", piece)
        mask, _ = _nonfinite_disagree(e, a)
        err = torch.where(mask, (a - e).abs(), 0.0)
        e_abs = torch.where(mask, e.abs(), 0.0)
        allowed = policy.max_ratio * floor + rtol * e_abs.clamp_min(tiny_out)
        guard = max(_REL_GUARD * rms, tiny_out)
        errors.add(offset, err, mask & (err > allowed), allowed, e_abs, guard)
    return _value_verdict(
        expected.shape,
        errors=errors,
        bad=bad,
        checks=checks,
        common=common,
        err_ratio=None,
        eager_abs_err=None,
        floor=floor,
        allowed_abs_err=policy.max_ratio * floor,
        mode="eager",
        max_ratio=policy.max_ratio,
    )


def _value_verdict(
    shape: torch.Size,
    *,
    errors: _Errors,
    bad: _First,
    checks: tuple[Check, ...],
    common: dict[str, Any],
    err_ratio: float | None,
    mode: str,
    max_ratio: float,
    **numbers: float,
) -> Verdict:
    path = common["output"]
    mismatches = errors.mismatches
    if mismatches:
        if err_ratio is not None:
            text = f"err_ratio {_num(err_ratio)} > {_num(max_ratio)} allowed"
        else:
            text = "differences from eager exceed the allowed tolerance"
        values = Check("values", False, f"{text} at {mismatches} element(s)", path)
    elif err_ratio is not None:
        values = Check("values", True, f"err_ratio {_num(err_ratio)} <= {_num(max_ratio)}", path)
    else:
        values = Check("values", True, "within tolerance of eager", path)
    checks = (*checks, _specials_check(bad, shape, path), values)
    return Verdict(
        passed=all(c.passed for c in checks),
        checks=checks,
        max_abs_err=errors.worst.value,
        max_rel_err=errors.rel_worst.value,
        err_ratio=err_ratio,
        mismatches=mismatches + bad.count,
        numel=math.prod(shape),
        worst_index=_index(errors.worst.index, shape),
        mode=mode,
        worst_allowed=errors.worst_allowed,
        rel_index=_index(errors.rel_worst.index, shape),
        **numbers,
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


def _where(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p!r}]" for p in path) or "[]"


def _num(x: float, *, exact: bool = False) -> str:
    if math.isnan(x) or math.isinf(x):
        return str(x)
    if exact and float(x).is_integer():
        return str(int(x))
    text = f"{x:.4g}"
    return text if ("." in text or "e" in text) else text + ".0"


def _headline(v: Verdict) -> tuple[str, list[str], Check | None]:
    """The verdict's first line (without context), its context, and the check it reports."""
    context = [v.policy] if v.policy else []
    if v.k is not None:
        context.append(f"K={v.k}" if v.k_name == "K" else f"{v.k_name} {v.k}")
    failed = [c for c in v.checks if not c.passed]
    attribute = next((c for c in failed if c.name not in VALUE_CHECKS), None)
    if attribute is None:
        return _values_headline(v, failed, context)
    if any(c.name in VALUE_CHECKS for c in failed):  # a wrong dtype says more than its numbers
        head, context, _ = _values_headline(v, failed, context)
        return f"{attribute.message} {head}", context, attribute
    return attribute.message, [], attribute


def _values_headline(
    v: Verdict, failed: list[Check], context: list[str]
) -> tuple[str, list[str], Check | None]:
    values = next((c for c in failed if c.name == "values"), None)
    specials = next((c for c in failed if c.name == "nonfinite"), None)
    precision = next((c for c in failed if c.name == "precision"), None)
    if precision is not None and values is None:
        return precision.message, context, precision
    if values is not None and v.mode == "exact":
        return "Tensor-likes are not equal!", context, values
    if values is not None and v.mode == "eager":
        return "Tensor-likes are not close!", ["no fp64 reference", *context], values
    if values is not None:
        ratio = f"err_ratio {_num(v.err_ratio or 0.0)} > {_num(v.max_ratio or 0.0)} allowed"
        return f"Tensor-likes are not close! {ratio}", context, values
    if specials is not None:
        return "Tensor-likes are not close! NaN/Inf positions differ from eager", context, None
    if v.max_abs_err is None:
        return "Attributes match; no values to compare", context, None
    if v.mode == "exact":
        return "Tensor-likes are equal", context, None
    if v.mode == "eager":
        return "Tensor-likes are close to eager", ["no fp64 reference", *context], None
    ratio = f"err_ratio {_num(v.err_ratio or 0.0)} <= {_num(v.max_ratio or 0.0)} allowed"
    return f"Tensor-likes are close: {ratio}", context, None


def _body(v: Verdict, reported: Check | None) -> list[str]:
    lines = []
    if v.max_abs_err is not None and v.max_rel_err is not None:
        share = 100.0 * v.mismatches / v.numel if v.numel else 0.0
        lines.append(f"Mismatched elements: {v.mismatches} / {v.numel} ({share:.1f}%)")
        lines += [c.message for c in v.checks if c.name == "nonfinite" and not c.passed]
        exact = v.mode == "exact"
        greatest = f"Greatest absolute difference: {_num(v.max_abs_err, exact=exact)}"
        greatest += f" at index {v.worst_index}"
        if not exact and v.worst_allowed is not None:
            greatest += f" (up to {_num(v.worst_allowed)} allowed there)"
        lines.append(greatest)
        lines.append(f"Greatest relative difference: {_num(v.max_rel_err)} at index {v.rel_index}")
        if v.mode == "reference" and v.eager_abs_err is not None and v.floor is not None:
            trusted = v.allowed_abs_err is None or v.allowed_abs_err >= (v.max_ratio or 0.0) * (
                v.eager_abs_err
            )
            of = "max of these" if trusted else "the floor (eager's error not trusted here)"
            lines.append(
                f"Eager's own error against fp64: {_num(v.eager_abs_err)}; floor {_num(v.floor)}; "
                f"allowed {_num(v.max_ratio or 0.0)} x {of} = "
                f"{_num(v.allowed_abs_err or 0.0)} (or one output ulp, where larger)"
            )
        elif v.mode == "eager" and v.floor is not None:
            lines.append(
                f"No fp64 reference: compared with eager within {_num(v.max_ratio or 0.0)} x "
                f"floor {_num(v.floor)} + rtol * |expected|"
            )
    lines += [
        c.message
        for c in v.checks
        if not c.passed and c is not reported and c.name not in ("values", "nonfinite")
    ]
    lines += [c.message for c in v.checks if c.name == "eager"]
    return lines


def _format(verdict: Verdict, *, what: str, repro: str) -> str:
    parts = verdict.parts or (verdict,)
    shown = [p for p in parts if not p.passed] or list(parts)
    lines: list[str] = []
    for part in shown:
        head, context, reported = _headline(part)
        where = f"output {_where(part.output)}" if part.output else ""
        if where and part.label:
            where += f", {part.label}"
        if where:
            context = [*context, where]
        if context:
            head = f"{head.rstrip('.')} ({', '.join(context)})"
        lines.append(head)
        lines += _body(part, reported)
        if where and not part.passed:
            lines.append(f"The failure occurred for {where}.")
    if what:
        lines.append(f"Compared: {what}")
    if repro:
        lines.append(f"Reproduce: {repro}")
    return "\n".join(lines)
