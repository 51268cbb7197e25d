"""Inputs: layouts have the strides they claim, seeds are per item, fp8 dequantizes exactly."""

from __future__ import annotations

import textwrap

import pytest
import torch

from gemmconf import inputs, program, repro
from gemmconf.gemm.scaling import Scaled
from gemmconf.scenario import load_suite


def instance(tmp_path, body: str):
    path = tmp_path / "s.yaml"
    path.write_text("scenarios:\n  - name: x\n" + textwrap.indent(textwrap.dedent(body), "    "))
    (only,) = load_suite(path)
    return only


@pytest.mark.parametrize(
    ("layout", "check"),
    [
        ("row", lambda t: t.is_contiguous()),
        ("col", lambda t: t.stride() == (1, 33)),
        ("t", lambda t: t.shape == (16, 33) and t.is_contiguous()),
        ("offset", lambda t: t.storage_offset() == 1 and t.stride() == (16, 1)),
        ("padded", lambda t: t.stride() == (32, 1)),
        ("padded_odd", lambda t: t.stride() == (17, 1)),
        ("col_padded", lambda t: t.stride() == (1, 48)),
        ("col_padded64", lambda t: t.stride() == (1, 64)),  # GPT-2's 50257 -> 50304, below
    ],
)
def test_layouts(tmp_path, layout, check):
    item = instance(
        tmp_path,
        f"""
        op: mm
        dtype: bf16
        shape: {{M: 33, N: 8, K: 16}}
        layout: {{a: {layout}}}
    """,
    )
    built = inputs.build(item, 0, run_seed=0)
    a = built.tensors[built.names.index("a")]
    assert check(a), (layout, a.shape, a.stride(), a.storage_offset())
    fn, reference = program.make_function(item), program.make_reference(item)
    expected = fn(*built.tensors)
    exact = reference(*(t.double() for t in built.reference))  # upcast as chunked.py does
    assert expected.shape == (33, 8)
    assert (expected.double() - exact).abs().max() < 0.05


def test_col_padded64_pads_gpt2s_vocabulary_as_the_seeds_do():
    """test_max_autotune.py's rand_strided((50257, 2048), (1, 50304)): the leading stride is the
    next multiple of 64 above the width (col_padded's next multiple of 16 gave 50272)."""
    logical = torch.zeros(50257, 4, dtype=torch.int8)
    assert inputs._lay_out(logical, "col_padded64", [50257, 4], "cpu").stride() == (1, 50304)
    assert inputs._lay_out(logical, "col_padded", [50257, 4], "cpu").stride() == (1, 50272)


def test_expand_and_alias(tmp_path):
    batched = instance(
        tmp_path,
        """
        op: bmm
        shape: {B: 3, M: 4, N: 5, K: 6}
        layout: {b: expand}
    """,
    )
    b = inputs.build(batched, 0, 0).tensors[1]
    assert b.stride()[0] == 0 and b.shape == (3, 6, 5)
    aliased = instance(
        tmp_path,
        """
        op: mm
        shape: {M: 8, N: 8, K: 8}
        layout: alias
    """,
    )
    built = inputs.build(aliased, 0, 0)
    assert built.tensors[0] is built.tensors[1]
    assert "same tensor as a" in built.describe()


def test_seeds_differ_per_item_shape_set_and_run_but_repeat(tmp_path):
    item = instance(
        tmp_path,
        """
        op: mm
        shapes: [{M: 4, N: 4, K: 4}, {M: 4, N: 4, K: 4}]
        compile: dynamic
    """,
    )
    first = inputs.build(item, 0, 0).tensors[0]
    assert torch.equal(first, inputs.build(item, 0, 0).tensors[0])
    assert not torch.equal(first, inputs.build(item, 1, 0).tensors[0])
    assert not torch.equal(first, inputs.build(item, 0, 1).tensors[0])
    assert inputs.item_seed("a", 0, 0) != inputs.item_seed("b", 0, 0)


@pytest.mark.parametrize("k", [1, 64, 4096])
def test_values_are_scaled_to_unit_outputs_and_never_zero(tmp_path, k):
    item = instance(
        tmp_path,
        f"""
        op: mm
        shape: {{M: 16, N: 16, K: {k}}}
    """,
    )
    a, b = inputs.build(item, 0, 0).tensors
    assert a.abs().sum() > 0 and b.abs().sum() > 0
    std = (a @ b).std().item()
    assert 0.3 < std < 3, std


