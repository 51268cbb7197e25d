"""The reference backend's grouped, block-scaled and backward paths, and the pieces beneath them
(microscaling formats, the eager stand-in), on small inputs: in the Triton interpreter on a CPU,
compiled on a GPU. Equality with eager bit for bit is the interpreter's claim against CPU eager;
a GPU's eager kernels sum in another order, so there the fp64 bounds decide."""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

from gemmconf import emulation
from gemmconf.gemm import microscaling
from gemmconf.gemm.reference import per_group_mm
from gemmconf.scenario import load_suite
from gemmconf_reference import ReferenceCompiler
from gemmconf_reference.compat import ops_in_graph
from gemmconf_reference.grouped import output_layout

ST, SW = F.ScalingType, F.SwizzleType
BF16 = torch.bfloat16
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # where the reference runs kernels here
BITWISE = DEVICE == "cpu"  # the interpreter's sums are CPU eager's, in the same order
# groups of K: CUDA eager wants K offsets on the 16 grid (elsewhere it trips a device-side assert)
K_GROUPS = [0, 10, 0, 30] if DEVICE == "cpu" else [0, 16, 0, 32]


def compiled(fn, *args):
    compiler = ReferenceCompiler()
    with ops_in_graph():  # torch 2.11's dynamo skips F.scaled_mm's op (as the harness does)
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
        ((8, sum(K_GROUPS)), (sum(K_GROUPS), 16), K_GROUPS),  # 2-D x 2-D: groups of K, two of 0
        ((4, 8, 32), (4, 32, 16), None),  # 3-D x 3-D
    ],
)
def test_grouped_mm_against_eager_and_fp64(a_shape, b_shape, sizes):
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(a_shape, generator=gen).to(DEVICE, BF16)
    b = torch.randn(b_shape, generator=gen).to(DEVICE, BF16)
    offs = None if sizes is None else torch.tensor(sizes, dtype=torch.int32).cumsum(0).int()
    offs = None if offs is None else offs.to(DEVICE)
    got, compiler = compiled(grouped, a, b, offs)
    assert lowered_ops(compiler) == ["GroupedCall"]
    expected = F.grouped_mm(a, b, offs=offs)
    assert got.shape == expected.shape and got.dtype == BF16
    if BITWISE:
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
    a = torch.randn(48, 32, generator=gen).to(DEVICE, BF16).requires_grad_()
    b = torch.randn(3, 32, 16, generator=gen).to(DEVICE, BF16).requires_grad_()
    offs = torch.tensor([16, 16, 48], dtype=torch.int32, device=DEVICE)
    grad = torch.randn(48, 16, generator=gen).to(DEVICE, BF16)

    def program(a, b, offs, grad):
        out = F.grouped_mm(a, b, offs=offs)
        return (out, *torch.autograd.grad(out, (a, b), grad))

    got, compiler = compiled(program, a, b, offs, grad)
    expected = program(a, b, offs, grad)
    assert len(compiler.graphs) == 2  # forward and backward
    assert [len(g.calls) for g in compiler.graphs] == [1, 2]  # d_a and d_b are grouped GEMMs
    for g, e in zip(got, expected, strict=True):
        if BITWISE:
            assert torch.equal(g, e)
        else:  # bf16 results of K <= 48 sums: within a few bf16 ulps of eager's
            torch.testing.assert_close(g, e, rtol=2.0**-6, atol=2.0**-6 * e.abs().max().item())


def test_backward_of_linear_lowers_the_three_gemms():
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(8, 16, generator=gen).to(DEVICE).requires_grad_()
    w = torch.randn(12, 16, generator=gen).to(DEVICE).requires_grad_()
    grad = torch.randn(8, 12, generator=gen).to(DEVICE)

    def program(x, w, grad):
        out = F.linear(x, w)
        return (out, *torch.autograd.grad(out, (x, w), grad))

    got, compiler = compiled(program, x, w, grad)
    assert [len(g.calls) for g in compiler.graphs] == [1, 2]
    for g, e in zip(got, program(x, w, grad), strict=True):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)


