"""fp8 promotion variants of the reference kernels (`reference:fp8_accum=tile|mma|pingpong`):
right in the interpreter on every K-tile count, and the sm90 code each one is meant to produce,
cross-compiled on the CPU. How fast each runs needs a GPU: `tools/tune_sm90.py fp8 --accum`."""

from __future__ import annotations

import re

import pytest
import torch

from gemmconf.backends import resolve
from gemmconf.backends.base import RunOptions

# These run the variants in the Triton interpreter on CPU tensors. On a GPU machine the
# reference backend runs compiled on the GPU and leaves CPU tensors to eager, so there they would
# check nothing of the variants (and torch 2.11's CPU eager rejects rowwise scales outright). On
# a GPU the variants are timed and checked by tools/tune_sm90.py fp8 --accum.
pytestmark = pytest.mark.skipif(
    torch.cuda.is_available(),
    reason="interpreter tests: on a GPU machine the reference leaves CPU tensors to eager",
)


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