@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise", "blockwise"])
def test_fp8_dequantizes_exactly(tmp_path, scaling):
    item = instance(
        tmp_path,
        f"""
        op: scaled_mm
        scaling: {scaling}
        shape: {{M: 32, N: 128, K: 256}}
        layout: {{b: col}}
    """,
    )
    built = inputs.build(item, 0, 0)
    tensors = dict(zip(built.names, built.tensors, strict=True))
    refs = dict(zip(built.names, built.reference, strict=True))
    a, scale_a = tensors["a"], tensors["scale_a"]
    assert a.dtype == torch.float8_e4m3fn and scale_a.dtype == torch.float32
    expected_shape = {"tensorwise": (), "rowwise": (32, 1), "blockwise": (32, 2)}[scaling]
    assert tuple(scale_a.shape) == expected_shape
    if scaling == "blockwise":
        assert tuple(tensors["scale_b"].shape) == (2, 1)
        assert scale_a.stride() == (1, 32)
        scale_full = scale_a.double().repeat_interleave(128, dim=1)
    else:
        scale_full = scale_a.double()
    # kept as the stored values and their scales (no fp64 copy), multiplied out exactly
    assert isinstance(refs["a"], Scaled) and refs["a"].values.dtype == torch.float8_e4m3fn
    assert torch.equal(inputs.exact(refs["a"]), a.double() * scale_full)
    assert tensors["b"].stride() == (1, 256)


def test_nan_planted_in_both_inputs_and_reference(tmp_path):
    item = instance(
        tmp_path,
        """
        op: mm
        shape: {M: 4, N: 4, K: 4}
        values: nan_in_a
    """,
    )
    built = inputs.build(item, 0, 0)
    assert torch.isnan(built.tensors[0]).any() and torch.isnan(built.reference[0]).any()


def test_tf32_context_is_scoped(tmp_path):
    item = instance(
        tmp_path,
        """
        op: mm
        dtype: tf32
        shape: {M: 4, N: 4, K: 4}
    """,
    )
    before = torch.get_float32_matmul_precision()
    with program.numerics(item):
        assert torch.backends.cuda.matmul.allow_tf32
    assert torch.get_float32_matmul_precision() == before
    assert not torch.backends.cuda.matmul.allow_tf32


@pytest.mark.parametrize(
    ("op", "extra", "scale"),
    [
        ("addmm", "alpha: -2.0\nbeta: 0.5\nbias: [M, N]\n", 2.0),
        ("linear", "bias: [N]\n", 1.0),
        ("mm", "layout: {a: t}\n", 1.0),
        ("baddbmm", "shape: {B: 2, M: 7, N: 5, K: 3}\nalpha: 3.0\nbias: [B, M, N]\n", 3.0),
    ],
)
def test_rounding_magnitude_is_the_gemm_of_absolute_values_alone(tmp_path, op, extra, scale):
    """What TF32 input rounding can cost per element: |alpha| * (|A| @ |B|), no C, no bias."""
    body = f"op: {op}\ndtype: tf32\n" + (
        extra if "shape:" in extra else "shape: {M: 7, N: 5, K: 3}\n" + extra
    )
    item = instance(tmp_path, body)
    built = inputs.build(item, 0, run_seed=0)
    rounding = program.make_rounding_magnitude(item)(*built.reference)
    named = dict(zip(built.names, built.reference, strict=True))
    a, b = named["a"], named["b"]
    if item.operands[0].layout == "t":
        a = a.transpose(-2, -1)
    b = b.transpose(-2, -1) if op == "linear" else b
    assert torch.allclose(rounding, scale * (a.abs() @ b.abs()))
    assert (rounding >= 0).all()


def test_no_rounding_magnitude_after_an_epilogue_or_for_fp8(tmp_path):
    with_epilogue = instance(
        tmp_path,
        """
        op: mm
        dtype: tf32
        shape: {M: 4, N: 4, K: 4}
        epilogue: [tanh]
    """,
    )
    assert program.make_rounding_magnitude(with_epilogue) is None
    fp8 = instance(
        tmp_path,
        """
        op: scaled_mm
        dtype: e4m3fn
        scaling: tensorwise
        shape: {M: 16, N: 16, K: 16}
        layout: {b: col}
    """,
    )
    assert program.make_rounding_magnitude(fp8) is None


