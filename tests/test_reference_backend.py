"""Tests of the reference GEMM backend (backend/) and its harness adapter.

Every compiled result is compared with eager PyTorch on the same inputs (fp32 within 1e-5 of the
output's scale, fp16/bf16 within 1e-2, integers exactly) and every test checks that the GEMM was
really lowered (a silent eager fallback would pass any numeric check). On a CPU the kernels run in
the Triton interpreter, so shapes stay small; on a GPU the same tests run compiled. Code checks
cross-compile the launched kernels for sm80/sm90/sm100 and look for the ops each path must emit.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from gemmconf.backends.base import RunOptions
from gemmconf.backends.reference import ReferenceBackend, ReferenceCompiled
from gemmconf.codecheck import IR_SPELLINGS
from gemmconf_reference import BackendOptions, compat, configs, kernels, launcher
from gemmconf_reference.crosscompile import specialize
from gemmconf_reference.launcher import LaunchRecord
from gemmconf_reference.target import Target

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
ON_GPU = DEVICE == "cuda"
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
REPO = Path(__file__).resolve().parent.parent
MARKERS = {name: text for name, (_, text) in IR_SPELLINGS.items()}


def randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE).to(dtype)


def fp8(*shape: int, dtype: torch.dtype = E4M3) -> torch.Tensor:
    return (torch.randn(*shape, device=DEVICE) * 2).to(dtype)


def compile_ref(
    fn: Callable[..., Any],
    *,
    dynamic: bool | None = None,
    target_arch: str | None = "sm90",
    **options: Any,
) -> ReferenceCompiled:
    """The adapter's compile (isolated code object per call), with backend options."""
    backend = ReferenceBackend(BackendOptions(**options))
    backend.configure(RunOptions(target_arch=target_arch))
    return backend.compile(fn, [], dynamic=dynamic)


def launches(compiled: ReferenceCompiled) -> list[LaunchRecord]:
    return compiled.compiler.launches()


def lowered(compiled: ReferenceCompiled) -> int:
    return sum(len(graph.calls) for graph in compiled.compiler.graphs)


def tolerance(dtype: torch.dtype) -> float:
    return {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 1e-2}.get(dtype, 0.0)


def assert_like_eager(got: Any, want: Any) -> None:
    """Same dtype, shape and device; values within the dtype's tolerance of the output scale."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_like_eager(g, w)
        return
    assert got.dtype == want.dtype and got.shape == want.shape and got.device == want.device
    if want.numel() == 0:
        return
    tol = tolerance(want.dtype)
    finite = want.double().nan_to_num(0.0, 0.0, 0.0).abs().max().item()
    torch.testing.assert_close(
        got.double(), want.double(), rtol=0, atol=tol * max(finite, 1.0), equal_nan=True
    )


def check(
    fn: Callable[..., Any], *args: Any, gemms: int = 1, **compile_args: Any
) -> ReferenceCompiled:
    """Compile `fn`, run it, compare with eager, and check `gemms` GEMMs were lowered."""
    compiled = compile_ref(fn, **compile_args)
    assert_like_eager(compiled(*args), fn(*args))
    assert lowered(compiled) == gemms
    return compiled


# ops and dtypes


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_mm(dtype: torch.dtype) -> None:
    compiled = check(
        lambda a, b: torch.mm(a, b), randn(37, 45, dtype=dtype), randn(45, 29, dtype=dtype)
    )
    assert len(launches(compiled)) == 1


def test_bf16_output_rounds_to_nearest_even() -> None:
    """K=1 products are exact in fp32, so the bf16 result must be eager's rounding of them."""
    a, b = randn(64, 1, dtype=torch.bfloat16), randn(1, 64, dtype=torch.bfloat16)
    compiled = compile_ref(lambda a, b: torch.mm(a, b))
    assert torch.equal(compiled(a, b), (a.float() @ b.float()).bfloat16())
    assert lowered(compiled) == 1


@pytest.mark.parametrize("bias_shape", [(24, 20), (24, 1), (1, 20), (20,)])
@pytest.mark.parametrize(("alpha", "beta"), [(1.0, 1.0), (2.0, 0.5)])
def test_addmm_bias(bias_shape: tuple[int, ...], alpha: float, beta: float) -> None:
    check(
        lambda c, a, b: torch.addmm(c, a, b, beta=beta, alpha=alpha),
        randn(*bias_shape),
        randn(24, 40),
        randn(40, 20),
    )


def test_addmm_beta_zero_ignores_nan() -> None:
    c = torch.full((16, 12), float("nan"), device=DEVICE)
    compiled = check(
        lambda c, a, b: torch.addmm(c, a, b, beta=0, alpha=1.5), c, randn(16, 8), randn(8, 12)
    )
    assert not compiled(c, randn(16, 8), randn(8, 12)).isnan().any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_bmm(dtype: torch.dtype) -> None:
    check(
        lambda a, b: torch.bmm(a, b), randn(3, 20, 24, dtype=dtype), randn(3, 24, 18, dtype=dtype)
    )


@pytest.mark.parametrize("c_shape", [(3, 20, 18), (18,), (20, 1)])
def test_baddbmm(c_shape: tuple[int, ...]) -> None:
    check(
        lambda c, a, b: torch.baddbmm(c, a, b, beta=0.3, alpha=0.7),
        randn(*c_shape),
        randn(3, 20, 24),
        randn(3, 24, 18),
    )


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched_input", [False, True])
def test_linear(bias: bool, batched_input: bool) -> None:
    x = randn(2, 5, 24) if batched_input else randn(10, 24)
    check(lambda x, w, b: F.linear(x, w, b), x, randn(16, 24), randn(16) if bias else None)


def test_matmul_3d_by_2d_and_3d_by_3d() -> None:
    check(lambda a, b: torch.matmul(a, b), randn(2, 5, 24), randn(24, 16))
    check(lambda a, b: torch.matmul(a, b), randn(2, 5, 24), randn(2, 24, 16))