def test_scaled_grouped_mm_against_fp64_of_the_dequantized_operands():
    gen = torch.Generator().manual_seed(3)
    a = torch.randn(64, 32, generator=gen).to(DEVICE, torch.float8_e4m3fn)
    b = torch.randn(4, 16, 32, generator=gen).to(DEVICE, torch.float8_e4m3fn).transpose(1, 2)
    scale_a = (torch.rand(64, generator=gen) + 0.5).to(DEVICE)
    scale_b = (torch.rand(4, 16, generator=gen) + 0.5).to(DEVICE)
    offs = torch.tensor([16, 16, 40, 64], dtype=torch.int32, device=DEVICE)

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


def here(*tensors):
    return [t.to(DEVICE) for t in tensors]


@pytest.mark.parametrize("swizzled", [True, False])
@pytest.mark.parametrize("mnk", [(128, 128, 64), (65, 96, 112)])
def test_mx_scaled_mm_is_the_exact_dequantized_product(swizzled, mnk):
    m, n, k = mnk
    qa, qb = _mx_inputs(m, n, k)
    sa, sb = here(*(microscaling.swizzle(q.scale) if swizzled else q.scale for q in (qa, qb)))
    a, b = here(qa.values, qb.values.t())
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
            compiled(program, a, b, sa, sb)
        return
    got, compiler = compiled(program, a, b, sa, sb)
    assert lowered_ops(compiler) == ["BlockScaledCall"]
    reference = qa.dequantized @ qb.dequantized.t()
    assert (got.cpu().double() - reference).abs().max() <= 1e-5 * reference.abs().max()


@pytest.mark.parametrize("global_scale", [True, False])
def test_nvfp4_scaled_mm_is_the_exact_dequantized_product(global_scale):
    gen = torch.Generator().manual_seed(5)
    # K = 96: 48 bytes of packed fp4 per row (CUDA's meta function wants a multiple of 16)
    qa = microscaling.quantize_nvfp4(torch.randn(33, 96, generator=gen), global_scale=global_scale)
    qb = microscaling.quantize_nvfp4(torch.randn(48, 96, generator=gen), global_scale=global_scale)
    recipe = [ST.BlockWise1x16] + ([ST.TensorWise] if global_scale else [])
    scales_a = here(microscaling.swizzle(qa.scale), *([qa.global_scale] if global_scale else []))
    scales_b = here(microscaling.swizzle(qb.scale), *([qb.global_scale] if global_scale else []))

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

    got, _ = compiled(program, *here(qa.values, qb.values.t()), scales_a, scales_b)
    reference = qa.dequantized @ qb.dequantized.t()
    assert (got.cpu().double() - reference).abs().max() <= 1e-5 * reference.abs().max()


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
    assert emulation.stand_in(tensorwise, DEVICE) is None  # eager computes tensorwise
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


class _Zeros:
    """A backend answering every MX item with zeros of the right shape and dtype."""

    name = "zeros"

    def availability(self):
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        class Compiled:
            def __call__(self, *tensors):
                return torch.zeros(128, 128, dtype=BF16)

            def compiles(self):
                return 1

        return Compiled()


def test_a_numeric_failure_of_an_emulated_item_says_eager_was_a_stand_in():
    """An MoE trial read "Eager's own error against fp64" for an item eager never ran."""
    if torch.cuda.is_available():
        pytest.skip("the probe's answer for MX depends on the GPU")
    from gemmconf import checks, runner

    path = os.path.join(
        os.path.dirname(__file__), "..", "suites", "blockscaled", "scaled_mm_v2.yaml"
    )
    mx = next(i for i in load_suite(path) if i.id == "fscaled/mx[e4m3fn-128x128x128-bf16]")
    outcome = runner.run_item(mx, _Zeros(), seed=0, device="cpu", target=None)
    assert not outcome.passed and outcome.notes == (checks.EMULATED_NOTE,)
    assert outcome.metrics["eager_emulated"] == 1