def intermediate_rounding(item) -> tuple[object, dict[str, torch.Tensor]]:
    """The item's intermediate-rounding bound over its fp64 inputs, and those inputs by name."""
    built = inputs.build(item, 0, run_seed=0)
    fp64 = [t.double() for t in built.reference]
    bound = program.make_intermediate_rounding(item)(*fp64)
    return bound, dict(zip(built.names, fp64, strict=True))


def test_intermediate_rounding_counts_each_value_handed_on_through_the_later_steps(tmp_path):
    """alpha * (A @ B) rounded before beta * C is added, the GEMM's result rounded before the
    first step, each a unit of the result dtype, carried through the steps' slopes."""
    item = instance(
        tmp_path,
        """
        op: addmm
        dtype: bf16
        shape: {M: 7, N: 5, K: 3}
        alpha: -2.0
        beta: 0.5
        bias: [M, N]
        epilogue: [{mul: 3.0}, gelu]
    """,
    )
    carried, named = intermediate_rounding(item)
    product = -2.0 * (named["a"] @ named["b"])
    gemm = 0.5 * named["c"] + product
    eps = torch.finfo(torch.bfloat16).eps
    expected = ((eps * product.abs() + eps * gemm.abs()) * 3.0 + eps * (3.0 * gemm).abs()) * 1.13
    assert torch.allclose(carried, expected)


def test_intermediate_rounding_gives_each_kept_output_what_was_carried_up_to_it(tmp_path):
    item = instance(
        tmp_path,
        """
        op: linear
        dtype: fp16
        shape: {M: 6, N: 5, K: 8}
        bias: [N]
        epilogue: [keep, silu, keep, {mul: 2.0}]
    """,
    )
    (first, second, last), named = intermediate_rounding(item)
    product = named["a"] @ named["b"].T
    gemm = product + named["bias"]
    eps = torch.finfo(torch.float16).eps
    assert torch.allclose(first, eps * product.abs())  # the kept GEMM result: the product's
    activated = torch.nn.functional.silu(gemm)
    assert torch.allclose(second, (first + eps * gemm.abs()) * 1.1)
    assert torch.allclose(last, (second + eps * activated.abs()) * 2.0)


def test_a_backward_item_s_forward_result_gets_the_bound_and_its_gradients_none(tmp_path):
    """The program returns (out, d_a, d_b, d_bias): out is bounded as a forward item's is, each
    gradient gets zeros shaped like it (the parameter as given, before the transpose)."""
    item = instance(
        tmp_path,
        """
        op: linear
        dtype: bf16
        shape: {M: 6, N: 5, K: 8}
        bias: [N]
        layout: {b: t}
        backward: true
    """,
    )
    (out, *gradients), named = intermediate_rounding(item)
    product = named["a"] @ named["b"].transpose(-2, -1).T
    assert torch.allclose(out, torch.finfo(torch.bfloat16).eps * product.abs())
    assert not out.requires_grad
    shapes = [tuple(named[n].shape) for n in ("a", "b", "bias")]
    assert [tuple(g.shape) for g in gradients] == shapes
    assert all(not g.any() for g in gradients)


@pytest.mark.parametrize(
    "body",
    [
        "op: mm\ndtype: bf16\nshape: {M: 4, N: 4, K: 4}\n",  # the output is the GEMM
        "op: addmm\ndtype: bf16\nbeta: 0.0\nbias: [N]\nshape: {M: 4, N: 4, K: 4}\n",
        "op: mm\ndtype: bf16\nshape: {M: 4, N: 4, K: 4}\nbackward: true\n",
    ],
)
def test_no_intermediate_rounding_without_an_intermediate(tmp_path, body):
    assert program.make_intermediate_rounding(instance(tmp_path, body)) is None


@pytest.mark.parametrize("layout", ["row", "col", "t", "offset", "padded_odd", "expand+col"])
def test_the_two_copies_are_equal_apart_and_keep_the_layout_s_strides(tmp_path, layout):
    """Eager's and the backend's inputs: the same values and strides, no shared storage. A
    column-major [B, 1, K] keeps the strides it had when each copy was built on its own (a
    contiguous() that leaves an already-contiguous view alone): grouped GEMM's 16-byte stride
    check reads them (grouped/batched[6b1x48x64-a_col] broke when a clone restrided them)."""
    item = instance(
        tmp_path,
        f"""
        op: bmm
        dtype: bf16
        shape: {{B: 3, M: 1, N: 8, K: 64}}
        layout: {{a: {layout}}}
    """,
    )
    first, second = inputs.build_copies(item, 0, run_seed=0, copies=2)
    alone = inputs.build(item, 0, run_seed=0)
    for copy in (first, second):
        for t, u in zip(copy.tensors, alone.tensors, strict=True):
            assert torch.equal(t, u) and t.stride() == u.stride(), layout
    for t, u in zip(first.tensors, second.tensors, strict=True):
        assert t.untyped_storage().data_ptr() != u.untyped_storage().data_ptr()
    if layout == "col":
        assert first.tensors[0].stride() == (64, 64, 1)  # size-1 M keeps its K stride