@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("bias", [False, True])
def test_scaled_mm(scaling: str, out_dtype: torch.dtype, bias: bool) -> None:
    if ON_GPU and bias and out_dtype == torch.float32:
        pytest.skip("eager CUDA rejects a bias with fp32 output (see test_errors_have_eager_class)")
    m, k, n = 32, 64, 48
    if scaling == "tensorwise":
        sa, sb = torch.tensor(0.5, device=DEVICE), torch.tensor(2.0, device=DEVICE)
    else:
        sa, sb = torch.rand(m, 1, device=DEVICE), torch.rand(1, n, device=DEVICE)
    bias_t = randn(n, dtype=torch.bfloat16 if out_dtype == torch.bfloat16 else out_dtype)
    check(
        lambda a, b, sa, sb, bias: torch._scaled_mm(a, b, sa, sb, bias=bias, out_dtype=out_dtype),
        fp8(m, k),
        fp8(n, k).t(),
        sa,
        sb,
        bias_t if bias else None,
    )


@pytest.mark.parametrize("b_dtype", [E4M3, E5M2])
def test_scaled_mm_e5m2(b_dtype: torch.dtype) -> None:
    if ON_GPU and b_dtype == E5M2:
        pytest.skip("eager CUDA rejects e5m2 x e5m2 (see test_errors_have_eager_class)")
    one = torch.tensor(1.0, device=DEVICE)
    check(
        lambda a, b, s: torch._scaled_mm(a, b, s, s, out_dtype=torch.bfloat16),
        fp8(32, 64, dtype=E5M2),
        fp8(48, 64, dtype=b_dtype).t(),
        one,
    )


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf * 0
@pytest.mark.parametrize("special", ["nan_e4m3", "nan_e5m2", "inf_e5m2"])
def test_scaled_mm_special_values_propagate_like_eager(special: str) -> None:
    dtype = E4M3 if special.endswith("e4m3") else E5M2
    a, b = fp8(32, 64, dtype=dtype), fp8(48, 64).t()
    a[3, 5] = float("nan") if special.startswith("nan") else float("inf")
    one = torch.tensor(1.0, device=DEVICE)
    check(lambda a, b, s: torch._scaled_mm(a, b, s, s, out_dtype=torch.float32), a, b, one)


def test_scaled_mm_blockwise_against_fp64_dequantized() -> None:
    """1x128 activation scales with 128x128 weight scales (CPU eager rejects this recipe)."""
    m, k, n = 40, 320, 144  # K and N cross 128-wide scale blocks, with a partial last block
    a, b = fp8(m, k), fp8(n, k).t()
    # outer-dim-major activation scales, as eager's CUDA kernel requires (the kernel reads any
    # strides)
    sa = (torch.rand(3, m, device=DEVICE) + 0.5).t()
    sb = (torch.rand(2, 3, device=DEVICE) + 0.5).t()

    def fn(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.float32)

    compiled = compile_ref(fn, blockwise_on_cpu=True)
    got = compiled(a, b, sa, sb)
    rows = torch.arange(k, device=DEVICE) // 128
    a_deq = a.double() * sa.double()[:, rows]
    b_deq = b.double() * sb.double()[rows][:, torch.arange(n, device=DEVICE) // 128]
    want = a_deq @ b_deq
    assert lowered(compiled) == 1
    assert {r.problem.scaling for r in launches(compiled)} == {"blockwise"}
    # Hopper's fp8 MMA accumulates each 128-wide slab with fewer bits than fp32
    tol = 1e-3 if ON_GPU else 1e-5
    torch.testing.assert_close(got.double(), want, rtol=0, atol=tol * want.abs().max().item())


def test_int_mm_exact() -> None:
    a = torch.randint(-128, 128, (32, 64), dtype=torch.int8, device=DEVICE)
    b = torch.randint(-128, 128, (64, 48), dtype=torch.int8, device=DEVICE)
    compiled = check(lambda a, b: torch._int_mm(a, b), a, b)
    assert launches(compiled)[0].plan.flags()["INT_ACC"] is True


def test_int_mm_then_float_scales() -> None:
    a = torch.randint(-128, 128, (32, 64), dtype=torch.int8, device=DEVICE)
    b = torch.randint(-128, 128, (64, 48), dtype=torch.int8, device=DEVICE)
    compiled = check(
        lambda a, b, s: torch.relu(torch._int_mm(a, b)).float() * s,
        a,
        b,
        torch.rand(48, device=DEVICE),
    )
    assert [s.op for s in compiled.compiler.graphs[0].calls[0].spec.steps] == [
        "relu",
        "to_fp32",
        "mul_tensor",
    ]


@pytest.mark.parametrize("fast", [False, True])
def test_fp8_accumulation_is_promoted_per_tile_unless_fast_accum(fast: bool) -> None:
    one = torch.tensor(1.0, device=DEVICE)
    compiled = check(
        lambda a, b, s: torch._scaled_mm(a, b, s, s, out_dtype=torch.bfloat16, use_fast_accum=fast),
        fp8(32, 256),
        fp8(48, 256).t(),
        one,
    )
    assert launches(compiled)[0].plan.flags()["FAST_ACCUM"] is fast


@triton.jit
def _rounding_kernel(x_ptr, bf16_ptr, tf32_ptr, n):
    offs = tl.arange(0, 1024)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(bf16_ptr + offs, kernels.round_to_bf16(x), mask=offs < n)
    tl.store(tf32_ptr + offs, kernels.round_to_tf32(x), mask=offs < n)


def test_rounding_helpers_round_to_nearest() -> None:
    bits = torch.randint(0, 0x7F800000, (1000,), dtype=torch.int64)  # finite, positive
    bits[:4] = torch.tensor([0x3F808000, 0x3F818000, 0x3F801000, 0x3F803000])  # exact ties
    x = bits.to(torch.int32).view(torch.float32)
    x[1::2] = -x[1::2]
    x = x.to(DEVICE)
    bf16, tf32 = torch.empty_like(x), torch.empty_like(x)
    _rounding_kernel[(1,)](x, bf16, tf32, x.numel())
    assert torch.equal(bf16, x.bfloat16().float())  # ties to even, like torch
    magnitude = x.abs().view(torch.int32).to(torch.int64)
    nearest = ((magnitude + 0x1000) >> 13 << 13).to(torch.int32).view(torch.float32)
    assert torch.equal(tf32, torch.copysign(nearest, x))  # ties away from zero, like cvt.rna


# layouts and shapes


LAYOUTS: dict[str, Callable[[], tuple[Callable[..., Any], tuple[torch.Tensor, ...]]]] = {
    "transposed_a": lambda: (lambda a, b: torch.mm(a.t(), b), (randn(24, 20), randn(24, 16))),
    "column_major_b": lambda: (lambda a, b: torch.mm(a, b.t()), (randn(20, 24), randn(16, 24))),
    "storage_offset": lambda: (lambda a, b: torch.mm(a[3:, 1:], b), (randn(23, 25), randn(24, 16))),
    "padded_stride": lambda: (lambda a, b: torch.mm(a[:, :24], b), (randn(20, 40), randn(24, 16))),
    "stride0_batch": lambda: (
        lambda a, b: torch.bmm(a.expand(3, 20, 24), b),
        (randn(1, 20, 24), randn(3, 24, 16)),
    ),
    "same_tensor": lambda: (lambda a: torch.mm(a, a), (randn(24, 24),)),
    "transposed_batch": lambda: (
        lambda a, b: torch.bmm(a.transpose(1, 2), b),
        (randn(3, 24, 20), randn(3, 24, 16)),
    ),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_layouts(layout: str, dtype: torch.dtype) -> None:
    fn, args = LAYOUTS[layout]()
    check(fn, *(t.to(dtype) for t in args))


@pytest.mark.parametrize(("m", "k", "n"), [(1, 1, 1), (127, 33, 65)])
def test_odd_shapes(m: int, k: int, n: int) -> None:
    check(lambda a, b: torch.mm(a, b), randn(m, k), randn(k, n))


@pytest.mark.parametrize(("m", "k", "n"), [(0, 8, 5), (6, 8, 0), (6, 0, 5)])
def test_zero_size_mm(m: int, k: int, n: int) -> None:
    compiled = check(lambda a, b: torch.mm(a, b), randn(m, k), randn(k, n))
    assert len(launches(compiled)) == (1 if k == 0 else 0)  # empty outputs launch nothing


def test_zero_k_gives_bias_and_beta_c() -> None:
    check(
        lambda c, a, b: torch.relu(torch.addmm(c, a, b, beta=2.0)),
        randn(5),
        randn(6, 0),
        randn(0, 5),
    )
    check(lambda bias, a, b: F.linear(a, b, bias), randn(5), randn(6, 0), randn(5, 0))


def test_zero_batch() -> None:
    compiled = check(lambda a, b: torch.bmm(a, b), randn(0, 6, 8), randn(0, 8, 5))
    assert launches(compiled) == []


def test_persistent_kernel() -> None:
    compiled = check(
        lambda c, a, b: torch.baddbmm(c, a, b),
        randn(150),
        randn(3, 200, 40),
        randn(3, 40, 150),
        persistent="always",
    )
    assert {r.plan.kernel for r in launches(compiled)} == {"gemm_persistent_kernel"}


def test_64_bit_indexing_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launcher, "INT32_LIMIT", 16)  # every tensor now "needs" 64-bit offsets
    compiled = check(
        lambda a, b, r: torch.mm(a.t(), b) + r, randn(24, 20), randn(24, 16), randn(20, 16)
    )
    assert launches(compiled)[0].plan.flags()["INDEX_64"] is True


# dynamic shapes


def test_dynamic_shapes_reuse_one_compile_across_alignment_classes() -> None:
    def fn(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.mm(a, b) + bias)

    compiled = compile_ref(fn, dynamic=True)
    for m, k, n in [(64, 32, 48), (37, 45, 29), (96, 64, 80)]:  # K=45: rows not 16-byte aligned
        args = (
            randn(m, k, dtype=torch.bfloat16),
            randn(k, n, dtype=torch.bfloat16),
            randn(n, dtype=torch.bfloat16),
        )
        assert_like_eager(compiled(*args), fn(*args))
    assert compiled.compiles() == 1
    paths = {r.plan.flags()["A_DESC"] for r in launches(compiled)}
    assert paths == (
        {"mk", "none"} if not ON_GPU or torch.cuda.get_device_capability()[0] >= 9 else {"none"}
    )


def test_mark_dynamic_reuses_the_compile() -> None:
    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, b)

    compiled = compile_ref(fn)
    for m in (16, 40, 72):
        a, b = randn(m, 24), randn(24, 8)
        torch._dynamo.mark_dynamic(a, 0)
        assert_like_eager(compiled(a, b), fn(a, b))
    assert compiled.compiles() == 1


