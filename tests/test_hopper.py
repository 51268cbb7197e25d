"""`hopper_gemm_kernel` (backend/hopper.py): the sm90 kernel with a producer warp and two consumer
warpgroups, in Gluon, for large bf16/fp16 GEMMs and large fp8 ones without fast accumulation.
Gluon does not run in the Triton interpreter, so on a CPU what can be checked is which problems
get it (the plan) and the sm90 code it compiles to; its numerics run on a GPU (BENCHMARKS.md,
"Session 12": bitwise equal to the Triton kernels there)."""

from __future__ import annotations

import re

import pytest
import torch

from gemmconf.backends import resolve
from gemmconf_reference import compiler, configs
from gemmconf_reference.crosscompile import specialize
from gemmconf_reference.launcher import (
    BackendOptions,
    LaunchRecord,
    OperandLayout,
    Problem,
    plan_launch,
)
from gemmconf_reference.target import Target

H100 = Target("sm90", 90, False, 132)
ROW, COL = OperandLayout("row", True), OperandLayout("col", True)


def problem(dtype=torch.float8_e4m3fn, **changes) -> Problem:
    fp8 = dtype in (torch.float8_e4m3fn, torch.float8_e5m2)
    fields = dict(
        dtype=dtype,
        batch=1,
        m=8192,
        n=8192,
        k=8192,
        a=ROW,
        b=COL,
        scaling="rowwise" if fp8 else "none",
        int_acc=False,
        input_precision="ieee",
        fast_accum=not fp8,  # what the launcher sets: only fp8 without use_fast_accum promotes
        epilogue=("none",) * 4,
        index_64=False,
    )
    return Problem(**{**fields, **changes})


def kernel(p: Problem | None = None, target: Target = H100, options=None) -> str:
    return plan_launch(p or problem(), target, options or BackendOptions()).kernel


def test_large_sm90_gemms_run_the_warp_specialized_kernel():
    for p in (
        problem(),  # fp8 rowwise, B column-major (as _scaled_mm wants it)
        problem(scaling="tensorwise", m=4096, k=4096),
        problem(dtype=torch.float8_e5m2),
        problem(torch.bfloat16),  # linear: the weight read as a column-major B
        problem(torch.bfloat16, b=ROW),  # mm: a row-major B
        problem(torch.float16, n=4096, k=14336),
        problem(m=2048, n=2048),  # "medium", 128 tiles of 128x256: enough for the SMs
        problem(m=512, n=4096),  # "medium", 128 tiles of 128x128 (64 of 128x256 would not be)
        problem(torch.bfloat16, m=2048, n=2048),  # 128 tiles of 128x256: half a wave or more
    ):
        assert kernel(p) == "hopper_gemm_kernel", p
    fp8 = plan_launch(problem(), H100, BackendOptions())
    bf16_mm = plan_launch(problem(torch.bfloat16, b=ROW), H100, BackendOptions())
    assert fp8.grid == (132,) and fp8.tma
    assert fp8.flags()["PROMOTE"] and not fp8.flags()["B_KN"]
    assert not bf16_mm.flags()["PROMOTE"] and bf16_mm.flags()["B_KN"]
    assert bf16_mm.flags()["SCALING"] == "none" and bf16_mm.config.block_n == 256


def test_fp8_tiles_are_128x256_unless_their_last_wave_idles_and_stages_fit_shared_memory():
    def plan(**changes):
        return plan_launch(problem(**changes), H100, BackendOptions())

    def tile(**changes):
        flags = plan(**changes).flags()
        return flags["BLOCK_N"], flags["SUB_N"], flags["STAGES"]

    # two promoted 128-column halves per 128x256 tile; 4 stages beside a 2-byte output
    assert tile(out_dtype=torch.bfloat16) == (256, 128, 4)
    assert tile(m=8192, n=4096, out_dtype=torch.float16) == (256, 128, 4)
    assert tile(out_dtype=torch.float32) == (256, 128, 3)  # a 4-byte output's buffers: 3 fit
    assert tile() == (256, 128, 3)  # no output type known: what fits with 4 bytes
    # 3072^3: 288 wide tiles are three waves on 132 SMs, the last 18% full; 576 narrow ones, five
    assert tile(m=3072, n=3072, out_dtype=torch.bfloat16) == (128, 128, 4)
    assert tile(m=512, n=4096, out_dtype=torch.bfloat16) == (128, 128, 4)  # 64 wide tiles
    assert tile(m=2048, n=2048, out_dtype=torch.bfloat16) == (256, 128, 4)  # 128: one wave
    assert plan(m=512, n=4096).grid == (128,)  # one program per tile under a wave
    bf16 = plan_launch(problem(torch.bfloat16, out_dtype=torch.bfloat16), H100, BackendOptions())
    assert (bf16.flags()["BLOCK_N"], bf16.flags()["SUB_N"], bf16.flags()["STAGES"]) == (256, 256, 3)
    for p in (problem(out_dtype=torch.float32), problem(torch.bfloat16)):
        fitted = plan_launch(p, H100, BackendOptions())
        config, flags = fitted.config, fitted.flags()
        ring = config.num_stages * (128 + config.block_n) * config.block_k * p.dtype.itemsize
        out_buffers = 2 * 64 * flags["SUB_N"] * 4
        assert ring + out_buffers <= configs.SM90_SHARED_BYTES - configs.SHARED_SLACK_BYTES


