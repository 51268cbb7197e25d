"""Tests of harness/oracle.py: planted bugs it must catch, correct backends it must pass.

The "backends" here are GEMMs written out in Python: the same math as eager with another
summation order (correct), accumulation in fp16/bf16 or TF32 inputs (bugs
docs/measurements.md measured).
"""

from __future__ import annotations

import math
from pathlib import Path

import planted_backends
import pytest
import torch

from gemmconf.oracle import POLICIES, Verdict, judge, policy_for, without_eager

SUITES = Path(__file__).resolve().parents[1] / "suites"

E4M3 = torch.float8_e4m3fn
SEEDS = range(5)


def gemm_inputs(
    dtype: torch.dtype, m: int, n: int, k: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """randn / K^0.25 operands: outputs of unit-ish size that neither overflow nor cancel."""
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=gen) / k**0.25
    b = torch.randn(k, n, generator=gen) / k**0.25
    return a.to(dtype), b.to(dtype)


def fp64(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.double() @ b.double()


def chunk_products(a: torch.Tensor, b: torch.Tensor, chunk: int) -> torch.Tensor:
    """The fp32 partial products of each `chunk`-wide slice of K, shape (K/chunk, M, N)."""
    m, k = a.shape
    chunk = min(chunk, k)
    a3 = a.float().reshape(m, k // chunk, chunk).transpose(0, 1)
    return torch.bmm(a3, b.float().reshape(k // chunk, chunk, -1))


def fp32_reversed(a: torch.Tensor, b: torch.Tensor, chunk: int = 32) -> torch.Tensor:
    """A correct GEMM: fp32 partials summed sequentially in fp32, last K chunk first."""
    partials = chunk_products(a, b, chunk)
    acc = torch.zeros_like(partials[0])
    for partial in partials.flip(0):
        acc = acc + partial
    return acc.to(a.dtype)


def accumulate_in(dtype: torch.dtype, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The planted bug: each 32-wide K chunk is exact, the running sum is kept in `dtype`."""
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=dtype)
    for partial in chunk_products(a, b, 32):
        acc = (acc.float() + partial).to(dtype)
    return acc


def round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """Round fp32 mantissas to TF32's 10 bits (to nearest, ties to even)."""
    bits = x.contiguous().view(torch.int32)
    bits = (bits + 0x0FFF + ((bits >> 13) & 1)) & ~0x1FFF
    return bits.view(torch.float32)


def failed_checks(verdict: Verdict) -> set[str]:
    return {c.name for c in verdict.checks if not c.passed}


# Correct results pass.


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_identical_results_pass_with_err_ratio_one(dtype):
    a, b = gemm_inputs(dtype, 64, 64, 256, seed=0)
    expected = a @ b
    verdict = judge(expected, expected.clone(), fp64(a, b), k=256)
    assert verdict.passed, verdict.message()
    assert verdict.err_ratio == pytest.approx(1.0)
    assert verdict.mismatches == 0 and verdict.numel == 64 * 64
    assert verdict.max_abs_err == verdict.eager_abs_err > 0


@pytest.mark.parametrize("k", [16, 256, 4096])
def test_fp32_with_another_summation_order_passes(k):
    for seed in range(3):
        a, b = gemm_inputs(torch.float32, 64, 64, k, seed)
        sequential = fp32_reversed(a, b, chunk=1)  # one K element at a time: the worst order
        verdict = judge(a @ b, sequential, fp64(a, b), k=k)
        assert verdict.passed, verdict.message()
        assert verdict.err_ratio < 1.5


@pytest.mark.parametrize("k", [64, 1024, 4096])
def test_tf32_rounded_inputs_fail_fp32_and_pass_tf32(k):
    a, b = gemm_inputs(torch.float32, 64, 64, k, seed=1)
    tf32_result = round_to_tf32(a) @ round_to_tf32(b)
    reference = fp64(a, b)
    as_fp32 = judge(a @ b, tf32_result, reference, k=k, policy=policy_for(torch.float32))
    assert not as_fp32.passed
    assert as_fp32.err_ratio > 50
    assert as_fp32.message().startswith("Tensor-likes are not close! err_ratio")
    as_tf32 = judge(
        a @ b, tf32_result, reference, k=k, policy=policy_for(torch.float32, compute="tf32")
    )
    assert as_tf32.passed, as_tf32.message()
    assert as_tf32.policy == "tf32"


def truncate_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """What tensor cores read from fp32 registers: the low 13 mantissa bits dropped."""
    return (x.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32)


@pytest.mark.parametrize(("alpha", "beta"), [(1.0, 1.0), (2.0, -1.0)], ids=["plain", "a2_b-1"])
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("k", [1, 2, 16])
def test_truncated_tf32_passes_at_small_k_where_the_largest_product_dwarfs_the_rms(
    k, seed, alpha, beta
):
    """Inductor's TRITON addmm at K=1 on an H200 was off by exactly the truncation error, 4.8x
    the floor alone (eager's own error there was under the floor). The per-element input-rounding
    bound (`rounding`) admits it; without it the same result fails for some seeds."""
    a, b = gemm_inputs(torch.float32, 64, 48, k, seed)
    c = 2 * torch.randn(64, 48, generator=torch.Generator().manual_seed(seed))
    reference = beta * c.double() + alpha * fp64(a, b)
    truncated = (
        beta * c + alpha * (truncate_to_tf32(a).double() @ truncate_to_tf32(b).double()).float()
    )
    # |alpha| * (|A| @ |B|), as program.make_rounding_magnitude builds it: C is not rounded
    rounding = abs(alpha) * (a.double().abs() @ b.double().abs())
    policy = policy_for(torch.float32, compute="tf32")
    verdict = judge(reference.float(), truncated, reference, k=k, policy=policy, rounding=rounding)
    assert verdict.passed, verdict.message()


def test_the_tf32_bound_still_catches_a_wrong_product():
    """The input-rounding bound is 2^-9 of each |a||b| sum: a dropped K term is far beyond it."""
    a, b = gemm_inputs(torch.float32, 64, 48, 2, seed=3)
    reference = fp64(a, b)
    dropped = a[:, :1] @ b[:1, :]  # the second K term lost
    rounding = a.double().abs() @ b.double().abs()
    verdict = judge(
        reference.float(),
        dropped,
        reference,
        k=2,
        policy=policy_for(torch.float32, compute="tf32"),
        rounding=rounding,
    )
    assert not verdict.passed and verdict.err_ratio > 50


@pytest.mark.parametrize("k", [16, 1024, 16384])
def test_tf32_s_floor_is_the_same_at_every_k(k):
    """A torchao trial (2026-12-02): int8 products (7 bits) passed tf32 items from K = 1024 on,
    err_ratio 0.15 at K = 65536, under a floor that grew with sqrt(K). An input rounding's
    relative error does not grow with K: TF32 truncated passes at every K, int8 fails."""
    policy = policy_for(torch.float32, compute="tf32")
    a, b = gemm_inputs(torch.float32, 64, 64, k, seed=5)
    reference = fp64(a, b)
    truncated = truncate_to_tf32(a) @ truncate_to_tf32(b)
    kept = judge(a @ b, truncated, reference, k=k, policy=policy)
    assert kept.passed and kept.err_ratio < 1.5, kept.message()
    int8 = planted_backends.int8_mm(a, b)  # both operands quantized, aten's _int_mm
    lost = judge(a @ b, int8, reference, k=k, policy=policy)
    assert not lost.passed and lost.err_ratio > 5, lost.message()


@pytest.mark.parametrize("k", [1024, 4096])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_low_precision_accumulation_is_caught(dtype, k):
    for seed in SEEDS:
        a, b = gemm_inputs(dtype, 64, 64, k, seed)
        verdict = judge(a @ b, accumulate_in(dtype, a, b), fp64(a, b), k=k)
        assert not verdict.passed, f"seed {seed}: {verdict.message()}"
        assert verdict.err_ratio > POLICIES[verdict.policy].max_ratio
        assert verdict.mismatches > 0
        assert verdict.checks[-1].name == "values" and not verdict.checks[-1].passed


@pytest.mark.parametrize("k", [16, 64, 256, 1024, 4096, 16384, 65536])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_fp32_accumulated_half_gemm_passes_at_every_k(dtype, k):
    m = n = 64 if k <= 4096 else 4
    for seed in SEEDS:
        a, b = gemm_inputs(dtype, m, n, k, seed)
        verdict = judge(a @ b, fp32_reversed(a, b), fp64(a, b), k=k)
        assert verdict.passed, f"seed {seed}: {verdict.message()}"
        assert verdict.err_ratio <= 1.5


def test_exact_eager_does_not_zero_the_floor():
    gen = torch.Generator().manual_seed(0)
    a = torch.randint(-4, 5, (16, 64), generator=gen).float()
    b = torch.randint(-4, 5, (64, 16), generator=gen).float()
    expected = a @ b  # small integers: exact in fp32
    verdict = judge(expected, expected * (1 + 2**-22), fp64(a, b), k=64)
    assert verdict.eager_abs_err == 0.0
    assert verdict.floor > 0
    assert verdict.passed, verdict.message()
    wrong = judge(expected, expected * (1 + 2**-12), fp64(a, b), k=64)
    assert not wrong.passed


def test_one_output_ulp_is_allowed_when_eager_rounded_luckily():
    reference = torch.tensor([1.0 + 2**-12], dtype=torch.float64)  # 1/32 bf16 ulp above 1.0
    expected = reference.to(torch.bfloat16)  # 1.0, almost exact
    one_ulp = torch.tensor([1.0 + 2**-7], dtype=torch.bfloat16)
    two_ulps = torch.tensor([1.0 + 2**-6], dtype=torch.bfloat16)
    assert judge(expected, one_ulp, reference, k=8).passed
    verdict = judge(expected, two_ulps, reference, k=8)
    assert not verdict.passed
    assert verdict.worst_index == (0,)


# Attributes, special values and exact outputs.


def test_wrong_dtype_is_reported_and_values_still_measured():
    a, b = gemm_inputs(torch.float16, 8, 8, 32, seed=0)
    expected = a @ b
    verdict = judge(expected, expected.float(), fp64(a, b), k=32)
    assert not verdict.passed
    assert failed_checks(verdict) == {"dtype"}
    assert verdict.err_ratio is not None and verdict.err_ratio <= 1.0
    first = verdict.message().splitlines()[0]
    assert first == "The output's dtype is torch.float32, where eager's is torch.float16."


def test_wrong_shape_and_dtype_are_both_kept():
    expected = torch.zeros(2, 3, dtype=torch.bfloat16)
    verdict = judge(expected, torch.zeros(3, 2), torch.zeros(2, 3, dtype=torch.float64), k=4)
    assert not verdict.passed
    assert failed_checks(verdict) == {"shape", "dtype"}
    assert verdict.max_abs_err is None and verdict.err_ratio is None
    text = verdict.message()
    assert "The output's shape is torch.Size([3, 2]), where eager's is torch.Size([2, 3])." in text
    assert "The output's dtype is torch.float32, where eager's is torch.bfloat16." in text


def test_wrong_device_type_is_reported():
    expected = torch.ones(2, 2)
    verdict = judge(expected, torch.ones(2, 2, device="meta"), expected.double(), k=2)
    assert not verdict.passed
    assert failed_checks(verdict) == {"device"}
    assert "The output's device is meta, where eager's is cpu." in verdict.message()


def test_nan_where_eager_is_finite_is_a_mismatch():
    expected = torch.tensor([1.0, float("nan"), 2.0, float("inf")])
    reference = expected.double()
    assert judge(expected, expected.clone(), reference, k=4).passed

    actual = torch.tensor([1.0, 3.0, float("nan"), float("inf")])
    verdict = judge(expected, actual, reference, k=4)
    assert not verdict.passed
    assert failed_checks(verdict) == {"nonfinite"}
    assert verdict.mismatches == 2
    lines = verdict.message().splitlines()
    assert lines[0].startswith("Tensor-likes are not close! NaN/Inf positions differ from eager")
    assert "Mismatched elements: 2 / 4 (50.0%)" in lines
    assert "first at index (1,): actual 3.0, expected nan" in verdict.message()

    flipped = torch.tensor([1.0, float("nan"), 2.0, float("-inf")])
    assert judge(expected, flipped, reference, k=4).mismatches == 1


def eager_with_inf_in_half(seed: int = 0) -> tuple[torch.Tensor, ...]:
    """What an H200 gave for a blockwise fp8 GEMM with fp16 output (torch 2.11): the right
    values in the first 128 columns, inf in the rest."""
    a, b = gemm_inputs(torch.float16, 16, 256, 64, seed)
    reference = fp64(a, b)
    right = reference.to(torch.float16)
    eager = right.clone()
    eager[:, 128:] = float("inf")
    magnitude = fp64(a.abs(), b.abs())
    return eager, right, reference, magnitude


def test_fp64_refutes_eager_nonfinite_values_that_cannot_overflow():
    eager, right, reference, magnitude = eager_with_inf_in_half()
    verdict = judge(eager, right, reference, k=64, magnitude=magnitude)
    assert verdict.passed and verdict.eager_wrong == 16 * 128
    assert "Eager is wrong at 2048 element(s)" in verdict.message()
    assert "first at index (0, 128): eager inf" in verdict.message()
    as_backend = judge(eager, eager.clone(), reference, k=64, magnitude=magnitude)
    assert not as_backend.passed and as_backend.mismatches == 2048  # eager run as a backend
    assert not judge(eager, right, reference, k=64).passed  # without the magnitude, eager rules


def test_fp64_does_not_refute_eager_where_a_partial_sum_may_overflow():
    eager, right, reference, magnitude = eager_with_inf_in_half()
    near_max = magnitude.clone()
    near_max[:, 128:] = torch.finfo(torch.float16).max  # |A|@|B| too large: inf may be honest
    verdict = judge(eager, right, reference, k=64, magnitude=near_max)
    assert not verdict.passed and verdict.eager_wrong == 0
    too_big = reference.clone()
    too_big[:, 128:] = 60000.0  # within fp16, but rounding may reach inf
    assert judge(eager, right, too_big, k=64, magnitude=magnitude).eager_wrong == 0


def test_untrusted_eager_does_not_widen_the_tolerance():
    a, b = gemm_inputs(torch.bfloat16, 32, 256, 256, 0)
    reference = fp64(a, b)
    garbage = (reference + torch.linspace(0, 40, 256)).to(torch.bfloat16)  # eager off by <= 40
    off_by_20 = (reference + 20).to(torch.bfloat16)  # a wrong backend, "better" than eager
    assert judge(garbage, off_by_20, reference, k=256).passed  # eager's error widens it
    fp64_only = without_eager(policy_for(torch.bfloat16))
    verdict = judge(garbage, off_by_20, reference, k=256, policy=fp64_only)
    assert not verdict.passed
    assert "x the floor (eager's error not trusted here)" in verdict.message()
    assert judge(garbage, reference.to(torch.bfloat16), reference, k=256, policy=fp64_only).passed
    fp8 = without_eager(policy_for(torch.bfloat16, compute="e4m3fn"))
    assert fp8.floor_eps == POLICIES["fp8_fast_accum"].floor_eps and not fp8.trust_eager


def test_int_outputs_must_match_exactly():
    gen = torch.Generator().manual_seed(0)
    a = torch.randint(-128, 128, (32, 64), generator=gen, dtype=torch.int8)
    b = torch.randint(-128, 128, (64, 16), generator=gen, dtype=torch.int8)
    expected = torch._int_mm(a, b)
    # Integer outputs are exact whatever float policy the caller passes.
    assert judge(expected, expected.clone(), k=64, policy=POLICIES["bf16"]).passed
    off_by_one = expected.clone()
    off_by_one[1, 2] += 1
    verdict = judge(expected, off_by_one, k=64, policy=POLICIES["bf16"])
    assert not verdict.passed
    assert verdict.policy == "int" and verdict.mismatches == 1
    assert verdict.worst_index == (1, 2) and verdict.max_abs_err == 1
    lines = verdict.message().splitlines()
    assert lines[0] == "Tensor-likes are not equal! (int, K=64)"
    assert lines[1] == f"Mismatched elements: 1 / {32 * 16} (0.2%)"
    assert lines[2] == "Greatest absolute difference: 1 at index (1, 2)"


# Multi-output results, zero sizes, fp8, no reference.


def test_multi_output_reports_which_output_failed():
    a, b = gemm_inputs(torch.bfloat16, 64, 64, 1024, seed=2)
    result = a @ b
    ints = torch.arange(6, dtype=torch.int32)
    expected = (ints, result)
    reference = (None, fp64(a, b))
    assert judge(expected, (ints.clone(), result.clone()), reference, k=1024).passed

    verdict = judge(
        expected, (ints.clone(), accumulate_in(torch.bfloat16, a, b)), reference, k=1024
    )
    assert not verdict.passed
    assert [part.passed for part in verdict.parts] == [True, False]
    assert verdict.parts[1].output == (1,)
    lines = verdict.message().splitlines()
    assert lines[0].startswith("Tensor-likes are not close! err_ratio")
    assert lines[0].endswith("(bf16, K=1024, output [1])")
    assert "The failure occurred for output [1]." in lines


def test_multi_output_structure_mismatch():
    t = torch.ones(2)
    shorter = judge((t, t), (t,), k=1)
    assert not shorter.passed
    assert failed_checks(shorter) == {"length"}
    assert shorter.message().startswith("The length of the sequences do not match: 1 != 2")

    not_a_tuple = judge((t, t), t, k=1)
    assert not not_a_tuple.passed and failed_checks(not_a_tuple) == {"type"}
    assert "The types do not match" in not_a_tuple.message()

    nested = judge([t, (t, t)], [t, (t, t * 2)], k=1)
    assert not nested.passed
    assert "The failure occurred for output [1][1]." in nested.message()
    assert judge(None, None, k=1).passed
    assert not judge(None, t, k=1).passed


def test_k_zero():
    a, b = torch.randn(4, 0), torch.randn(0, 3)
    expected, reference = a @ b, fp64(a, b)
    verdict = judge(expected, torch.zeros(4, 3), reference, k=0)
    assert verdict.passed, verdict.message()
    assert verdict.err_ratio == 0.0
    assert not judge(expected, torch.full((4, 3), 1e-30), reference, k=0).passed

    bias = torch.randn(3)
    addmm = torch.addmm(bias, a, b)
    assert judge(addmm, bias.expand(4, 3).clone(), bias.double().expand(4, 3), k=0).passed
    assert not judge(addmm, torch.zeros(4, 3), bias.double().expand(4, 3), k=0).passed


def test_empty_outputs_compare_attributes_only():
    expected = torch.randn(0, 5, dtype=torch.bfloat16)
    reference = torch.zeros(0, 5, dtype=torch.float64)
    verdict = judge(expected, torch.empty(0, 5, dtype=torch.bfloat16), reference, k=16)
    assert verdict.passed and verdict.numel == 0 and verdict.max_abs_err is None
    assert not judge(expected, torch.empty(0, 4, dtype=torch.bfloat16), reference, k=16).passed
    wrong_dtype = judge(expected, torch.empty(0, 5), reference, k=16)
    assert failed_checks(wrong_dtype) == {"dtype"}


def test_fp8_outputs_are_compared_after_upcast():
    a, b = gemm_inputs(torch.float32, 64, 64, 256, seed=3)
    a, b = a * 8, b * 8  # outputs well inside e4m3's normal range
    expected = (a @ b).to(E4M3)
    reference = fp64(a, b)
    assert policy_for(E4M3).name == "fp8"
    one_ulp_off = expected.clone()
    one_ulp_off.view(torch.uint8)[0, 0] ^= 1  # neighbouring e4m3 value: bitwise different
    assert not torch.equal(one_ulp_off.view(torch.uint8), expected.view(torch.uint8))
    assert judge(expected, one_ulp_off, reference, k=256).passed
    scaled_twice = (a @ b * 2).to(E4M3)
    verdict = judge(expected, scaled_twice, reference, k=256)
    assert not verdict.passed and verdict.policy == "fp8"


@pytest.mark.parametrize("fast_accum", [False, True])
def test_fp8_inputs_with_bf16_output(fast_accum):
    a, b = gemm_inputs(torch.float32, 32, 64, 512, seed=4)
    a8, b8 = (a * 16).to(E4M3), (b * 16).to(E4M3)
    scale = torch.tensor(1 / 16)
    expected = torch._scaled_mm(a8, b8.t().contiguous().t(), scale, scale, out_dtype=torch.bfloat16)
    reference = (a8.double() / 16) @ (b8.double() / 16)
    policy = policy_for(torch.bfloat16, compute="e4m3fn", fast_accum=fast_accum)
    assert policy.name == ("fp8_fast_accum" if fast_accum else "fp8")
    dequantized = (a8.float() / 16).to(torch.bfloat16), (b8.float() / 16).to(torch.bfloat16)
    correct = fp32_reversed(*dequantized)
    assert judge(expected, correct, reference, k=512, policy=policy).passed
    unscaled = torch._scaled_mm(
        a8, b8.t().contiguous().t(), scale, torch.tensor(1.0), out_dtype=torch.bfloat16
    )
    assert not judge(expected, unscaled, reference, k=512, policy=policy).passed


def test_without_reference_compares_with_eager():
    a, b = gemm_inputs(torch.bfloat16, 64, 64, 1024, seed=0)
    expected = a @ b
    verdict = judge(expected, fp32_reversed(a, b), None, k=1024)
    assert verdict.passed, verdict.message()
    assert verdict.mode == "eager" and verdict.err_ratio is None
    wrong = judge(expected, expected * 1.1, None, k=1024)
    assert not wrong.passed
    assert wrong.message().splitlines()[0] == (
        "Tensor-likes are not close! (no fp64 reference, bf16, K=1024)"
    )


def test_message_layout_and_repro_line():
    expected = torch.tensor([1.0, 2.0, 3.0], dtype=torch.bfloat16)
    actual = torch.tensor([1.0, 4.0, 5.0], dtype=torch.bfloat16)
    verdict = judge(expected, actual, expected.double(), k=4096)
    repro = "pytest 'suites/mm.yaml::mm-bf16-3x1x4096[reference]'"
    lines = verdict.message(what="mm bf16 (3,) K=4096", repro=repro).splitlines()
    assert lines[0].startswith("Tensor-likes are not close! err_ratio ")
    assert lines[0].endswith(" > 3.0 allowed (bf16, K=4096)")
    assert lines[1] == "Mismatched elements: 2 / 3 (66.7%)"
    assert lines[2].startswith("Greatest absolute difference: 2.0 at index (1,) (up to ")
    assert lines[3] == "Greatest relative difference: 1.0 at index (1,)"
    assert lines[4].startswith("Eager's own error against fp64: 0.0; floor ")
    assert lines[-2] == "Compared: mm bf16 (3,) K=4096"
    assert lines[-1] == f"Reproduce: {repro}"
    assert verdict.metrics() == {
        "max_abs_err": 2.0,
        "max_rel_err": 1.0,
        "err_ratio": verdict.err_ratio,
    }


def test_policy_table():
    assert policy_for(torch.float32).name == "fp32"
    assert policy_for(torch.float32, compute="tf32").name == "tf32"
    assert policy_for(torch.float32, compute="bf16").name == "fp32"
    assert policy_for(torch.float16).name == "fp16"
    assert policy_for(torch.bfloat16, compute="e5m2").name == "fp8"
    assert policy_for(torch.int32, compute="int8") == POLICIES["int"]
    assert POLICIES["int"].exact and not POLICIES["fp8"].exact
    assert POLICIES["fp32"].floor_eps < POLICIES["tf32"].floor_eps
    assert policy_for(torch.bfloat16, compute="fp4").name == "fp8"  # NVFP4: fp32 sums too
    with pytest.raises(ValueError, match="unknown compute"):
        policy_for(torch.float32, compute="fp6")


def test_harness_mistakes_raise():
    with pytest.raises(ValueError, match="reference shape"):
        judge(torch.ones(2, 2), torch.ones(2, 2), torch.ones(3), k=1)
    with pytest.raises(ValueError, match="k must be"):
        judge(torch.ones(2), torch.ones(2), k=-1)


def test_strides_are_checked_only_when_asked_and_only_where_eager_is_row_major():
    expected = torch.randn(8, 6)
    column_major = expected.t().contiguous().t()
    assert judge(expected, column_major, k=4).passed  # the values are right
    verdict = judge(expected, column_major, k=4, strides=True)
    assert not verdict.passed
    assert [c.name for c in verdict.checks if not c.passed] == ["strides"]
    assert "The output's strides (1, 8) are not row-major" in verdict.message()
    # size-1 dims have no stride that matters; a non-contiguous eager output fixes nothing
    row = torch.randn(1, 6)
    assert judge(row, row.t().contiguous().t(), k=4, strides=True).passed
    assert judge(column_major, expected.clone(), k=4, strides=True).passed


def test_a_backward_item_s_gradients_may_have_any_layout_its_result_may_not():
    """Gradients come from torch.autograd.grad, whose layout no contract fixes (inductor pads
    an fp32 gradient's rows to (2244, 68, 1)); the forward result keeps the op's row-major one."""
    from gemmconf import item
    from gemmconf.scenario import load_suite

    out, grad = torch.randn(8, 6), torch.randn(6, 5)
    padded = torch.empty(6, 8)[:, :5].copy_(grad)  # row stride 8, not 5
    column_major = out.t().contiguous().t()
    result_only = frozenset({(0,)})
    assert judge((out, grad), (out, padded), k=4, strides=result_only).passed
    assert not judge((out, grad), (out, padded), k=4, strides=True).passed
    verdict = judge((out, grad), (column_major, grad), k=4, strides=result_only)
    assert [c.name for c in verdict.checks if not c.passed] == ["strides"]

    found = {i.id: i for i in load_suite(SUITES / "backward" / "backward.yaml")}
    backward = next(i for i in found.values() if i.op == "mm")
    assert item.fixed_strides(backward) == result_only
    forward = next(i for i in load_suite(SUITES / "dense" / "first.yaml") if i.op == "mm")
    assert item.fixed_strides(forward) is True


def test_a_failing_gradient_is_named_beside_its_output_path():
    from gemmconf import item
    from gemmconf.scenario import load_suite

    out, grad_a, grad_b = torch.randn(8, 6), torch.randn(8, 4), torch.randn(4, 6)
    names = {(0,): "the forward result", (1,): "the gradient of a", (2,): "the gradient of b"}
    verdict = judge((out, grad_a, grad_b), (out, grad_a, grad_b + 1), k=4, names=names)
    assert not verdict.passed
    assert "output [2], the gradient of b" in verdict.message()
    assert "gradient of a" not in verdict.message()  # only the failing output is shown

    backward = next(
        i for i in load_suite(SUITES / "backward" / "backward.yaml") if i.op == "mm" and i.backward
    )
    assert item.output_names(backward) == names
    forward = next(i for i in load_suite(SUITES / "dense" / "first.yaml") if i.op == "mm")
    assert item.output_names(forward) == {}


def _cases_for_pieces() -> dict[str, tuple[tuple, dict]]:
    """judge() arguments covering every path that reads an output in pieces."""
    gen = torch.Generator().manual_seed(7)
    ref = torch.randn(37, 53, generator=gen, dtype=torch.float64)
    eager = ref.to(torch.bfloat16)
    wrong = eager.clone()
    wrong[3, 5] = wrong[3, 5] + 1  # one bad element, past the first piece
    wrong[30, 1] = wrong[30, 1] * 1.02
    specials = eager.clone()
    specials[0, 0], specials[20, 7] = float("nan"), float("inf")
    both_nan = wrong.clone()
    both_nan[9, 9] = float("nan")
    eager_nan = eager.clone()
    eager_nan[9, 9] = float("nan")
    eager_inf = eager.clone()
    eager_inf[11, 40], eager_inf[35, 2] = float("inf"), float("-inf")
    fp32_ref = torch.randn(29, 31, generator=gen, dtype=torch.float64)
    tf32 = (fp32_ref * (1 + 2.0**-11)).float()
    ints = torch.randint(-50, 50, (41, 17), generator=gen, dtype=torch.int32)
    ints_off = ints.clone()
    ints_off[2, 3] += 4
    ints_off[40, 16] -= 9
    floats_nan = ref.float()
    floats_nan[5, 5] = float("nan")
    bf16 = POLICIES["bf16"]
    return {
        "passes": ((eager, eager, ref), {"k": 64, "policy": bf16}),
        "fails": ((eager, wrong, ref), {"k": 64, "policy": bf16}),
        "nonfinite_differ": ((eager, specials, ref), {"k": 64, "policy": bf16}),
        "nan_in_both": ((both_nan, both_nan, ref), {"k": 64, "policy": bf16}),
        "eager_refuted": (
            (eager_inf, eager, ref),
            {"k": 64, "policy": bf16, "magnitude": ref.abs()},
        ),
        "eager_nan_kept": ((eager_nan, eager, ref), {"k": 64, "policy": bf16}),
        "tf32_rounding": (
            (fp32_ref.float(), tf32, fp32_ref),
            {"k": 8, "policy": POLICIES["tf32"], "rounding": fp32_ref.abs()},
        ),
        "against_eager": ((eager, wrong), {"k": 64, "policy": bf16}),
        "exact_ints": ((ints, ints_off), {"k": 4}),
        "exact_floats": ((floats_nan, floats_nan.clone()), {"k": 4, "policy": POLICIES["exact"]}),
        "transposed_actual": ((eager, eager.t().contiguous().t(), ref), {"k": 64, "policy": bf16}),
    }


@pytest.mark.parametrize("case", sorted(_cases_for_pieces()))
def test_an_output_judged_in_pieces_gets_the_verdict_of_one_piece(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """Outputs past PIECE_ELEMENTS are read in pieces, each judged on the compute device: the
    verdict (pass or fail, counts, worst and relative-worst positions, allowances, messages) is
    the one the whole output gets; the error figures agree to fp64 rounding (sums in another
    order)."""
    from gemmconf.oracle import judgment

    args, kwargs = _cases_for_pieces()[case]
    whole = judge(*args, **kwargs)
    monkeypatch.setattr(judgment, "PIECE_ELEMENTS", 64)
    assert args[0].numel() > 64 * 4
    pieces = judge(*args, **kwargs)
    assert pieces.passed == whole.passed
    assert [c.message for c in pieces.checks] == [c.message for c in whole.checks]
    for field in ("mismatches", "numel", "worst_index", "rel_index", "eager_wrong", "mode"):
        assert getattr(pieces, field) == getattr(whole, field), field
    for field in ("max_abs_err", "max_rel_err", "err_ratio", "eager_abs_err", "floor"):
        a, b = getattr(pieces, field), getattr(whole, field)
        assert (a is None) == (b is None), field
        if a is not None:
            assert a == pytest.approx(b, rel=1e-12, nan_ok=True), field
    assert pieces.worst_allowed == pytest.approx(whole.worst_allowed, rel=1e-12)


def test_no_tensor_moves_to_the_compute_device_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A large output's fp64 reference may stay on the host while eager's and the backend's
    outputs are on the GPU: no tensor is moved to the compute device whole, only pieces."""
    from gemmconf.oracle import judgment

    args, kwargs = _cases_for_pieces()["fails"]
    moved: list[int] = []
    original = judgment._Reader.__call__

    def spy(self, name, piece, dtype=None):  # type: ignore[no-untyped-def]
        moved.append(piece.stop - piece.start)
        return original(self, name, piece, dtype)

    monkeypatch.setattr(judgment, "PIECE_ELEMENTS", 100)
    monkeypatch.setattr(judgment._Reader, "__call__", spy)
    verdict = judge(*args, **kwargs)
    assert not verdict.passed and verdict.mismatches == 2
    assert max(moved) <= 100


def test_an_fp32_result_with_bf16_precision_only_is_caught_where_the_tolerance_allows_it():
    """A trial's backend rounded MX/NVFP4 fp32 outputs to bf16: judged without eager, the
    tolerance (Hopper's fp8 accumulation floor) allowed it at K = 128, and 20 items passed."""
    a, b = gemm_inputs(torch.float32, 64, 64, 128, seed=0)
    exact = fp64(a, b)
    right = exact.float()
    widened = right.bfloat16().float()
    policy = without_eager(POLICIES["fp8"])
    assert judge(right, right, exact, k=128, policy=policy).passed
    verdict = judge(right, widened, exact, k=128, policy=policy)
    assert not verdict.passed and failed_checks(verdict) == {"precision"}
    assert verdict.err_ratio is not None and verdict.err_ratio <= 3.0  # within the tolerance
    first = verdict.message().splitlines()[0]
    assert first.startswith("The float32 result carries bf16's precision only: all 4096 of its")
    halved = judge(right, right.half().float(), exact, k=128, policy=policy)
    assert failed_checks(halved) == {"precision"} and "fp16's precision" in halved.message()
    # nothing to tell: eager rounds the same way, or the exact result is such values anyway
    assert judge(widened, widened, exact, k=128, policy=policy).passed
    whole = torch.randint(-4, 5, (64, 64)).double()
    assert judge(whole.float(), whole.float(), whole, k=128, policy=policy).passed


def test_a_16_bit_program_s_result_is_told_only_of_a_coarser_float():
    """A bf16 GEMM cast to float32 (`epilogue/multi_output[mm-keep_cast-bf16]`): eager's result
    is bf16's values, one of them below fp16's normal range; a torchao trial's backend returned
    bf16 values without such a one, which fp16 also holds, and read "computed or stored in
    fp16". A bf16 result for an fp16 program is still told (3 mantissa bits fewer)."""
    from gemmconf.oracle.judgment import _precision_check

    a, b = gemm_inputs(torch.bfloat16, 64, 64, 40, seed=3)
    exact = fp64(a.float(), b.float())
    eager = exact.bfloat16().float()
    eager[0, 0] = -(2.0**-20 + 2.0**-27)  # a bf16 value; fp16 holds it as a subnormal, rounded
    backend = exact.bfloat16().float()
    backend[0, 0] = 0.25
    assert bool((backend.half().float() == backend).all())  # every value is an fp16 value too
    assert _precision_check(eager, backend, exact, ()) is None
    h, g = gemm_inputs(torch.float16, 64, 64, 40, seed=4)
    exact = fp64(h.float(), g.float())
    coarser = _precision_check(exact.half().float(), exact.bfloat16().float(), exact, ())
    assert coarser is not None and "carries bf16's precision only" in coarser.message


def test_a_wrong_dtype_heads_the_message_of_wrong_values():
    """A bf16 result for an fp32 item used to open with "not close", its dtype on line 6."""
    a, b = gemm_inputs(torch.float32, 16, 16, 64, seed=1)
    expected = a @ b
    wrong = (expected * 2).bfloat16()
    verdict = judge(expected, wrong, fp64(a, b), k=64)
    assert failed_checks(verdict) == {"dtype", "values"}
    first = verdict.message().splitlines()[0]
    assert first.startswith(
        "The output's dtype is torch.bfloat16, where eager's is torch.float32. "
        "Tensor-likes are not close! err_ratio"
    )


def test_a_backward_items_sum_length_is_named_as_such():
    """A backward item's floor scales with the longest sum its outputs take (max of M, N, K):
    its failures said "K=64" where K was 48."""
    a, b = gemm_inputs(torch.float32, 8, 8, 48, seed=2)
    expected = a @ b
    text = judge(expected, expected * 2, fp64(a, b), k=64, k_name="longest sum").message()
    assert "(fp32, longest sum 64)" in text.splitlines()[0]
    assert "(fp32, K=48)" in judge(expected, expected * 2, fp64(a, b), k=48).message()


def test_an_output_left_all_nan_has_no_err_ratio_not_zero():
    """A bitsandbytes trial (2026-12-02): an fp16 output the backend never wrote (NaN) read
    err_ratio 0.0 (its error was taken over no element), and grouping put those failures apart
    with "median 0". Nothing finite in all three: not measured."""
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    expected = a @ b
    verdict = judge(expected, torch.full_like(expected, math.nan), fp64(a, b), k=16)
    assert not verdict.passed and verdict.err_ratio is None
    assert "NaN/Inf positions differ from eager" in verdict.message()
    half = expected.clone()
    half[:4] = math.nan  # half measured: the figure is the measured half's
    partly = judge(expected, half, fp64(a, b), k=16)
    assert not partly.passed and partly.err_ratio is not None