# epilogues

EPILOGUES: dict[str, Callable[..., torch.Tensor]] = {
    "relu": torch.relu,
    "gelu_erf": F.gelu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "silu": F.silu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "clamp": lambda t: t.clamp(-1.0, 2.0),
    "clamp_min": lambda t: t.clamp(min=0.25),
    "hardtanh": F.hardtanh,
    "scalar_mul_add": lambda t: t * 0.5 + 1.0,
    "scalar_sub_div": lambda t: (2.0 - t) / 3.0,
}


@pytest.mark.parametrize("name", sorted(EPILOGUES))
def test_epilogue_op_fuses(name: str) -> None:
    op = EPILOGUES[name]
    compiled = check(lambda a, b: op(torch.mm(a, b)), randn(24, 40) / 4, randn(40, 20))
    assert compiled.compiler.graphs[0].calls[0].spec.fused_nodes  # fused, not left in the graph


def test_epilogue_tensor_operands_and_casts() -> None:
    def fn(a: torch.Tensor, b: torch.Tensor, r: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return (torch.mm(a, b) * s + r).relu().to(torch.bfloat16)

    compiled = check(fn, randn(24, 40), randn(40, 20), randn(24, 20), randn(24, 1))
    spec = compiled.compiler.graphs[0].calls[0].spec
    assert [s.op for s in spec.steps] == ["mul_tensor", "axpby", "relu"]
    assert spec.out_dtype == torch.bfloat16


def test_bf16_gemm_plus_fp32_tensor_rounds_like_eager() -> None:
    def fn(a: torch.Tensor, b: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, b) + r

    a, b, r = (
        randn(24, 40, dtype=torch.bfloat16),
        randn(40, 20, dtype=torch.bfloat16),
        randn(24, 20),
    )
    compiled = compile_ref(fn)
    got, want = compiled(a, b, r), fn(a, b, r)
    assert got.dtype == want.dtype == torch.float32 and lowered(compiled) == 1
    assert [s.op for s in compiled.compiler.graphs[0].calls[0].spec.steps] == [
        "round_bf16",
        "axpby",
    ]
    # The GEMM's fp32 sums round to bf16 before r is added, as eager's do. They are summed in
    # another order than eager's kernel, so a sum next to a rounding boundary may round the other
    # way (one element in 480 on the dev CPU, for some inputs): one bf16 ulp there, on few
    # elements. Without the rounding most elements would differ, by up to half an ulp.
    ulp = torch.mm(a, b).float().abs() * 2.0**-7  # a bf16 ulp is 2^-8..2^-7 of the value
    difference = (got - want).abs()
    assert bool((difference <= ulp + 1e-30).all()), difference.max()
    assert (difference == 0).float().mean().item() >= 0.95


def test_linear_3d_epilogue_through_views() -> None:
    compiled = check(
        lambda x, w, b, r: F.silu(F.linear(x, w, b)) + r,
        randn(2, 5, 24),
        randn(16, 24),
        randn(16),
        randn(5, 16),
    )
    assert len(compiled.compiler.graphs[0].calls[0].spec.steps) == 3


def test_intermediate_with_other_users_is_still_produced() -> None:
    def fn(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mm = torch.mm(a, b)
        return mm, torch.relu(mm)

    compiled = check(fn, randn(24, 40), randn(40, 20))
    assert compiled.compiler.graphs[0].calls[0].spec.fused_nodes == ()


def test_long_chain_fuses_what_fits_and_runs_the_rest_eagerly() -> None:
    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(torch.tanh(torch.relu(torch.mm(a, b) * 2.0) + 1.0) - 0.5)

    compiled = check(fn, randn(24, 40), randn(40, 20))
    assert len(compiled.compiler.graphs[0].calls[0].spec.steps) == 4
    assert "sigmoid" in compiled.compiler.graphs[0].gm.code  # the fifth op stays in the graph


def test_fp32_defaults_to_ieee_and_tf32_mode_recompiles() -> None:
    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, b)

    compiled = compile_ref(fn)
    a, b = randn(16, 16), randn(16, 16)
    saved = torch.backends.cuda.matmul.allow_tf32
    try:
        compiled(a, b)
        torch.backends.cuda.matmul.allow_tf32 = True
        compiled(a, b)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    precisions = [c.spec.input_precision for g in compiled.compiler.graphs for c in g.calls]
    assert precisions == ["ieee", "tf32"] and compiled.compiles() == 2


def test_tf32_only_for_long_k_loops_on_a_gpu_target() -> None:
    layout = launcher.OperandLayout("row", True)
    sm90, interpreter = Target("sm90", 90, False, 132), Target("sm90", 90, True, 4)

    def problem(k: int) -> launcher.Problem:
        return launcher.Problem(
            torch.float32,
            1,
            64,
            64,
            k,
            layout,
            layout,
            "none",
            False,
            "tf32",
            True,
            ("none",) * 4,
            False,
        )

    assert launcher.input_precision(problem(1024), sm90) == "tf32"
    assert launcher.input_precision(problem(launcher.TF32_MIN_K - 1), sm90) == "ieee"
    assert launcher.input_precision(problem(1024), interpreter) == "ieee"


def test_under_a_wave_decode_problems_get_a_deep_pipeline_on_sm90_only() -> None:
    layout = launcher.OperandLayout("row", True)
    sm90, sm80 = Target("sm90", 90, False, 132), Target("sm80", 80, False, 108)
    interpreter = Target("sm90", 90, True, 4)

    def stages(m: int, n: int, k: int, dtype: torch.dtype, target: Target) -> int:
        problem = launcher.Problem(
            dtype, 1, m, n, k, layout, layout, "none", False, "ieee", True, ("none",) * 4, False
        )
        return launcher.plan_launch(problem, target, BackendOptions()).config.num_stages

    # Llama-3 8B decode o/down (64 tiles of 64x64 on 132 SMs) and qkv (48 of 64x128): deepened
    # (bf16 and fp8 below configs.DECODE_MIN_K: from it on, the decode tile's 6 stages, fp8's
    # as stream-K; test_splitk.py)
    assert stages(16, 4096, 1024, torch.bfloat16, sm90) == 8
    assert stages(16, 6144, 1024, torch.bfloat16, sm90) == 8  # 24 KB a stage: 8 fit 192 KB
    assert stages(16, 4096, 1024, torch.float8_e4m3fn, sm90) == 8
    assert stages(16, 4096, 14336, torch.float8_e4m3fn, sm90) == 6
    assert stages(16, 4096, configs.DECODE_MIN_K, torch.bfloat16, sm90) == 6
    # a wave or more of tiles (gate_up: 224), a short K loop, other archs, the interpreter: not
    assert stages(16, 28672, 1024, torch.bfloat16, sm90) == 4
    assert stages(16, 4096, 128, torch.bfloat16, sm90) == 3  # K / BLOCK_K: 2 tiles
    assert stages(16, 4096, 320, torch.bfloat16, sm90) == 5  # at most one stage per K tile
    assert (
        stages(16, 4096, 4096, torch.bfloat16, sm80)
        == configs.lookup("sm80", torch.bfloat16, "small").num_stages
    )
    assert stages(16, 4096, 4096, torch.bfloat16, interpreter) == 3
    # the stage count is what moves: BLOCK_K, and so every row's order of K sums, stays
    deep = configs.deepen(configs.TileConfig(64, 64, 64, 4, 3), "sm90", "small", 64, 132, 4096, 2)
    assert (deep.block_m, deep.block_n, deep.block_k, deep.num_stages) == (64, 64, 64, 8)


def test_inputs_requiring_grad_lower_forward_and_backward() -> None:
    a, b = randn(8, 16).requires_grad_(), randn(16, 4)
    compiled = compile_ref(lambda a, b: torch.relu(torch.mm(a, b)))
    out = compiled(a, b)
    out.sum().backward()
    grad, a.grad = a.grad, None
    torch.relu(a @ b).sum().backward()
    assert_like_eager(out.detach(), torch.relu(a.detach() @ b))
    assert_like_eager(grad, a.grad)
    assert [len(graph.calls) for graph in compiled.compiler.graphs] == [1, 1]


# errors


def _fp8_pair() -> tuple[torch.Tensor, torch.Tensor]:
    return fp8(32, 64), fp8(48, 64).t()


ERRORS: dict[str, Callable[[], tuple[Callable[..., Any], tuple[Any, ...]]]] = {
    "mm_shape": lambda: (lambda a, b: torch.mm(a, b), (randn(3, 4), randn(5, 6))),
    "mm_dtype": lambda: (
        lambda a, b: torch.mm(a, b),
        (randn(3, 4), randn(4, 6, dtype=torch.float16)),
    ),
    "bmm_batch": lambda: (lambda a, b: torch.bmm(a, b), (randn(2, 3, 4), randn(3, 4, 6))),
    "addmm_bias_shape": lambda: (
        lambda c, a, b: torch.addmm(c, a, b),
        (randn(5), randn(3, 4), randn(4, 6)),
    ),
    "linear_shape": lambda: (lambda x, w: F.linear(x, w), (randn(3, 4), randn(5, 6))),
    "addmm_c_dtype": lambda: (
        lambda c, a, b: torch.addmm(c, a, b),
        (
            randn(4, 7, dtype=torch.float16),
            randn(4, 5, dtype=torch.bfloat16),
            randn(5, 7, dtype=torch.bfloat16),
        ),
    ),
    "scaled_mm_scale_shape": lambda: (
        lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16),
        (*_fp8_pair(), torch.rand(32, 2, device=DEVICE), torch.rand(1, 48, device=DEVICE)),
    ),
    "scaled_mm_fp32_input": lambda: (
        lambda a, b, s: torch._scaled_mm(a, b, s, s, out_dtype=torch.bfloat16),
        (randn(32, 64), _fp8_pair()[1], torch.tensor(1.0, device=DEVICE)),
    ),
    "scaled_mm_k_mismatch": lambda: (
        lambda a, b, s: torch._scaled_mm(a, b, s, s, out_dtype=torch.bfloat16),
        (fp8(32, 64), fp8(48, 32).t(), torch.tensor(1.0, device=DEVICE)),
    ),
    "int_mm_dtype": lambda: (
        lambda a, b: torch._int_mm(a, b),
        (randn(32, 64), torch.zeros(64, 8, dtype=torch.int8, device=DEVICE)),
    ),
}
if not ON_GPU:
    ERRORS["scaled_mm_blockwise_on_cpu"] = lambda: (
        lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16),
        (fp8(64, 256), fp8(128, 256).t(), torch.rand(64, 2), torch.rand(2, 1)),
    )
