"""Split-K (backend/kernels/splitk.py): `splitk_gemm_kernel` cuts the K loop into slices, one
program per (tile, slice), and the tile's last-arriving program sums the slices' fp32 partials
in slice order; with STREAM (stream-K, `split_k="stream"`) each of one program per SM takes an
equal share of all tiles' K steps, and a tile's parts are summed in program order. On a CPU
both run in the Triton interpreter, forced with `split_k=N` or "stream"; which problems "auto"
splits is a plan (`launcher.plan_launch` for an sm90 target), and the sm90 code is
cross-compiled. Its speed: BENCHMARKS.md, "2026-11-29, c85eccb to 03e2355"."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

from gemmconf.backends import resolve
from gemmconf.backends.base import RunOptions
from gemmconf.backends.reference import ReferenceBackend, ReferenceCompiled
from gemmconf_reference import BackendOptions, kernels
from gemmconf_reference.launcher import OperandLayout, Problem, plan_launch
from gemmconf_reference.target import Target

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
H200 = Target("sm90", 90, False, 132)
ROW, COL = OperandLayout("row", True), OperandLayout("col", True)


def compile_ref(fn, **options) -> ReferenceCompiled:
    backend = ReferenceBackend(BackendOptions(**options))
    backend.configure(RunOptions(target_arch="sm90"))
    return backend.compile(fn, [], dynamic=False)


def launched(compiled: ReferenceCompiled) -> list[tuple[str, tuple[int, ...]]]:
    return [(r.plan.kernel, r.plan.grid) for r in compiled.compiler.launches()]


def randn(*shape: int, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE).to(dtype)


def stream_grid(compiled: ReferenceCompiled) -> tuple[int, ...]:
    """The grid stream-K must have had for `compiled`'s one launch: one program per SM, no more
    than the (tile, K tile) steps of the tile it ran (the interpreter's "SMs" are 4)."""
    ((record,),) = [compiled.compiler.launches()]
    config, problem = record.plan.config, record.problem
    (runtime,) = {
        id(c.runtime): c.runtime for g in compiled.compiler.graphs for c in g.calls
    }.values()
    tiles = -(-problem.m // config.block_m) * -(-problem.n // config.block_n)
    return (min(runtime.target.num_sms, tiles * -(-problem.k // config.block_k)),)


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.double() - want.double()).norm() / want.double().norm())


def linear(x, w):
    return F.linear(x, w)


# K = 1100 is 3 K tiles of the interpreter's 512 (the last one 76 long) and no multiple of the
# slice count; 2100 is 5 tiles cut into 4 slices of 2, so the fourth slice starts past K
@pytest.mark.parametrize(
    ("dtype", "k", "splits"),
    [(torch.bfloat16, 1100, 3), (torch.float32, 1100, 2), (torch.float16, 2100, 4)],
)
def test_split_sums_like_the_unsplit_kernel_and_twice_the_same(dtype, k, splits):
    x, w = randn(16, k, dtype=dtype), randn(48, k, dtype=dtype)
    split = compile_ref(linear, split_k=splits)
    whole = compile_ref(linear, split_k="never")
    first, second, unsplit = split(x, w), split(x, w), whole(x, w)
    assert launched(split) == [(kernels.SPLITK, (1, 1, splits))]
    assert launched(whole)[0][0] != kernels.SPLITK
    exact = x.double() @ w.double().T
    bar = 1e-5 if dtype == torch.float32 else 1e-2
    assert relative_error(first, exact) < bar
    assert relative_error(first, unsplit) < bar
    assert torch.equal(first, second)  # the slices are summed in one order, whoever sums them


# In the interpreter (tiles 128 x (N up to 128) x 512, 4 "SMs", target.py): 48 x 1100 is one
# tile of 3 K steps in 3 parts; 300 x 2100 three tiles of 5 steps, each program's share (3, 4,
# 4, 4 steps) ending inside the next tile; 700 x 1100 six tiles of 3 steps, shares of 4 and 5:
# tiles whole in one program beside tiles in two parts; 150 rows make two tile rows. On a GPU
# the same calls share their steps among its SMs.
@pytest.mark.parametrize(
    ("m", "n", "k", "programs"),
    [(16, 48, 1100, 3), (16, 300, 2100, 4), (16, 700, 1100, 4), (150, 300, 1100, 4)],
)
def test_stream_k_shares_the_steps_and_sums_each_tile_in_one_order(m, n, k, programs):
    x, w = randn(m, k, dtype=torch.float32), randn(n, k, dtype=torch.float32)
    stream = compile_ref(linear, split_k="stream")
    first, second = stream(x, w), stream(x, w)
    ((kernel, grid),) = launched(stream)
    assert (kernel, grid) == (kernels.SPLITK, stream_grid(stream))
    assert DEVICE == "cuda" or grid == (programs,)
    assert relative_error(first, x.double() @ w.double().T) < 1e-5
    assert torch.equal(first, second)  # the parts are summed in one order, whoever sums them


@pytest.mark.parametrize(("split_k", "n"), [(5, 40), ("stream", 400)])
def test_a_partial_is_lost_or_doubled_by_whole_integers(split_k, n):
    """Integer values: every product and partial sum is exact in fp32, so a slice dropped, added
    twice, or read before it was written is off by integers no rounding explains."""
    x = torch.randint(-4, 5, (33, 2100), device=DEVICE).float()
    w = torch.randint(-4, 5, (n, 2100), device=DEVICE).float()
    compiled = compile_ref(linear, split_k=split_k)
    assert torch.equal(compiled(x, w), x @ w.T)
    grid = (1, 1, 5) if split_k == 5 else stream_grid(compiled)
    assert launched(compiled) == [(kernels.SPLITK, grid)]


@pytest.mark.parametrize(("split_k", "n"), [(3, 40), ("stream", 300)])
def test_the_epilogue_and_bias_run_once_on_the_whole_sum(split_k, n):
    def fn(x, w, bias, scale):
        return torch.relu(F.linear(x, w, bias) * scale)

    x, w, bias, scale = randn(16, 1100), randn(n, 1100), randn(n), randn(16, n)
    compiled = compile_ref(fn, split_k=split_k)
    got = compiled(x, w, bias, scale)
    grid = (1, 1, 3) if split_k == 3 else stream_grid(compiled)
    assert launched(compiled) == [(kernels.SPLITK, grid)]
    assert len(compiled.compiler.graphs[0].calls) == 1  # the bias, mul and relu fused into it
    assert relative_error(got, fn(x.float(), w.float(), bias.float(), scale.float())) < 1e-2


def test_fp8_rowwise_scales_apply_after_the_slices_are_summed():
    def scaled(a, b, scale_a, scale_b):
        return torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16)

    a = (torch.randn(16, 1152, device=DEVICE) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(64, 1152, device=DEVICE) * 2).to(torch.float8_e4m3fn).T
    scale_a = torch.rand(16, 1, device=DEVICE) + 0.5
    scale_b = torch.rand(1, 64, device=DEVICE) + 0.5
    compiled = compile_ref(scaled, split_k=3)
    got = compiled(a, b, scale_a, scale_b)
    assert launched(compiled)[0][0] == kernels.SPLITK
    want = (a.double() @ b.double()) * scale_a.double() * scale_b.double()
    assert relative_error(got, want) < 1e-2


@pytest.mark.parametrize("split_k", [3, "stream"])
def test_every_arrival_counter_is_back_at_zero_after_a_call(split_k):
    compiled = compile_ref(linear, split_k=split_k)
    compiled(randn(16, 1100), randn(300, 1100))
    (runtime,) = {
        id(c.runtime): c.runtime for g in compiled.compiler.graphs for c in g.calls
    }.values()
    ((_, counters),) = runtime.split_buffers.by_stream.values()
    assert counters.numel() >= 3 and not counters.any()


def decode(m: int = 16, n: int = 4096, k: int = 14336, dtype=torch.bfloat16, **changes) -> Problem:
    fp8 = dtype == torch.float8_e4m3fn
    fields = dict(
        dtype=dtype,
        batch=1,
        m=m,
        n=n,
        k=k,
        a=ROW,
        b=COL,
        scaling="rowwise" if fp8 else "none",
        int_acc=False,
        input_precision="ieee",
        fast_accum=not fp8,
        epilogue=("none",) * 4,
        index_64=False,
        out_dtype=torch.bfloat16,
    )
    return Problem(**{**fields, **changes})


# Llama-3 8B's decode projections on an H200's 132 SMs: qkv's 96 tiles of 64x64 and o's 64 fit
# the SMs whole (o's K, 32 K tiles, too short for 2 slices), down's 64 take 2 slices of its 112
# K tiles; gate_up's 448 would not fit one wave: 224 of 64x128, whole (configs.DECODE)
@pytest.mark.parametrize(
    ("n", "k", "kernel", "grid", "block_n", "stages"),
    [
        (6144, 4096, "gemm_kernel", (1, 96, 1), 64, 6),
        (4096, 4096, "gemm_kernel", (1, 64, 1), 64, 6),
        (28672, 4096, "gemm_kernel", (1, 224, 1), 128, 4),
        (4096, 14336, kernels.SPLITK, (1, 64, 2), 64, 6),
    ],
)
def test_auto_picks_the_decode_tile_and_slices_from_tiles_and_sms(
    n, k, kernel, grid, block_n, stages
):
    plan = plan_launch(decode(n=n, k=k), H200, BackendOptions())
    assert (plan.kernel, plan.grid) == (kernel, grid)
    assert (plan.config.block_m, plan.config.block_n, plan.config.block_k) == (64, block_n, 128)
    assert plan.config.num_stages == stages
    assert plan.flags()["A_DESC"] == plan.flags()["B_DESC"] == "none"  # pointer loads


def test_the_decode_tile_and_slices_follow_the_sm_count():
    """The same shapes on fewer SMs: qkv's 96 narrow tiles would not fit 80, so 48 of 64x128;
    down's 64 narrow tiles fit 80 but not twice: whole; 200 SMs cut down into 3 slices."""
    qkv = plan_launch(decode(n=6144, k=4096), Target("sm90", 90, False, 80), BackendOptions())
    assert (qkv.kernel, qkv.grid, qkv.config.block_n) == ("gemm_kernel", (1, 48, 1), 128)
    down = plan_launch(decode(), Target("sm90", 90, False, 80), BackendOptions())
    assert (down.kernel, down.grid, down.config.block_n) == ("gemm_kernel", (1, 64, 1), 64)
    wide = plan_launch(decode(), Target("sm90", 90, False, 200), BackendOptions())
    assert (wide.kernel, wide.grid) == (kernels.SPLITK, (1, 64, 3))


# fp8 decode runs stream-K on one tile, two programs per SM, whatever its tile count: Llama-3
# 8B's qkv, o, gate_up and down (96, 64, 448 and 64 tiles of 64x64) alike (configs.DECODE)
@pytest.mark.parametrize(("n", "k"), [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)])
def test_auto_streams_fp8_decode_on_its_tile_two_programs_per_sm(n, k):
    plans = {
        plan_launch(decode(m, n, k, dtype=torch.float8_e4m3fn, scaling=scaling), H200, options)
        for m in (1, 16, 64)
        for scaling in ("rowwise", "tensorwise")
        for options in (BackendOptions(),)
    }
    assert {(p.kernel, p.grid, p.flags()["STREAM"]) for p in plans} == {
        (kernels.SPLITK, (264,), True)
    }
    (config,) = {p.config for p in plans}  # every M of one tile row sums in one order
    assert (config.block_m, config.block_n, config.block_k, config.num_stages) == (64, 64, 128, 6)
    assert {(p.flags()["A_DESC"], p.flags()["B_DESC"]) for p in plans} == {("none", "none")}


def test_fp8_decode_keeps_its_table_tile_where_stream_k_cannot_run():
    """Blockwise scales apply inside the K loop (no split); 65 rows make two tile rows; the
    interpreter, another arch, and `split_k="never"` keep the dense kernels."""
    fp8 = torch.float8_e4m3fn
    blockwise = plan_launch(decode(dtype=fp8, scaling="blockwise"), H200, BackendOptions())
    assert blockwise.kernel == "gemm_kernel" and blockwise.flags()["A_DESC"] != "none"
    assert plan_launch(decode(m=65, dtype=fp8), H200, BackendOptions()).kernel == "gemm_kernel"
    assert plan_launch(decode(m=16, k=1024, dtype=fp8), H200, BackendOptions()).kernel == (
        "gemm_kernel"
    )  # K under configs.DECODE_MIN_K
    for target in (Target("sm90", 90, True, 4), Target("sm100", 100, False, 148)):
        assert plan_launch(decode(dtype=fp8), target, BackendOptions()).kernel != kernels.SPLITK
    never = plan_launch(decode(dtype=fp8), H200, BackendOptions(split_k="never"))
    assert never.kernel == "gemm_kernel"


def test_stream_k_needs_two_k_tiles_a_tile():
    """K within one K tile (K = 1 in suites/epilogue's odd shapes) leaves stream-K nothing to
    share: the dense kernels run it, forced or not (Triton 3.6 failed to compile such a
    stream-K launch on an H200, 2026-11-30)."""
    for k in (1, 64):
        plan = plan_launch(decode(m=33, n=17, k=k), H200, BackendOptions(split_k="stream"))
        assert plan.kernel != kernels.SPLITK
    wide = plan_launch(decode(m=33, n=17, k=8192), H200, BackendOptions(split_k="stream"))
    assert wide.kernel == kernels.SPLITK and wide.flags()["STREAM"]


def test_auto_leaves_whole_waves_prefill_and_other_targets_unsplit():
    assert plan_launch(decode(n=28672, k=4096), H200, BackendOptions()).kernel == "gemm_kernel"
    assert plan_launch(decode(m=8192), H200, BackendOptions()).kernel == kernels.HOPPER
    for target in (Target("sm90", 90, True, 4), Target("sm100", 100, False, 148)):
        assert plan_launch(decode(), target, BackendOptions()).kernel != kernels.SPLITK
    for options in (BackendOptions(split_k="never"), BackendOptions(persistent="always")):
        assert plan_launch(decode(), H200, options).kernel != kernels.SPLITK


@pytest.mark.parametrize(("m", "n", "k"), [(64, 48, 256), (33, 40, 1024)])
def test_the_batch_invariant_items_keep_one_plan_for_every_row_count(m, n, k):
    """suites/integrity's batch_invariant shapes, and their calls with 1 and M / 2 rows: short
    K loops, so no split, and the same tile (the same summation order) for all three."""
    plans = {plan_launch(decode(rows, n, k), H200, BackendOptions()) for rows in (m, m // 2, 1)}
    kernel_names = {p.kernel for p in plans}
    assert kernels.SPLITK not in kernel_names
    assert len({(p.config, p.constexprs) for p in plans}) == 1


def test_every_row_count_within_one_tile_row_splits_alike():
    """The slice count comes from the tile count and K: M = 1..64 sum a row in one order; a
    65th row makes two tile rows, off the decode tile (configs.py's docstring)."""
    plans = {m: plan_launch(decode(m=m), H200, BackendOptions()) for m in (1, 16, 33, 64, 65)}
    assert len({(p.kernel, p.grid[1:], p.config) for m, p in plans.items() if m <= 64}) == 1
    assert plans[65].kernel != kernels.SPLITK and plans[65].config.block_k == 64


def test_a_batched_gemm_takes_the_table_tile_unsplit_even_when_forced():
    """A linear on a 3-d input whose rows cannot be flattened (`x[:, :1]`) is a batched GEMM:
    neither the decode tile nor a slice applies, forced or not, so its rows may sum in another
    order than the one-batch call of a contiguous input (configs.py's docstring; an H200 run
    with split_k=3 failed integrity/batch_invariant[linear-fp32-*] this way, 2026-11-29)."""
    one_batch = plan_launch(decode(m=16), H200, BackendOptions())
    batched = plan_launch(decode(m=8, batch=2), H200, BackendOptions())
    assert one_batch.kernel == kernels.SPLITK and one_batch.config.block_k == 128
    assert batched.kernel != kernels.SPLITK and batched.config.block_k == 64
    forced = plan_launch(decode(m=8, batch=2), H200, BackendOptions(split_k=3))
    assert forced.kernel != kernels.SPLITK


def test_the_option_parses_and_refuses_what_it_cannot_be():
    assert resolve("reference:split_k=3").options.split_k == 3
    assert resolve("reference:split_k=never").options.split_k == "never"
    assert resolve("reference:split_k=stream").options.split_k == "stream"
    with pytest.raises(ValueError, match="unknown reference option 'split_k=some'"):
        resolve("reference:split_k=some")
    with pytest.raises(ValueError, match="split_k must be"):
        BackendOptions(split_k=0)


def test_sm90_code_sums_under_an_acquire_release_counter():
    """The artifacts replan an interpreted decode-like call for sm90: the split kernel, its
    wgmma, operands through cp.async, partials read back from L2, a gpu-scope counter."""
    compiled = compile_ref(linear)
    compiled(randn(16, 8192), randn(256, 8192))  # 4 tiles of 64 columns, 64 K tiles of 128
    artifacts = compiled.compiler.artifacts("sm90")
    assert f"{kernels.SPLITK} for sm90" in artifacts["ptx"]
    ptx = artifacts["ptx"]
    assert "wgmma.mma_async" in ptx and "cp.async" in ptx
    assert "atom.global.gpu.acq_rel.add" in ptx and "ld.global.cg" in ptx
    assert re.search(r"bar\.sync|barrier\.sync", ptx)
    assert "ttng.async_tma_copy_global_to_local" not in artifacts["ttgir"]
    assert "def splitk_gemm_kernel(" in artifacts["triton"]


def test_sm90_stream_k_code_walks_its_share_in_one_program_per_sm():
    """Forced stream-K, replanned for sm90: one program per SM (132 on the artifacts' target,
    fewer where the problem has fewer steps), the same wgmma, counter and L2 reads."""
    compiled = compile_ref(linear, split_k="stream")
    compiled(randn(16, 8192), randn(256, 8192))
    artifacts = compiled.compiler.artifacts("sm90")
    ptx = artifacts["ptx"]
    assert "wgmma.mma_async" in ptx and "atom.global.gpu.acq_rel.add" in ptx
    assert "ld.global.cg" in ptx
    plan = plan_launch(decode(n=6144, k=4096), H200, BackendOptions(split_k="stream"))
    assert (plan.kernel, plan.grid, plan.flags()["STREAM"]) == (kernels.SPLITK, (132,), True)
    assert plan.workspace == (132 * 2 * 64 * 64, 96)  # two partials per program, a counter a tile
