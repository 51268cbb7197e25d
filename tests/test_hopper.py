"""`hopper_gemm_kernel` (backend/hopper.py): the sm90 kernel with a producer warp and two consumer
warpgroups, in Gluon, for large bf16/fp16 GEMMs and large fp8 ones without fast accumulation.
Gluon does not run in the Triton interpreter, so on a CPU what can be checked is which problems
get it (the plan) and the sm90 code it compiles to; its numerics run on a GPU (BENCHMARKS.md,
"2026-11-26, 964a600": bitwise equal to the Triton kernels there)."""

from __future__ import annotations

import re
import subprocess

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


def test_fp8_tiles_are_128x128_with_as_many_stages_as_fit_shared_memory():
    def plan(**changes):
        return plan_launch(problem(**changes), H100, BackendOptions())

    def tile(**changes):
        flags = plan(**changes).flags()
        return flags["BLOCK_N"], flags["STAGES"]

    assert tile(out_dtype=torch.bfloat16) == (128, 6)  # 6 stages beside a 2-byte output
    assert tile(m=3072, n=3072, out_dtype=torch.float16) == (128, 6)
    assert tile(out_dtype=torch.float32) == (128, 5)  # a 4-byte output's buffers: 5 fit
    assert tile() == (128, 5)  # no output type known: what fits with 4 bytes
    assert plan(m=512, n=4096).grid == (128,)  # one program per tile under a wave
    bf16 = plan_launch(problem(torch.bfloat16, out_dtype=torch.bfloat16), H100, BackendOptions())
    assert (bf16.flags()["BLOCK_N"], bf16.flags()["STAGES"]) == (256, 3)
    for p in (problem(out_dtype=torch.float32), problem(torch.bfloat16)):
        config = plan_launch(p, H100, BackendOptions()).config
        ring = config.num_stages * (128 + config.block_n) * config.block_k * p.dtype.itemsize
        out_buffers = 2 * 64 * config.block_n * 4
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
    for option in ("persistent=always", "ws", "autotune"):
        backend = resolve(f"reference:{option}")
        assert kernel(options=backend.options) != "hopper_gemm_kernel", option
        assert kernel(problem(torch.bfloat16), options=backend.options) != "hopper_gemm_kernel"
    assert kernel(options=resolve("reference:cudagraphs").options) == "hopper_gemm_kernel"


CROSS_CASES = {
    "fp8-rowwise": problem(out_dtype=torch.bfloat16),
    "fp8-tensorwise": problem(scaling="tensorwise", m=3072, n=3072, k=3072),  # fp32 out
    "bf16-mm": problem(torch.bfloat16, b=ROW),
}


def sm90_code(case: str) -> dict[str, str]:
    """The hopper kernel's sm90 TTGIR and PTX for CROSS_CASES[case], as a launch would compile."""
    fp8 = case.startswith("fp8")
    p = CROSS_CASES[case]
    plan = plan_launch(p, H100, BackendOptions())
    element = torch.float8_e4m3fn if fp8 else torch.bfloat16
    scale = torch.empty(16) if fp8 else None
    args = {
        "a_ptr": torch.empty(16, dtype=element),
        "b_ptr": torch.empty(16, dtype=element),
        "c_ptr": torch.empty(16, dtype=p.out_dtype or torch.float32),
        "a_scale_ptr": scale,
        "b_scale_ptr": scale,
        "M": p.m,
        "N": p.n,
        "K": p.k,
        "stride_am": p.k,
        "stride_bk": 1 if fp8 else p.n,
        "stride_bn": p.k if fp8 else 1,
        "stride_cm": p.n,
        "stride_sam": 1,
        "stride_sbn": 1,
    }
    params = tuple(specialize(name, value) for name, value in args.items())
    request = LaunchRecord("gemm", p, params, plan).request(plan)
    return compiler.CROSS_COMPILER.compile(request, 90)