if ON_GPU:
    ERRORS["scaled_mm_k_not_multiple_of_16"] = lambda: (
        lambda a, b, s: torch._scaled_mm(a, b, s, s, out_dtype=torch.bfloat16),
        (fp8(32, 40), fp8(48, 40).t(), torch.tensor(1.0, device=DEVICE)),
    )
    ERRORS["int_mm_small_m"] = lambda: (
        lambda a, b: torch._int_mm(a, b),
        (
            torch.zeros(8, 32, dtype=torch.int8, device=DEVICE),
            torch.zeros(32, 16, dtype=torch.int8, device=DEVICE),
        ),
    )
    ERRORS["int_mm_n_not_multiple_of_8"] = lambda: (
        lambda a, b: torch._int_mm(a, b),
        (
            torch.zeros(32, 32, dtype=torch.int8, device=DEVICE),
            torch.zeros(32, 12, dtype=torch.int8, device=DEVICE),
        ),
    )
    ERRORS["scaled_mm_bias_with_fp32_out"] = lambda: (
        lambda a, b, s, bias: torch._scaled_mm(a, b, s, s, bias=bias, out_dtype=torch.float32),
        (*_fp8_pair(), torch.tensor(1.0, device=DEVICE), randn(48)),
    )
    ERRORS["scaled_mm_e5m2_by_e5m2"] = lambda: (
        lambda a, b, s: torch._scaled_mm(a, b, s, s, out_dtype=torch.bfloat16),
        (fp8(32, 64, dtype=E5M2), fp8(48, 64, dtype=E5M2).t(), torch.tensor(1.0, device=DEVICE)),
    )
    ERRORS["scaled_mm_bias_dtype_not_out_dtype"] = lambda: (
        lambda a, b, s, bias: torch._scaled_mm(a, b, s, s, bias=bias, out_dtype=torch.float16),
        (*_fp8_pair(), torch.tensor(1.0, device=DEVICE), randn(48, dtype=torch.bfloat16)),
    )
    ERRORS["scaled_mm_blockwise_fast_accum"] = lambda: (
        lambda a, b, sa, sb: torch._scaled_mm(
            a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=True
        ),
        (
            fp8(256, 256),
            fp8(256, 256).t(),
            torch.rand(2, 256, device=DEVICE).t(),
            torch.rand(2, 2, device=DEVICE).t(),
        ),
    )
    ERRORS["scaled_mm_blockwise_row_major_scales"] = lambda: (
        lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16),
        (
            fp8(256, 256),
            fp8(256, 256).t(),
            torch.rand(256, 2, device=DEVICE),
            torch.rand(2, 2, device=DEVICE),
        ),
    )


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_have_eager_class(case: str) -> None:
    """The class the backend raises, out of torch.compile's wrappers (as the harness judges it),
    is eager's. The adapter no longer runs eager in the backend's place: where torch's own meta
    function rejects the inputs (dynamo meets it while tracing, before the backend sees a
    graph), the compiled function raises the meta function's class, which can differ from
    eager's (torch 2.13 on a CPU: RuntimeError for two _scaled_mm cases where eager raises
    ValueError) and from one torch release to the next, so it is asked for here."""
    from gemmconf.outcome import Raised

    fn, args = ERRORS[case]()
    with pytest.raises(Exception) as eager:
        fn(*args)
    with pytest.raises(Exception) as compiled:
        compile_ref(fn)(*args)
    meta = _meta_error(fn, args)
    expected = type(eager.value) if meta is None else meta
    assert Raised.of(compiled.value).type_name == expected.__name__, (compiled.value, eager.value)