def test_small_draws_are_one_draw_from_the_item_generator():
    """Below PARALLEL_DRAW_ELEMENTS (every CPU item) a seed gives the values it always gave."""
    first, again = (torch.Generator().manual_seed(11) for _ in range(2))
    assert torch.equal(
        inputs._randn([33, 16], first, divisor=2.0), torch.randn([33, 16], generator=again) / 2.0
    )
    first, again = (torch.Generator().manual_seed(12) for _ in range(2))
    drawn = inputs._randint(-8, 9, [40, 7], first, torch.int8)
    assert torch.equal(drawn, torch.randint(-8, 9, [40, 7], generator=again, dtype=torch.int8))


@pytest.mark.parametrize("threads", [1, 3])
def test_large_draws_are_pieces_whose_values_do_not_depend_on_the_threads(monkeypatch, threads):
    monkeypatch.setattr(inputs, "PARALLEL_DRAW_ELEMENTS", 1000)
    monkeypatch.setattr(inputs, "DRAW_PIECE", 256)
    monkeypatch.setattr(inputs.torch, "get_num_threads", lambda: threads)
    shape = [5, 401]  # 2,005 values: 8 pieces, the last one short
    values = inputs._randn(shape, torch.Generator().manual_seed(3), divisor=4.0)
    monkeypatch.setattr(inputs.torch, "get_num_threads", lambda: 8)
    assert torch.equal(values, inputs._randn(shape, torch.Generator().manual_seed(3), divisor=4.0))
    flat = values.flatten()
    pieces = [flat[i : i + 256] for i in range(0, 2005, 256)]
    assert all(not torch.equal(pieces[0][:100], p[:100]) for p in pieces[1:])  # no piece repeats
    assert 0.2 < float(flat.std()) < 0.3  # standard normal / 4
    other = inputs._randn(shape, torch.Generator().manual_seed(4), divisor=4.0)
    assert not torch.equal(values, other)
    ints = inputs._randint(-4, 5, shape, torch.Generator().manual_seed(3), torch.int8)
    assert ints.dtype == torch.int8 and int(ints.min()) == -4 and int(ints.max()) == 4


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_a_large_draw_rounded_piece_by_piece_is_the_whole_draw_rounded(monkeypatch, dtype):
    """A large operand is rounded to its dtype a piece at a time (no operand-sized fp32 copy on
    the host): the values of the fp32 draw rounded whole, bit for bit."""
    monkeypatch.setattr(inputs, "PARALLEL_DRAW_ELEMENTS", 1000)
    monkeypatch.setattr(inputs, "DRAW_PIECE", 256)
    shape = [5, 401]
    whole = inputs._randn(shape, torch.Generator().manual_seed(5), divisor=3.0).to(dtype)
    pieces = inputs._randn(shape, torch.Generator().manual_seed(5), divisor=3.0, dtype=dtype)
    assert pieces.dtype == dtype and torch.equal(pieces, whole)
    small = inputs._randn([3, 4], torch.Generator().manual_seed(5), dtype=dtype)
    assert torch.equal(small, inputs._randn([3, 4], torch.Generator().manual_seed(5)).to(dtype))


