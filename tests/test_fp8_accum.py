"""fp8 promotion variants of the reference kernels (`reference:fp8_accum=tile|mma|pingpong`):
right in the interpreter on every K-tile count, and the sm90 code each one is meant to produce,
cross-compiled on the CPU. How fast each runs needs a GPU: `tools/tune_sm90.py fp8 --accum`."""

from __future__ import annotations

import re

import pytest
import torch

from gemmconf.backends import resolve
from gemmconf.backends.base import RunOptions


def scaled(a, b, scale_a, scale_b):
    return torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16)


def rowwise(m: int, n: int, k: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(m * n + k)
    a = torch.randn(m, k, generator=generator).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, generator=generator).to(torch.float8_e4m3fn).t()
    return [a, b, torch.rand(m, 1, generator=generator) + 0.5, torch.rand(1, n) + 0.5]


@pytest.fixture(scope="module", params=["tile", "mma", "pingpong"])
def compiled(request):
    backend = resolve(f"reference:fp8_accum={request.param}")
    backend.configure(RunOptions(target_arch="sm90"))
    example = rowwise(130, 200, 384)
    function = backend.compile(scaled, example, dynamic=False)
    return request.param, function, example


@pytest.mark.parametrize("k", [128, 384, 512, 200])  # 1, 3 (odd for pingpong), 4 K tiles, ragged
def test_every_variant_matches_eager(compiled, k):
    _, function, _ = compiled
    args = rowwise(130, 200, k)
    expected = scaled(*args).float()
    error = (function(*args).float() - expected).norm() / expected.norm()
    assert error < 1e-3  # a few bf16 roundings apart; a K tile lost or doubled is ~0.3-1


def test_sm90_code_of_each_variant(compiled):
    mode, _, example = compiled
    backend = resolve(f"reference:fp8_accum={mode}")
    backend.configure(RunOptions(target_arch="sm90"))
    function = backend.compile(scaled, example, dynamic=False)
    function(*example)  # one launch: one kernel in the artifacts
    ttgir = function.artifacts()["ttgir"]
    dots = re.findall(r"ttng\.warp_group_dot .*", ttgir)
    imprecise = [re.search(r"maxNumImpreciseAcc = (\d+)", d).group(1) for d in dots]
    if mode == "mma":  # promotion inside the MMA lowering, every 128-wide K tile
        assert imprecise == ["128"]
    elif mode == "pingpong":  # two independent MMA chains per K step
        assert len(dots) == 2 and "128" not in imprecise
    else:
        assert len(dots) == 1 and "128" not in imprecise
    assert "FP8_ACCUM=" + mode in ttgir  # the artifact header names the variant


def test_unknown_variant_is_refused():
    with pytest.raises(ValueError, match=r"fp8_accum=tile\|mma\|pingpong"):
        resolve("reference:fp8_accum=fast")


def test_warp_specialized_persistent_kernel_is_right_and_asks_triton_for_partitions():
    # `reference:ws`: the persistent kernel's tile loop carries warp_specialize; the sm90 TTGIR
    # then holds Triton's warp-specialized partitions, and the interpreter's result is unchanged
    args = rowwise(300, 200, 256)
    expected = scaled(*args).float()
    found = {}
    for option in ("persistent=always", "persistent=always,ws"):
        backend = resolve(f"reference:{option}")
        backend.configure(RunOptions(target_arch="sm90"))
        function = backend.compile(scaled, args, dynamic=False)
        out = function(*args).float()
        assert (out - expected).norm() / expected.norm() < 1e-3
        found[option] = "ttg.warp_specialize" in function.artifacts()["ttgir"]
    assert found == {"persistent=always": False, "persistent=always,ws": True}


# `hopper_fp8_kernel` (backend/hopper_fp8.py): sm90 fp8 GEMMs with a producer warp and two
# consumer warpgroups, in Gluon. Gluon does not run in the interpreter, so on a CPU its plan and
# its sm90 code are what can be checked; its numerics run on a GPU (BENCHMARKS.md, "Session 12").


def _fp8_problem(**changes):
    from gemmconf_reference.launcher import OperandLayout, Problem

    fields = dict(
        dtype=torch.float8_e4m3fn,
        batch=1,
        m=8192,
        n=8192,
        k=8192,
        a=OperandLayout("row", True),
        b=OperandLayout("col", True),
        scaling="rowwise",
        int_acc=False,
        input_precision="ieee",
        fast_accum=False,
        epilogue=("none",) * 4,
        index_64=False,
    )
    return Problem(**{**fields, **changes})