def _meta_error(fn: Callable[..., Any], args: tuple[Any, ...]) -> type[BaseException] | None:
    """The class torch's meta functions raise for `fn(*args)` on fake tensors, as dynamo traces
    it, or None where they accept the inputs (the checks are then in eager's kernels)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    fakes = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
    try:
        with mode:
            fn(*fakes)
    except Exception as exc:
        return type(exc)
    return None


# generated code


def _bf16_linear(m: int, k: int, n: int) -> ReferenceCompiled:
    compiled = compile_ref(lambda x, w: F.linear(x, w))
    compiled(randn(m, k, dtype=torch.bfloat16), randn(n, k, dtype=torch.bfloat16))
    return compiled


@pytest.fixture(scope="module")
def aligned_bf16() -> ReferenceCompiled:
    return _bf16_linear(512, 512, 384)


@pytest.fixture(scope="module")
def misaligned_bf16() -> ReferenceCompiled:
    return _bf16_linear(64, 33, 48)


def test_sm90_aligned_bf16_uses_wgmma_and_tma(aligned_bf16: ReferenceCompiled) -> None:
    ttgir = aligned_bf16.compiler.artifacts("sm90")["ttgir"]
    torch.testing.FileCheck().check(MARKERS["tensormap_create"]).check(MARKERS["tma_load"]).check(
        MARKERS["wgmma"]
    ).run(ttgir)
    ptx = aligned_bf16.compiler.artifacts("sm90")["ptx"]
    torch.testing.FileCheck().check(MARKERS["cp_async_bulk_tensor"]).check(
        MARKERS["wgmma_ptx"]
    ).run(ptx)


def test_sm90_misaligned_bf16_has_no_tma(misaligned_bf16: ReferenceCompiled) -> None:
    ttgir = misaligned_bf16.compiler.artifacts("sm90")["ttgir"]
    torch.testing.FileCheck().check(MARKERS["wgmma"]).check_not(MARKERS["tma_load"]).run(ttgir)
    assert MARKERS["tensormap_create"] not in ttgir


def test_tma_only_for_the_operand_whose_alignment_allows() -> None:
    compiled = compile_ref(lambda a, b: torch.mm(a, b))
    compiled(randn(64, 33, dtype=torch.bfloat16), randn(33, 64, dtype=torch.bfloat16))
    (record,) = launches(compiled)
    assert (record.plan.flags()["A_DESC"], record.plan.flags()["B_DESC"]) == ("none", "kn")
    ttgir = compiled.compiler.artifacts("sm90")["ttgir"]
    torch.testing.FileCheck().check_count(MARKERS["tensormap_create"], 1, exactly=True).run(ttgir)


def test_sm80_ptx_uses_mma_sync_and_no_tma(aligned_bf16: ReferenceCompiled) -> None:
    artifacts = aligned_bf16.compiler.artifacts("sm80")
    torch.testing.FileCheck().check(MARKERS["mma_sync"]).run(artifacts["ptx"])
    assert MARKERS["tma_load"] not in artifacts["ttgir"]


def test_sm100_ttgir_uses_tcgen05(aligned_bf16: ReferenceCompiled) -> None:
    ttgir = aligned_bf16.compiler.artifacts("sm100")["ttgir"]
    torch.testing.FileCheck().check(MARKERS["tma_load"]).check(MARKERS["tcgen05_mma"]).run(ttgir)


def test_sm90_fp8_rowwise_uses_wgmma() -> None:
    compiled = compile_ref(
        lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
    )
    compiled(
        fp8(128, 128),
        fp8(128, 128).t(),
        torch.rand(128, 1, device=DEVICE),
        torch.rand(1, 128, device=DEVICE),
    )
    ttgir = compiled.artifacts()["ttgir"]
    torch.testing.FileCheck().check(MARKERS["tma_load"]).check(MARKERS["wgmma"]).run(ttgir)
    assert "f8E4M3FN" in ttgir


def test_artifact_kinds_and_contents(aligned_bf16: ReferenceCompiled) -> None:
    artifacts = aligned_bf16.artifacts()
    assert sorted(artifacts) == ["ptx", "python", "triton", "ttgir", "ttir"]
    assert "gemm_kernel" in artifacts["python"] and "A_DESC=" in artifacts["python"]
    assert "@triton.jit\ndef gemm_kernel(" in artifacts["triton"]
    assert "tt.func public @gemm_kernel" in artifacts["ttir"]
    assert ".target sm_90" in artifacts["ptx"]


def test_no_artifacts_before_compile_and_no_ir_before_launch() -> None:
    compiled = compile_ref(lambda a, b: torch.mm(a, b))
    assert compiled.artifacts() == {}
    compiled(randn(0, 4), randn(4, 4))  # zero-size: compiled, lowered, nothing launched
    assert sorted(compiled.artifacts()) == ["python", "triton"]


def test_specialisation_matches_triton_launcher() -> None:
    native = pytest.importorskip("triton._C.libtriton").native_specialize_impl
    from triton.backends.compiler import BaseBackend

    values = [
        1,
        0,
        16,
        17,
        48,
        2**31,
        2.5,
        None,
        randn(8),
        randn(8)[1:],
        randn(8, dtype=torch.bfloat16),
        fp8(16),
    ]
    for value in values:
        spec = specialize("x", value)
        ty, attr = native(BaseBackend, value, False, True, True)
        assert spec.type == ty
        if ty == "constexpr":
            assert spec.value == attr
        else:
            assert spec.divisible_16 == (attr == "D")


def test_small_problems_share_one_compile_across_alignments() -> None:
    """Small problems launch gemm_kernel_unaligned, compiled without 16-divisibility: sizes and
    strides that differ only in it need one compile; a larger problem keeps the specialisation."""
    compiled = compile_ref(lambda a, b: torch.mm(a, b))
    b = randn(40, 48, dtype=torch.bfloat16)
    for m in (48, 47):  # M, the batch stride and C's batch stride: divisible by 16, then not
        compiled(randn(m, 40, dtype=torch.bfloat16), b)
    small = launches(compiled)
    assert [r.plan.kernel for r in small] == [kernels.UNALIGNED] * 2
    assert small[0].runtime_params != small[1].runtime_params  # what Triton would tell apart
    requests = {r.request(r.plan) for r in small}
    assert len(requests) == 1 and len(compiled.compiler.kernel_stats()["kernel_signatures"]) == 1
    (request,) = requests
    assert not any(p.divisible_16 for p in request.params)
    assert ("stride_ak", "constexpr") in [(p.name, p.type) for p in request.params]  # unit stride
    if ON_GPU:  # 0 where an earlier test in this process launched the same compiled kernel
        assert compiled.compiler.kernel_stats()["kernel_compiles"] <= 1
    ttir = compiled.artifacts()["ttir"]  # cross-compiled for sm90
    signature = ttir[ttir.index("tt.func public @gemm_kernel(") :].split("\n")[0]
    assert "tt.divisibility" not in signature

    large = compile_ref(lambda a, b: torch.mm(a, b))
    large(randn(256, 320, dtype=torch.bfloat16), randn(320, 256, dtype=torch.bfloat16))
    (record,) = launches(large)
    assert record.plan.kernel == "gemm_kernel" and not launcher.unaligned_suffices(record.problem)
    assert any(p.divisible_16 for p in record.request(record.plan).params)


# the harness adapter


def test_adapter_protocol() -> None:
    backend = ReferenceBackend()
    assert backend.name == "reference" and backend.availability() is None
    backend.configure(RunOptions(target_arch="sm100"))
    compiled = backend.compile(lambda a, b: torch.mm(a, b), [], dynamic=None)
    assert compiled.compiles() == 0
    compiled(randn(16, 16), randn(16, 16))
    assert compiled.compiles() == 1
    assert "// gemm_0_0: gemm_kernel_unaligned for sm100" in compiled.artifacts()["ttgir"]


def test_adapter_isolates_compiles_of_one_function() -> None:
    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, b)

    for _ in range(10):  # more than dynamo's default recompile limit on one code object
        compiled = compile_ref(fn)
        compiled(randn(8, 8), randn(8, 8))
        assert compiled.compiles() == 1 and lowered(compiled) == 1


@pytest.mark.skipif(ON_GPU, reason="the interpreter is only chosen without a GPU")
def test_interpreter_works_when_triton_was_imported_first() -> None:
    script = (
        "import triton, torch, backend\n"
        "f = torch.compile(lambda a, b: torch.relu(torch.mm(a, b)), "
        "backend=backend.reference_backend)\n"
        "a, b = torch.randn(8, 8), torch.randn(8, 8)\n"
        "assert torch.allclose(f(a, b), torch.relu(a @ b), atol=1e-5)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != compat.TRITON_INTERPRET_ENV}
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.skipif(ON_GPU, reason="the interpreter is only chosen without a GPU")
def test_interpreter_tiles_fit_n_and_k_but_never_m() -> None:
    compiled = compile_ref(lambda a, b: torch.mm(a, b))
    a, b = randn(64, 3000), randn(3000, 20)
    whole = compiled(a, b)
    config = launches(compiled)[0].plan.config
    assert (config.block_m, config.block_n, config.block_k) == (128, 32, 512)
    # a row's bits do not depend on the rows launched with it: BLOCK_M does not follow M
    assert torch.equal(compiled(a[:5], b), whole[:5])
    assert {r.plan.config.block_m for r in launches(compiled)} == {128}
    # fp8 keeps 128-wide K tiles: blockwise scales and the promotion variants count them
    assert configs.interpreter_tile(E4M3, 20, 3000).block_k == 128


@pytest.mark.skipif(ON_GPU, reason="the interpreter is only chosen without a GPU")
def test_interpreter_scans_triton_language_once_and_restores_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from triton.runtime import interpreter

    memoized = interpreter._patch_builtin
    assert getattr(memoized, "memoized", False)
    scans: list[object] = []
    getmembers = inspect.getmembers

    def counted(obj: object, *args: Any) -> Any:
        if obj in (tl, tl.tensor, tl.math):
            scans.append(obj)
        return getmembers(obj, *args)

    monkeypatch.setattr(inspect, "getmembers", counted)
    builtins = {name: getattr(tl, name) for name in ("dot", "load", "store", "where")}
    fn = lambda x, y: torch.relu(x @ y)  # noqa: E731
    a, b = randn(33, 70), randn(70, 17)
    compiled = compile_ref(fn)
    compiled(a, b)  # the first launch may scan
    scans.clear()
    memo_out = compiled(a + 1, b)
    assert scans == []
    assert {name: getattr(tl, name) for name in builtins} == builtins  # restored after the run
    # Triton's own scan on every call gives the same bits
    monkeypatch.setattr(interpreter, "_patch_builtin", memoized.original)
    plain = compile_ref(fn)
    assert torch.equal(plain(a + 1, b), memo_out)
    assert len(scans) >= 3


@pytest.mark.skipif(ON_GPU, reason="the interpreter is only chosen without a GPU")
def test_interpreter_patches_the_language_once_per_launch_not_per_helper_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from triton.runtime import interpreter

    call = interpreter.InterpretedFunction.__call__
    assert getattr(call, "skips_nested_patching", False)
    patches: list[object] = []
    patch_lang = interpreter._patch_lang

    def counted(fn: Any) -> Any:
        patches.append(fn)
        return patch_lang(fn)

    monkeypatch.setattr(interpreter, "_patch_lang", counted)
    builtins = {name: getattr(tl, name) for name in ("dot", "load", "store", "where")}
    fn = lambda x, y: torch.bmm(x, y)  # noqa: E731
    a, b = randn(6, 5, 33), randn(6, 33, 7)  # six programs, one per batch entry
    compiled = compile_ref(fn)
    once = compiled(a, b)
    assert len(patches) == 1  # the launch's own; none per program or helper call
    assert {name: getattr(tl, name) for name in builtins} == builtins  # restored after it
    assert_like_eager(once, fn(a, b))
    # Triton's own way, patching again at every helper call, gives the same bits
    monkeypatch.setattr(interpreter.InterpretedFunction, "__call__", call.original)
    monkeypatch.setattr(
        interpreter.GridExecutor, "__call__", interpreter.GridExecutor.__call__.original
    )
    patches.clear()
    assert torch.equal(compile_ref(fn)(a, b), once)
    assert len(patches) > 6


@pytest.mark.skipif(ON_GPU, reason="the interpreter is only chosen without a GPU")
def test_interpreter_indexes_a_runtime_scalar_where_triton_3_6_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Triton 3.6's `tl.tensor.__index__` (`int()` of a one-element array), under numpy 2.4 or
    later, failed every kernel whose K loop runs to a runtime K; the fix answers as 3.7 does."""
    from triton.runtime import interpreter

    installed = interpreter._patch_lang_tensor
    assert getattr(installed, "indexes_scalars", False)

    def triton_3_6(tensor: Any, scope: Any) -> None:
        installed.original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))

    fn = lambda x, y: torch.mm(x, y)  # noqa: E731
    a, b = randn(33, 70), randn(70, 17)
    monkeypatch.setattr(interpreter, "_patch_lang_tensor", triton_3_6)
    try:
        int(np.zeros(1))
    except TypeError:  # this numpy refuses it, as the GPU machine's did
        with pytest.raises(Exception, match="0-dimensional arrays"):
            compile_ref(fn)(a, b)
    assert compat.index_scalars_as_numpy_allows()
    assert interpreter._patch_lang_tensor.original is triton_3_6
    assert_like_eager(compile_ref(fn)(a, b), fn(a, b))


