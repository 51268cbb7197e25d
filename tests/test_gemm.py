"""The domain package: ops, dtypes and scaling recipes agree with eager PyTorch and each other."""

from __future__ import annotations

import ast

import pytest
import torch
import torch.nn.functional as F

from gemmconf.gemm import dtypes, ops, scaling
from gemmconf.gemm.ops import OPS
from gemmconf.gemm.reference import HELPERS
from gemmconf.gemm.scaling import RECIPES, classify

TERMS = {
    "alpha": "0.5",
    "beta": "2.0",
    "abs_alpha": "0.5",
    "bias": "bias",
    "bias_term": " + bias",
    "out_dtype": "torch.bfloat16",
    "use_fast_accum": "False",
    "offs": "offs",
    "scale_a_arg": "[scale_a, global_a]",
    "scale_b_arg": "[scale_b, global_b]",
    "recipe_a": "F.ScalingType.BlockWise1x16",
    "recipe_b": "F.ScalingType.BlockWise1x16",
    "swizzle": "F.SwizzleType.SWIZZLE_32_4_4",
}
ALL_PRESENT = frozenset(ops.WHEN)


@pytest.mark.parametrize("name", list(OPS))
def test_every_template_is_python_over_the_ops_parameters(name):
    op = OPS[name]
    parameters = set(op.parameters(has_bias=True, present=ALL_PRESENT))
    for template in filter(None, (op.call, op.reference, op.magnitude)):
        tree = ast.parse(template.format_map(TERMS), mode="eval")
        helpers = {"torch", "F", *HELPERS}
        bound = {n.target.id for n in ast.walk(tree) if isinstance(n, ast.NamedExpr)}
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - helpers - bound
        assert used <= parameters, f"{name}: {template} uses {used - parameters}"


@pytest.mark.parametrize(
    "name",
    [n for n, op in OPS.items() if not (op.scaled or op.grouped or op.writes or op.composite)],
)
def test_eager_call_gives_the_shape_the_op_spec_says(name):
    """Every unscaled op on its default shapes: the result's shape is `out_shape`."""
    op = OPS[name]
    dims = {"B": 2, "M": 3, "N": 5, "K": 4}
    dtype = dtypes.torch_dtype(op.default_dtype)
    if op.exact:  # _int_mm's CPU kernel wants M > 16 and multiples of 8
        dims = {"B": 2, "M": 32, "N": 8, "K": 8}
    tensors = {o.name: torch.ones([dims[d] for d in o.shape], dtype=dtype) for o in op.inputs}
    tensors |= {
        o.name: torch.ones(dims["N"], dtype=dtype) for o in op.operands if o.role == "addend"
    }
    expression = op.call.format_map(TERMS)
    result = eval(expression, {"torch": torch, "F": F}, tensors)
    a, b = (list(tensors[n].shape) for n in ("a", "b"))
    assert op.shape_error(a, b) is None
    assert list(result.shape) == op.out_shape(a, b)
    expected_dtype = op.result_dtype_for(op.default_dtype)
    assert result.dtype == dtypes.torch_dtype(expected_dtype)


def test_shape_rules():
    assert "inner dimensions differ" in OPS["mm"].shape_error([3, 4], [5, 6])
    assert OPS["linear"].shape_error([3, 4], [6, 4]) is None  # the weight is (N, K)
    assert "batch sizes differ" in OPS["bmm"].shape_error([2, 3, 4], [3, 4, 5])
    assert "K % 16" in OPS["scaled_mm"].shape_error([32, 8], [8, 32])
    assert OPS["scaled_mm"].shape_error([32, 0], [0, 32]) is None  # K = 0 passes


def test_flops_count_the_gemm():
    assert OPS["mm"].flops({"M": 64, "N": 32, "K": 16}) == 2 * 64 * 32 * 16
    assert OPS["bmm"].flops({"B": 3, "M": 8, "N": 4, "K": 2}) == 2 * 3 * 8 * 4 * 2
    assert ops.gemm_flops({"M": 0, "N": 5, "K": 7}) == 0


