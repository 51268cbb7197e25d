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
  fp32, fp16, bf16 and fp8 inputs), not by the output's epsilon: with eps_out in it, the floor
  would swallow the bugs. TF32's products each carry two input roundings of 2^-11, a relative
  error that does not grow with K: its floor is 2^-8 * RMS(ref), without the sqrt(K)
  (`Policy.floor`).
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

from gemmconf.oracle.judgment import PIECE_ELEMENTS, judge, pieces
from gemmconf.oracle.policy import POLICIES, Policy, item_policy, policy_for, without_eager
from gemmconf.oracle.verdict import VALUE_CHECKS, Check, Verdict

__all__ = [
    "PIECE_ELEMENTS",
    "POLICIES",
    "VALUE_CHECKS",
    "Check",
    "Policy",
    "Verdict",
    "item_policy",
    "judge",
    "pieces",
    "policy_for",
    "without_eager",
]