@pytest.mark.skipif(ON_GPU, reason="the interpreter is only chosen without a GPU")
def test_interpreter_reuses_its_types_and_tensor_fields_with_the_same_bits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from triton.language import core
    from triton.runtime import interpreter

    get_np_dtype = interpreter._get_np_dtype
    init = core.tensor.__init__
    assert getattr(get_np_dtype, "memoized", False) and getattr(init, "shares_fields", False)
    builder = interpreter.interpreter_builder
    block = builder.get_block_ty(tl.float32, [16, 32])
    assert builder.get_block_ty(tl.float32, [16, 32]) is block
    assert block.with_element_ty(tl.float32) is block
    assert block == core.block_type(tl.float32, [16, 32])
    pointers = builder.get_block_ty(tl.pointer_type(tl.float16), [16])
    assert builder.get_block_ty(tl.pointer_type(tl.float16), [16]) is pointers
    assert builder.get_block_ty(tl.pointer_type(tl.float16, const=True), [16]) is not pointers
    assert get_np_dtype(block) == get_np_dtype.original(block) == np.dtype(np.float32)
    first, second = core.tensor("h1", block), core.tensor("h2", block)
    assert (second.handle, second.shape, second.numel, second.dtype) == (
        "h2",
        first.shape,
        first.numel,
        tl.float32,
    )
    assert [s.value for s in second.shape] == [16, 32] and second.numel.value == 512
    fns = {
        "mm": lambda x, y: torch.relu(x @ y),
        "bmm": lambda x, y: torch.bmm(x, y).to(torch.bfloat16),
    }
    operands = {"mm": (randn(33, 70), randn(70, 17)), "bmm": (randn(3, 9, 40), randn(3, 40, 5))}
    reused = {name: compile_ref(fn)(*operands[name]) for name, fn in fns.items()}
    # Triton's own way, a new type and new fields every time, gives the same bits
    monkeypatch.setattr(interpreter, "_get_np_dtype", get_np_dtype.original)
    monkeypatch.setattr(interpreter.InterpreterBuilder, "get_block_ty", _plain_block_ty)
    monkeypatch.setattr(core.block_type, "with_element_ty", _plain_with_element_ty)
    monkeypatch.setattr(core.tensor, "__init__", init.original)
    assert builder.get_block_ty(tl.float32, [16, 32]) is not block
    for name, fn in fns.items():
        assert torch.equal(compile_ref(fn)(*operands[name]), reused[name])