def test_other_problems_targets_and_options_keep_the_triton_kernels():
    not_here = {
        "fp8 with use_fast_accum": problem(fast_accum=True),
        "fp8 blockwise": problem(scaling="blockwise"),
        "fp8 with B row-major (fp8 wgmma reads B K-major)": problem(b=ROW),
        "a batch": problem(batch=2),
        "a fused bias": problem(epilogue=("axpby", "none", "none", "none")),
        "under half a wave of 128x256 tiles": problem(torch.bfloat16, m=512, n=4096, k=4096),
        "under half a wave of 128x128 tiles": problem(m=512, n=2048),
        "a skinny problem (decode)": problem(m=16, n=8192),
        "N not a multiple of 16": problem(n=8200),
        "A not read by TMA": problem(a=OperandLayout("row", False)),
        "A column-major": problem(torch.bfloat16, a=COL),
        "fp32": problem(torch.float32),
        "int8": problem(torch.int8, int_acc=True),
    }
    for why, p in not_here.items():
        assert kernel(p) != "hopper_gemm_kernel", why
    assert kernel(target=Target("sm100", 100, False, 148)) != "hopper_gemm_kernel"
    assert kernel(target=Target("sm90", 90, True, 4)) != "hopper_gemm_kernel"  # interpreter
    for option in ("fp8_accum=tile", "promote=2", "persistent=always", "ws", "autotune"):
        backend = resolve(f"reference:{option}")
        assert kernel(options=backend.options) != "hopper_gemm_kernel", option
        assert kernel(problem(torch.bfloat16), options=backend.options) != "hopper_gemm_kernel"
    assert kernel(options=resolve("reference:cudagraphs").options) == "hopper_gemm_kernel"


@pytest.mark.parametrize("case", ["fp8-rowwise", "fp8-narrow", "bf16-mm"])
def test_it_cross_compiles_for_sm90_with_a_loader_and_two_consumers(case):
    fp8 = case.startswith("fp8")
    p = {
        "fp8-rowwise": problem(out_dtype=torch.bfloat16),  # 128x256 tiles: two halves
        "fp8-narrow": problem(m=3072, n=3072, k=3072, out_dtype=torch.bfloat16),  # 128x128
        "bf16-mm": problem(torch.bfloat16, b=ROW),
    }[case]
    plan = plan_launch(p, H100, BackendOptions())
    element = torch.float8_e4m3fn if fp8 else torch.bfloat16
    scale = torch.empty(16) if fp8 else None
    args = {
        "a_ptr": torch.empty(16, dtype=element),
        "b_ptr": torch.empty(16, dtype=element),
        "c_ptr": torch.empty(16, dtype=torch.bfloat16),
        "a_scale_ptr": scale,
        "b_scale_ptr": scale,
        "M": 8192,
        "N": 8192,
        "K": 8192,
        "stride_am": 8192,
        "stride_bk": 1 if fp8 else 8192,
        "stride_bn": 8192 if fp8 else 1,
        "stride_cm": 8192,
        "stride_sam": 1,
        "stride_sbn": 1,
    }
    params = tuple(specialize(name, value) for name, value in args.items())
    request = LaunchRecord("gemm", p, params, plan).request(plan)
    asm = compiler.CROSS_COMPILER.compile(request, 90)
    ttgir, ptx = asm["ttgir"], asm["ptx"]
    assert "ttg.warp_specialize" in ttgir  # the loader and consumer partitions
    assert ttgir.count("ttng.async_tma_copy_global_to_local") == 3  # A's two halves, B
    assert "setmaxnreg" in ptx and "wgmma.mma_async" in ptx and "mbarrier" in ptx
    dots = re.findall(r"ttng\.warp_group_dot .*", ttgir)
    waits = re.findall(r"ttng\.warp_group_dot_wait .*", ttgir)
    assert dots and all("maxNumImpreciseAcc = 128" not in d for d in dots)
    halves = plan.flags()["BLOCK_N"] // plan.flags()["SUB_N"]
    assert ttgir.count("ttng.async_tma_copy_local_to_global") == 2 * halves  # per consumer
    if fp8:  # each K tile's product completes, then is promoted by an fp32 addition
        assert halves == (2 if case == "fp8-rowwise" else 1)
        assert len(dots) == 2 * halves  # a 64x128 product per half, in each consumer
        assert all("pendings = 0" in w for w in waits)
        assert len(re.findall(r"arith\.addf .*tensor<64x128xf32", ttgir)) == 2 * halves
    else:  # one chain per tile, one K tile's wgmma kept in flight
        assert any("pendings = 1" in w for w in waits)


def test_the_triton_artifact_shows_the_kernels_source_when_a_launch_used_it():
    hopper = plan_launch(problem(torch.bfloat16), H100, BackendOptions())
    triton_kernel = plan_launch(problem(torch.bfloat16, batch=2), H100, BackendOptions())
    with_it = compiler.triton_source([LaunchRecord("gemm", problem(), (), hopper)])
    without = compiler.triton_source([LaunchRecord("gemm", problem(), (), triton_kernel)])
    assert "launched hopper_gemm_kernel" in with_it and "def hopper_gemm_kernel(" in with_it
    assert "def gemm_kernel(" in with_it  # the Triton pieces stay listed
    assert "def hopper_gemm_kernel(" not in without and "def gemm_persistent_kernel(" in without