def test_registry_views():
    assert ops.ops_where(lambda op: op.alpha_beta) == (
        "addmm",
        "baddbmm",
        "addmm_out",
        "baddbmm_out",
    )
    assert ops.ops_where(lambda op: op.addend is not None) == (
        "addmm",
        "baddbmm",
        "linear",
        "scaled_mm",
        "grouped_mm",
        "scaled_mm_v2",
        "addmm_out",
        "baddbmm_out",
        "linear_autocast",
    )
    assert OPS["addmm"].parameters(has_bias=False) == ("c", "a", "b")
    assert OPS["scaled_mm"].parameters(has_bias=False) == ("a", "b", "scale_a", "scale_b")
    assert OPS["scaled_mm"].parameters(has_bias=True)[-1] == "bias"
    assert [o.param for o in OPS["baddbmm"].operands] == ["self", "batch1", "batch2"]
    with pytest.raises(ValueError, match="role"):
        ops.OperandSpec("offs", "jagged")
    assert OPS["grouped_mm"].parameters(has_bias=False) == ("a", "b")
    assert OPS["grouped_mm"].parameters(has_bias=False, present=frozenset({"jagged"})) == (
        "a",
        "b",
        "offs",
    )
    nvfp4 = OPS["scaled_mm_v2"].parameters(has_bias=False, present=frozenset({"global_scale"}))
    assert nvfp4 == ("a", "b", "scale_a", "scale_b", "global_a", "global_b")
    assert OPS["mm_out"].writes == ("out",) and OPS["mm_out"].marker == "mm"


def test_dtype_table():
    assert dtypes.FP8 == ("e4m3fn", "e5m2")
    assert set(dtypes.OUT_DTYPES) <= set(dtypes.OPERAND_DTYPES)
    assert dtypes.tensor_name("tf32") == "fp32"
    assert dtypes.torch_dtype("bf16") is torch.bfloat16
    assert not dtypes.is_fp8("e4m3fnuz")  # a torch dtype, not one scenarios give operands


V1_RECIPES = {name: r for name, r in RECIPES.items() if "scaled_mm" in r.ops}


@pytest.mark.parametrize("recipe", list(V1_RECIPES.values()), ids=list(V1_RECIPES))
@pytest.mark.parametrize("mnk", [(256, 128, 384), (1, 128, 128), (3, 256, 0)])
def test_quantized_scales_classify_as_their_recipe(recipe, mnk):
    """Scales the recipe makes are the scales the classifier (the backends' view) recognises."""
    m, n, k = mnk
    gen = torch.Generator().manual_seed(0)
    a = recipe.quantize(torch.randn(m, k, generator=gen), "a", torch.float8_e4m3fn)
    b = recipe.quantize(torch.randn(k, n, generator=gen), "b", torch.float8_e4m3fn)
    assert tuple(a.scale.shape) == recipe.scale_shape("a", m, k)
    assert tuple(b.scale.shape) == recipe.scale_shape("b", k, n)
    # one scale per operand is tensorwise whatever recipe made it (the same GEMM either way)
    one_each = a.scale.numel() == b.scale.numel() == 1
    assert classify(a.scale, b.scale, m, n, k) is (RECIPES["tensorwise"] if one_each else recipe)
    assert a.dequantized.shape == (m, k) and torch.isfinite(a.dequantized).all()


def test_classify_rejects_other_scales():
    ones = torch.ones
    assert classify(ones(32, 1), ones(1, 64), 32, 64, 128).name == "rowwise"
    assert classify(ones(()), ones(1, 64), 32, 64, 128) is None  # a rowwise b needs a rowwise a
    assert classify(ones(32, 2), ones(2, 64), 32, 64, 128) is None  # 64-wide blocks: no recipe
    assert classify(ones(()), ones((), dtype=torch.float16), 32, 64, 128) is None  # not fp32
    assert classify(ones(1, 1), ones(1), 1, 1, 16).name == "tensorwise"  # any one-element shape