def _plain_block_ty(self: Any, dtype: Any, shape: Any) -> Any:
    return tl.core.block_type(dtype, shape)


def _plain_with_element_ty(self: Any, scalar_ty: Any) -> Any:
    return tl.core.block_type(scalar_ty, self.shape)


@pytest.mark.skipif(ON_GPU, reason="the interpreter is only chosen without a GPU")
def test_reference_launches_skip_the_interpreters_discarded_overflow_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    default = builder.options
    assert default.sanitize_overflow and not default.debug  # Triton's defaults
    seen: list[bool] = []
    run = interpreter.GridExecutor.__call__

    def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(builder.options.sanitize_overflow)
        return run(self, *args, **kwargs)

    monkeypatch.setattr(interpreter.GridExecutor, "__call__", watched)
    fn = lambda x, y: torch.relu(x @ y)  # noqa: E731
    a, b = randn(5, 33), randn(33, 7)
    unchecked = compile_ref(fn)(a, b)
    assert seen == [False] and builder.options is default  # off inside, restored after
    assert_like_eager(unchecked, fn(a, b))
    # with debug on, device_assert acts on the checks: they stay, and the bits are the same
    monkeypatch.setattr(builder, "options", dataclasses.replace(default, debug=True))
    seen.clear()
    assert torch.equal(compile_ref(fn)(a, b), unchecked)
    assert seen == [True]