def test_an_item_with_a_large_draw_builds_its_inputs_on_more_threads(tmp_path, monkeypatch):
    """An xdist worker of a GPU run has one CPU thread; an item past PARALLEL_DRAW_ELEMENTS
    draws, quantizes and lays out its inputs on GEMMCONF_LARGE_DRAW_THREADS, then gives them
    back. Smaller items, and a process without the variable, keep what they have."""
    monkeypatch.setattr(inputs, "PARALLEL_DRAW_ELEMENTS", 1000)
    seen = []
    draw_values = inputs._draw_values

    def watched(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return draw_values(*args, **kwargs)

    monkeypatch.setattr(inputs, "_draw_values", watched)
    large = instance(tmp_path, "op: mm\nshape: {M: 40, N: 8, K: 32}\n")  # a: 1,280 values
    small = instance(tmp_path, "op: mm\nshape: {M: 8, N: 8, K: 32}\n")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        monkeypatch.setenv(inputs.LARGE_DRAW_THREADS_ENV, "2")
        inputs.build(large, 0, run_seed=0)
        inputs.build(small, 0, run_seed=0)
        monkeypatch.delenv(inputs.LARGE_DRAW_THREADS_ENV)
        inputs.build(large, 0, run_seed=0)
        assert seen == [2, 1, 1] and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def _grouped_instance(scenario: str, axes: str):
    from pathlib import Path

    suite = Path(__file__).resolve().parent.parent / "suites" / "grouped"
    file, prefix = ("scaled_grouped_mm.yaml", "scaled_grouped")
    if scenario != "k_jagged":
        file, prefix = ("grouped_mm.yaml", "grouped")
    wanted = f"{prefix}/{scenario}[{axes}]"
    return next(i for i in load_suite(suite / file) if i.id == wanted)


def test_a_jagged_k_is_quantized_group_by_group():
    """An MoE weight gradient (2-D x 2-D, K cut by offs): each group's K slice has scales of
    its own, so a backend applying group 0's scales to every group computes wrong values (a
    trial's planted bug passed all four k_jagged items while the scales were repeated)."""
    item = _grouped_instance("k_jagged", "even-use_fast_accum")
    built = inputs.build(item, 0, run_seed=0)
    named = dict(zip(built.names, built.tensors, strict=True))
    sizes, (m, n) = [32, 16, 32, 16], (32, 32)
    assert named["offs"].tolist() == [32, 48, 80, 96]
    scale_a, scale_b = named["scale_a"].view(4, m), named["scale_b"].view(4, n)
    assert all(not torch.equal(scale_a[0], scale_a[g]) for g in range(1, 4))
    assert all(not torch.equal(scale_b[0], scale_b[g]) for g in range(1, 4))
    reference = dict(zip(built.names, built.reference, strict=True))
    start = 0
    for g, size in enumerate(sizes):  # each slice dequantizes with its own group's scales
        a = named["a"][:, start : start + size].double() * scale_a[g].double()[:, None]
        b = named["b"][start : start + size].double() * scale_b[g].double()[None, :]
        assert torch.equal(a, reference["a"][:, start : start + size])
        assert torch.equal(b, reference["b"][start : start + size])
        start += size


def test_each_further_draw_turns_the_group_sizes():
    """The same shapes with other offsets on the second call: a backend that keeps a group
    schedule across calls is caught within one item, not only by items sharing a worker."""
    item = _grouped_instance("m_jagged", "empty_groups-row")
    offs = [inputs.build(item, 0, run_seed=0, draw=d) for d in range(3)]
    ends = [dict(zip(b.names, b.tensors, strict=True))["offs"].tolist() for b in offs]
    assert ends == [[0, 24, 24, 64], [24, 24, 64, 64], [0, 40, 40, 64]]
    assert "offs: (4,) stride (1,) offset 0 int32 = [0, 24, 24, 64]" in offs[0].describe()


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
def test_an_out_target_is_nan_whose_bytes_are_no_poison_pattern(tmp_path, dtype):
    """An out= target is NaN in its own dtype, and no element's bytes are all one value: a GPU
    run's poison is 0xFF in every byte of fresh memory (gemmconf.integrity), and a bfloat16 NaN
    converted from float32 on the CPU is 0xFFFF, so an unwritten bf16 target read as fresh
    memory there. The generated repro fills its target alike."""
    item = instance(
        tmp_path,
        f"""
        op: mm_out
        dtype: {dtype}
        shape: {{M: 5, N: 7, K: 3}}
    """,
    )
    built = inputs.build(item, 0, 0)
    target = dict(zip(built.names, built.tensors, strict=True))["out"]
    assert torch.isnan(target).all()
    raw = target.contiguous().view(torch.uint8).reshape(target.numel(), target.element_size())
    assert not (raw == raw[:, :1]).all(dim=1).any()
    fills = [line for line in repro.repro_source(item, "eager").splitlines() if "math.nan" in line]
    assert fills == [f'    value = torch.full(shapes["out"], math.nan, dtype={target.dtype})']
