"""The reference backend's grouped, block-scaled and backward paths, and the pieces beneath them
(microscaling formats, the eager stand-in), on small inputs in the Triton interpreter."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported (conftest may have)

import pytest
import torch
import torch.nn.functional as F

from gemmconf import emulation
from gemmconf.gemm import microscaling
from gemmconf.gemm.reference import per_group_mm
from gemmconf.scenario import load_suite
from gemmconf_reference import ReferenceCompiler
from gemmconf_reference.grouped import output_layout

ST, SW = F.ScalingType, F.SwizzleType
BF16 = torch.bfloat16


def compiled(fn, *args):
    compiler = ReferenceCompiler()
    return torch.compile(fn, backend=compiler)(*args), compiler


def lowered_ops(compiler) -> list[str]:
    return [type(call).__name__ for graph in compiler.graphs for call in graph.calls]


def grouped(a, b, offs):
    return F.grouped_mm(a, b, offs=offs)


@pytest.mark.parametrize(
    "a_shape, b_shape, sizes",
    [
        ((50, 32), (4, 32, 24), [0, 13, 0, 37]),  # 2-D x 3-D: groups of rows, two empty
        ((4, 8, 32), (32, 40), [8, 8, 0, 24]),  # 3-D x 2-D: groups of columns
        ((8, 40), (40, 16), [0, 10, 0, 30]),  # 2-D x 2-D: groups of K, two of K = 0
        ((4, 8, 32), (4, 32, 16), None),  # 3-D x 3-D
    ],
)
def test_grouped_mm_matches_eager_bit_for_bit(a_shape, b_shape, sizes):
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(a_shape, generator=gen).to(BF16)
    b = torch.randn(b_shape, generator=gen).to(BF16)
    offs = None if sizes is None else torch.tensor(sizes, dtype=torch.int32).cumsum(0).int()
    got, compiler = compiled(grouped, a, b, offs)
    assert lowered_ops(compiler) == ["GroupedCall"]
    expected = F.grouped_mm(a, b, offs=offs)
    assert got.shape == expected.shape and got.dtype == BF16
    assert torch.equal(got, expected)  # fp32 sums of bf16 products, rounded once: as eager
    reference = per_group_mm(a.double(), b.double(), offs)
    assert (got.double() - reference).abs().max() <= 2.0**-8 * reference.abs().max()  # bf16


def test_grouped_output_is_laid_out_as_eager_s_meta_function():
    a, b = torch.empty(5, 8, dtype=BF16), torch.empty(2, 8, 20, dtype=BF16)
    sizes, strides = output_layout(a, b, 2, BF16)
    assert sizes == [5, 20]
    assert strides == ([24, 1] if torch.version.cuda else [20, 1])  # 16-byte rows on CUDA


def test_grouped_backward_runs_the_gradient_gemms_through_the_backend():
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(48, 32, generator=gen).to(BF16).requires_grad_()
    b = torch.randn(3, 32, 16, generator=gen).to(BF16).requires_grad_()
    offs = torch.tensor([16, 16, 48], dtype=torch.int32)
    grad = torch.randn(48, 16, generator=gen).to(BF16)

    def program(a, b, offs, grad):
        out = F.grouped_mm(a, b, offs=offs)
        return (out, *torch.autograd.grad(out, (a, b), grad))

    got, compiler = compiled(program, a, b, offs, grad)
    expected = program(a, b, offs, grad)
    assert len(compiler.graphs) == 2  # forward and backward
    assert [len(g.calls) for g in compiler.graphs] == [1, 2]  # d_a and d_b are grouped GEMMs
    for g, e in zip(got, expected, strict=True):
        assert torch.equal(g, e)


def test_backward_of_linear_lowers_the_three_gemms():
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(8, 16, generator=gen, requires_grad=True)
    w = torch.randn(12, 16, generator=gen, requires_grad=True)
    grad = torch.randn(8, 12, generator=gen)

    def program(x, w, grad):
        out = F.linear(x, w)
        return (out, *torch.autograd.grad(out, (x, w), grad))

    got, compiler = compiled(program, x, w, grad)
    assert [len(g.calls) for g in compiler.graphs] == [1, 2]
    for g, e in zip(got, program(x, w, grad), strict=True):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)


def test_scaled_grouped_mm_against_fp64_of_the_dequantized_operands():
    gen = torch.Generator().manual_seed(3)
    a = (torch.randn(64, 32, generator=gen)).to(torch.float8_e4m3fn)
    b = torch.randn(4, 16, 32, generator=gen).to(torch.float8_e4m3fn).transpose(1, 2)
    scale_a, scale_b = torch.rand(64, generator=gen) + 0.5, torch.rand(4, 16, generator=gen) + 0.5
    offs = torch.tensor([16, 16, 40, 64], dtype=torch.int32)

    def program(a, b, sa, sb, offs):
        return torch._scaled_grouped_mm(a, b, sa, sb, offs=offs, out_dtype=BF16)

    got, compiler = compiled(program, a, b, scale_a, scale_b, offs)
    assert lowered_ops(compiler) == ["GroupedCall"]
    reference = per_group_mm(
        a.double() * scale_a.double()[:, None], b.double() * scale_b.double()[:, None, :], offs
    )
    assert (got.double() - reference).abs().max() <= 2.0**-8 * reference.abs().max()


def _mx_inputs(m, n, k, dtype=torch.float8_e4m3fn):
    gen = torch.Generator().manual_seed(4)
    qa = microscaling.quantize_mx(torch.randn(m, k, generator=gen), dtype)
    qb = microscaling.quantize_mx(torch.randn(n, k, generator=gen), dtype)  # b as (N, K)
    return qa, qb


@pytest.mark.parametrize("swizzled", [True, False])
@pytest.mark.parametrize("mnk", [(128, 128, 64), (65, 96, 112)])
def test_mx_scaled_mm_is_the_exact_dequantized_product(swizzled, mnk):
    m, n, k = mnk
    qa, qb = _mx_inputs(m, n, k)
    sa = microscaling.swizzle(qa.scale) if swizzled else qa.scale
    sb = microscaling.swizzle(qb.scale) if swizzled else qb.scale
    swizzle = SW.SWIZZLE_32_4_4 if swizzled else SW.NO_SWIZZLE

    def program(a, b, sa, sb):
        return F.scaled_mm(
            a,
            b,
            sa,
            ST.BlockWise1x32,
            sb,
            ST.BlockWise1x32,
            swizzle_a=swizzle,
            swizzle_b=swizzle,
            output_dtype=torch.float32,
        )

    if not swizzled:  # the meta function (so torch.compile) wants swizzled MX scales
        with pytest.raises(Exception, match=r"swizzle|Invalid scaling"):
            compiled(program, qa.values, qb.values.t(), sa, sb)
        return
    got, compiler = compiled(program, qa.values, qb.values.t(), sa, sb)
    assert lowered_ops(compiler) == ["BlockScaledCall"]
    reference = qa.dequantized @ qb.dequantized.t()
    assert (got.double() - reference).abs().max() <= 1e-5 * reference.abs().max()


@pytest.mark.parametrize("global_scale", [True, False])
def test_nvfp4_scaled_mm_is_the_exact_dequantized_product(global_scale):
    gen = torch.Generator().manual_seed(5)
    qa = microscaling.quantize_nvfp4(torch.randn(33, 80, generator=gen), global_scale=global_scale)
    qb = microscaling.quantize_nvfp4(torch.randn(48, 80, generator=gen), global_scale=global_scale)
    recipe = [ST.BlockWise1x16] + ([ST.TensorWise] if global_scale else [])
    scales_a = [microscaling.swizzle(qa.scale)] + ([qa.global_scale] if global_scale else [])
    scales_b = [microscaling.swizzle(qb.scale)] + ([qb.global_scale] if global_scale else [])

    def program(a, b, sa, sb):
        return F.scaled_mm(
            a,
            b,
            sa,
            recipe,
            sb,
            recipe,
            swizzle_a=SW.SWIZZLE_32_4_4,
            swizzle_b=SW.SWIZZLE_32_4_4,
            output_dtype=torch.float32,
        )

    got, _ = compiled(program, qa.values, qb.values.t(), scales_a, scales_b)
    reference = qa.dequantized @ qb.dequantized.t()
    assert (got.double() - reference).abs().max() <= 1e-5 * reference.abs().max()


def test_microscaling_formats():
    codes = torch.arange(16, dtype=torch.uint8)
    values = microscaling.fp4_values(codes)
    assert values[:8].tolist() == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    assert torch.equal(microscaling.to_fp4(values), torch.where(codes == 8, 0, codes))
    # ties go to the even code: 0.25 -> 0, 0.75 -> 1.0, 2.5 -> 2.0, 5.0 -> 4.0; 7 saturates
    ties = torch.tensor([0.25, 0.75, 2.5, 5.0, 7.0], dtype=torch.float64)
    assert microscaling.fp4_values(microscaling.to_fp4(ties)).tolist() == [0, 1, 2, 4, 6]
    packed = microscaling.pack_fp4(torch.tensor([[1, 2, 3, 4]], dtype=torch.uint8))
    assert packed.view(torch.uint8).tolist() == [[0x21, 0x43]]  # element 2j in the low nibble
    scales = torch.randint(0, 255, (200, 7), dtype=torch.uint8)
    flat = microscaling.swizzle(scales)
    assert flat.numel() == 256 * 8  # rows padded to 128, blocks to 4
    assert flat[(1 * 2 + 0) * 512 + 5 * 16 + 2 * 4 + 3] == scales[128 + 2 * 32 + 5, 3]
    assert torch.equal(microscaling.unswizzle(flat, 200, 7), scales)
    qa, _ = _mx_inputs(4, 4, 64)
    exponents = qa.scale.view(torch.uint8).double() - 127
    rebuilt = qa.values.double() * torch.exp2(exponents).repeat_interleave(32, 1)
    assert torch.equal(rebuilt, qa.dequantized)


def test_emulated_eager_only_where_eager_has_no_kernel():
    path = os.path.join(
        os.path.dirname(__file__), "..", "suites", "blockscaled", "scaled_mm_v2.yaml"
    )
    instances = {i.id: i for i in load_suite(path)}
    mx = instances["fscaled/mx[e4m3fn-128x128x128-bf16]"]
    tensorwise = instances["fscaled/tensorwise_rowwise[tensorwise-bf16]"]
    assert emulation.stand_in(tensorwise, "cpu") is None  # CPU eager computes tensorwise
    if torch.cuda.is_available():
        pytest.skip("the probe's answer for MX depends on the GPU")
    stand_in = emulation.stand_in(mx, "cpu")
    assert stand_in is not None  # CPU eager: "Invalid scaling configuration."
    from gemmconf import inputs

    item_inputs = inputs.build(mx, 0, 0, "cpu")
    expected = stand_in(item_inputs)
    assert expected.dtype == BF16 and expected.shape == (128, 128)
    metrics = emulation.block_scaled_metrics(mx, expected, expected.double())
    assert metrics["sqnr_db"] == float("inf")