# GPU only


@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")
def test_gpu_large_problem_uses_persistent_kernel() -> None:
    """One program per SM walks the output tiles: on sm90 in the warp-specialized kernel
    (hopper.py), elsewhere in the Triton kernels' persistent variant."""
    compiled = check(
        lambda a, b: torch.mm(a, b),
        randn(4096, 1024, dtype=torch.bfloat16),
        randn(1024, 4096, dtype=torch.bfloat16),
    )
    sm90 = torch.cuda.get_device_capability() == (9, 0)
    persistent = "hopper_gemm_kernel" if sm90 else "gemm_persistent_kernel"
    assert {r.plan.kernel for r in launches(compiled)} == {persistent}


@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")
def test_gpu_machine_leaves_cpu_tensors_to_eager() -> None:
    compiled = compile_ref(lambda a, b: torch.mm(a, b))
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    assert_like_eager(compiled(a, b), a @ b)
    assert lowered(compiled) == 0 and "CPU tensors" in compiled.artifacts()["python"]


@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")
def test_gpu_tf32_mode_matches_eager_tf32() -> None:
    a, b = randn(256, 1024), randn(1024, 256)
    saved = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        compiled = compile_ref(lambda a, b: torch.mm(a, b))
        got, eager = compiled(a, b), a @ b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    exact = a.double() @ b.double()
    assert launches(compiled)[0].plan.flags()["INPUT_PRECISION"] == "tf32"
    assert (got - exact).abs().max() <= 2 * (eager - exact).abs().max()


def test_autotune_names_why_no_candidate_ran() -> None:
    """On nvidia-h200-x2 (2026-11-30) every candidate raised a TypeError (the timing launch
    lacked an argument) and autotune said only "no tile config compiled": the first error is
    named and chained."""
    cache = configs.AutotuneCache()
    options = configs.candidates("sm90", torch.float16)[:2]

    def time_fn(config: configs.TileConfig) -> float:
        raise TypeError(f"_launch() missing 1 required positional argument ({config.block_m})")

    with pytest.raises(
        RuntimeError, match=r"2 candidates failed; the first: TypeError: _launch"
    ) as e:
        cache.choose(("key",), options, time_fn)
    assert isinstance(e.value.__cause__, TypeError)
    assert cache.choose(("key",), options, lambda config: float(config.block_n)) in options


@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")
def test_gpu_autotune_caches_per_signature() -> None:
    compiled = check(
        lambda a, b: torch.mm(a, b),
        randn(512, 256, dtype=torch.float16),
        randn(256, 384, dtype=torch.float16),
        autotune=True,
    )
    assert len(compiled.compiler.runtime.autotune_cache.best) == 1