@pytest.mark.parametrize("case", list(CROSS_CASES))
def test_it_cross_compiles_for_sm90_with_a_loader_and_two_consumers(case):
    asm = sm90_code(case)
    ttgir, ptx = asm["ttgir"], asm["ptx"]
    assert "ttg.warp_specialize" in ttgir  # the loader and consumer partitions
    assert ttgir.count("ttng.async_tma_copy_global_to_local") == 3  # A's two halves, B
    assert "setmaxnreg" in ptx and "wgmma.mma_async" in ptx and "mbarrier" in ptx
    assert ttgir.count("ttng.async_tma_copy_local_to_global") == 2  # a store per consumer
    dots = re.findall(r"ttng\.warp_group_dot .*", ttgir)
    waits = re.findall(r"ttng\.warp_group_dot_wait .*", ttgir)
    assert dots and all("maxNumImpreciseAcc = 128" not in d for d in dots)
    # a K tile's wgmma group is left in flight while the previous one completes: pendings = 1
    assert any("pendings = 1" in w for w in waits) and any("pendings = 0" in w for w in waits)
    if case.startswith("fp8"):  # each product fresh (useC %false), then promoted by an fp32 add
        assert all(re.match(r"ttng\.warp_group_dot (%\S+, ){3}%false(_\d+)? \{", d) for d in dots)
        assert all("isAsync = true" in d and "tensor<64x128xf32" in d for d in dots)
        assert re.search(r"arith\.addf .*tensor<64x128xf32", ttgir)
    else:
        assert all("tensor<64x256xf32" in d for d in dots)


@pytest.mark.parametrize("case", ["fp8-rowwise", "fp8-tensorwise"])
def test_the_fp8_wgmmas_are_not_serialized_by_ptxas(case, tmp_path):
    """ptxas serializes every wgmma of a kernel (warning C7514) where an instruction reads the
    registers of a wgmma in flight: the promoted K loop alternates two product register sets
    so that none does (hopper.py's `_promoted_k_loop`; BENCHMARKS.md, "2026-11-27, 68e21b2")."""
    from triton import knobs

    ptx = tmp_path / "hopper.ptx"
    ptx.write_text(sm90_code(case)["ptx"])
    log = subprocess.run(
        [knobs.nvidia.ptxas.path, "-v", "--gpu-name=sm_90a", str(ptx), "-o", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        check=True,
    )
    report = log.stdout + log.stderr
    assert "Compiling entry function 'hopper_gemm_kernel'" in report
    assert "C7514" not in report, report


def test_the_triton_artifact_shows_the_kernels_source_when_a_launch_used_it():
    hopper = plan_launch(problem(torch.bfloat16), H100, BackendOptions())
    triton_kernel = plan_launch(problem(torch.bfloat16, batch=2), H100, BackendOptions())
    with_it = compiler.triton_source([LaunchRecord("gemm", problem(), (), hopper)])
    without = compiler.triton_source([LaunchRecord("gemm", problem(), (), triton_kernel)])
    assert "launched hopper_gemm_kernel" in with_it and "def hopper_gemm_kernel(" in with_it
    assert "def gemm_kernel(" in with_it  # the Triton pieces stay listed
    assert "def hopper_gemm_kernel(" not in without and "def gemm_persistent_kernel(" in without


def test_the_triton_artifact_lists_every_piece_of_the_hopper_kernel():
    """`HOPPER_PIECES` is what the "triton" artifact shows of backend/hopper.py: every
    @gluon.jit function of the file, in source order (`_issue_product` was missing from it)."""
    import ast
    import inspect

    from gemmconf_reference import hopper, kernels

    tree = ast.parse(inspect.getsource(hopper))
    jitted = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        if any(ast.unparse(d) == "gluon.jit" for d in node.decorator_list)
    ]
    assert len(jitted) >= 8
    assert [getattr(p, "fn", p).__name__ for p in kernels.HOPPER_PIECES] == jitted