AMAX_RECIPES = {name: r for name, r in RECIPES.items() if not r.microscaling}


@pytest.mark.parametrize("recipe", list(AMAX_RECIPES.values()), ids=list(AMAX_RECIPES))
def test_scaled_values_multiply_out_as_each_block_s_scale_whole_and_sliced(recipe):
    """An operand kept as stored values and per-block scales (`Scaled`, what the fp64 reference
    gets) multiplies out to each element times its block's scale, bit for bit: whole, sliced
    mid-block along each dim, transposed, and with a stride-0 batch. It holds the stored values
    themselves, not an fp64 copy."""
    rows, cols = 256, 384
    for operand in "ab":
        x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(1)) * 3
        q = recipe.quantize(x, operand, torch.float8_e4m3fn)
        assert isinstance(q.exact, scaling.Scaled)
        assert q.exact.values.data_ptr() == q.values.data_ptr()
        block_rows, block_cols = recipe.block(operand)
        grid = q.scale.double().reshape(recipe.scale_shape(operand, rows, cols) or (1, 1))
        if block_rows != scaling.WHOLE:
            grid = grid.repeat_interleave(block_rows, 0)
        if block_cols != scaling.WHOLE:
            grid = grid.repeat_interleave(block_cols, 1)
        whole = q.values.double() * grid  # each element times its block's scale
        assert torch.equal(q.dequantized, whole)
        views = {
            "rows 5..135": (q.exact.narrow(0, 5, 130), whole.narrow(0, 5, 130)),
            "columns 127..": (q.exact.narrow(1, 127, 257), whole.narrow(1, 127, 257)),
            "both, nested": (
                q.exact.narrow(1, 130, 3).narrow(0, 250, 6).narrow(1, 1, 2),
                whole.narrow(1, 130, 3).narrow(0, 250, 6).narrow(1, 1, 2),
            ),
            "none": (q.exact.narrow(0, rows, 0), whole.narrow(0, rows, 0)),
            "transposed, sliced": (
                q.exact.transpose(-2, -1).narrow(0, 200, 100).narrow(1, 1, 129),
                whole.t().narrow(0, 200, 100).narrow(1, 1, 129),
            ),
            "batch of 3": (
                q.exact.expand([3, rows, cols]).narrow(0, 1, 2).narrow(2, 60, 70),
                whole.expand(3, rows, cols).narrow(0, 1, 2).narrow(2, 60, 70),
            ),
        }
        for name, (scaled, expected) in views.items():
            assert scaled.shape == expected.shape, name
            assert torch.equal(scaled.exact(), expected), (operand, name)


def test_blockwise_divisibility():
    blockwise = RECIPES["blockwise"]
    assert blockwise.multiples() == {"K": 128, "N": 128}
    assert blockwise.shape_error(m=3, n=256, k=128) is None
    assert blockwise.shape_error(m=3, n=200, k=128) == (
        "blockwise scaling needs K and N to be multiples of 128"
    )
    assert RECIPES["rowwise"].shape_error(m=3, n=5, k=7) is None
    mixed = scaling.Recipe("mixed", a_block=(1, 32), b_block=(32, 16))
    assert mixed.shape_error(m=1, n=8, k=32) == "mixed scaling needs K % 32 == 0, N % 16 == 0"


def test_a_torch_dtype_has_the_suite_s_name_of_its_first_row():
    from gemmconf.gemm import dtypes

    assert dtypes.name_of(torch.float32) == "fp32"  # not tf32: fp32 storage, strict math first
    assert dtypes.name_of(torch.float8_e4m3fn) == "e4m3fn"
    assert dtypes.name_of(torch.float4_e2m1fn_x2) == "fp4"
    assert dtypes.name_of(torch.complex64) is None
    for name, row in dtypes.DTYPES.items():
        assert dtypes.torch_dtype(dtypes.name_of(row.torch_dtype)) == row.torch_dtype, name