def test_large_fp8_gemms_on_sm90_run_the_warp_specialized_kernel_and_others_do_not():
    from gemmconf_reference.launcher import BackendOptions, OperandLayout, plan_launch
    from gemmconf_reference.target import Target

    h100, b200 = Target("sm90", 90, False, 132), Target("sm100", 100, False, 148)
    cpu = Target("sm90", 90, True, 4)

    def kernel(problem=None, target=h100, options=None):
        return plan_launch(problem or _fp8_problem(), target, options or BackendOptions()).kernel

    assert kernel() == "hopper_fp8_kernel"
    assert kernel(_fp8_problem(scaling="tensorwise", m=4096, n=8192, k=4096)) == "hopper_fp8_kernel"
    assert kernel(_fp8_problem(dtype=torch.float8_e5m2)) == "hopper_fp8_kernel"
    plan = plan_launch(_fp8_problem(), h100, BackendOptions())
    assert plan.grid == (132,) and plan.flags()["NUM_PROGRAMS"] == 132 and plan.tma
    not_here = {
        "use_fast_accum": _fp8_problem(fast_accum=True),
        "blockwise": _fp8_problem(scaling="blockwise"),
        "a batch": _fp8_problem(batch=2),
        "a fused bias": _fp8_problem(epilogue=("axpby", "none", "none", "none")),
        "a medium problem": _fp8_problem(m=2048, n=2048),
        "N not a multiple of 16": _fp8_problem(n=8200),
        "A not read by TMA": _fp8_problem(a=OperandLayout("row", False)),
        "B row-major": _fp8_problem(b=OperandLayout("row", True)),
        "bf16": _fp8_problem(dtype=torch.bfloat16, scaling="none", fast_accum=True),
    }
    for why, problem in not_here.items():
        assert kernel(problem) != "hopper_fp8_kernel", why
    assert kernel(target=b200) != "hopper_fp8_kernel"
    assert kernel(target=cpu) != "hopper_fp8_kernel"  # the interpreter cannot run Gluon
    for option in ("fp8_accum=tile", "promote=2", "persistent=always", "ws", "autotune"):
        backend = resolve(f"reference:{option}")
        assert kernel(options=backend.options) != "hopper_fp8_kernel", option


def test_the_warp_specialized_kernel_cross_compiles_for_sm90_with_its_partitions():
    from gemmconf_reference import compiler
    from gemmconf_reference.crosscompile import specialize
    from gemmconf_reference.launcher import BackendOptions, LaunchRecord, plan_launch
    from gemmconf_reference.target import Target

    problem = _fp8_problem(m=8192, n=4096, k=4096)
    plan = plan_launch(problem, Target("sm90", 90, False, 132), BackendOptions())
    tensors = {
        "a_ptr": torch.empty(16, dtype=torch.float8_e4m3fn),
        "b_ptr": torch.empty(16, dtype=torch.float8_e4m3fn),
        "c_ptr": torch.empty(16, dtype=torch.bfloat16),
        "a_scale_ptr": torch.empty(16),
        "b_scale_ptr": torch.empty(16),
    }
    ints = {"M": 8192, "N": 4096, "K": 4096, "stride_am": 4096, "stride_bn": 4096}
    ints |= {"stride_cm": 4096, "stride_sam": 1, "stride_sbn": 1}
    params = tuple(specialize(name, value) for name, value in {**tensors, **ints}.items())
    record = LaunchRecord("scaled_mm", problem, params, plan)
    asm = compiler.CROSS_COMPILER.compile(record.request(plan), 90)
    ttgir, ptx = asm["ttgir"], asm["ptx"]
    assert "ttg.warp_specialize" in ttgir  # the loader and consumer partitions
    assert ttgir.count("ttng.async_tma_copy_global_to_local") == 3  # A's two halves and B
    dots = re.findall(r"ttng\.warp_group_dot .*", ttgir)
    # one K tile's product per MMA chain, promoted by an addition in fp32: no in-MMA promotion
    assert dots and all("maxNumImpreciseAcc = 128" not in d for d in dots)
    assert "setmaxnreg" in ptx and "wgmma.mma_async" in ptx
