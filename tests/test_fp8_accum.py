"""fp8 promotion in the reference kernels (fp8 without use_fast_accum): the dense kernels promote
inside the MMA lowering (`max_num_imprecise_acc`), the grouped kernel adds each K tile's fresh
product; right in the interpreter on every K-tile count, and the sm90 code each is meant to
produce, cross-compiled on the CPU. The variants that measured slower (`promote=N`,
`fp8_accum=tile|pingpong`) are retired and refused with the reason."""

from __future__ import annotations

import re

import pytest
import torch

from gemmconf.backends import resolve
from gemmconf.backends.base import RunOptions

# These run the kernels in the Triton interpreter on CPU tensors. On a GPU machine the reference
# backend runs compiled on the GPU and leaves CPU tensors to eager, so there they would check
# nothing of the kernels (and torch 2.11's CPU eager rejects rowwise scales outright).
pytestmark = pytest.mark.skipif(
    torch.cuda.is_available(),
    reason="interpreter tests: on a GPU machine the reference leaves CPU tensors to eager",
)


def scaled(a, b, scale_a, scale_b):
    return torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16)


def grouped(a, b, scale_a, scale_b, offs):
    return torch._scaled_grouped_mm(a, b, scale_a, scale_b, offs=offs, out_dtype=torch.bfloat16)


def grouped_by_groups(a, b, scale_a, scale_b, offs):
    """What `grouped` computes, as eager's dense _scaled_mm per group (CPU eager has no
    _scaled_grouped_mm)."""
    starts = [0, *offs.tolist()[:-1]]
    return torch.cat(
        [
            scaled(a[s:e], b[g], scale_a[s:e, None], scale_b[g][None, :])
            for g, (s, e) in enumerate(zip(starts, offs.tolist(), strict=True))
        ]
    )


def rowwise(m: int, n: int, k: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(m * n + k)
    a = torch.randn(m, k, generator=generator).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, generator=generator).to(torch.float8_e4m3fn).t()
    return [a, b, torch.rand(m, 1, generator=generator) + 0.5, torch.rand(1, n) + 0.5]


def grouped_rowwise(k: int) -> list[torch.Tensor]:
    """Three groups of rows (40, 24 and 64) of a 2-D A against a 3-D B, scales per row."""
    generator = torch.Generator().manual_seed(k)
    a = torch.randn(128, k, generator=generator).to(torch.float8_e4m3fn)
    b = torch.randn(3, 96, k, generator=generator).to(torch.float8_e4m3fn).transpose(-2, -1)
    offs = torch.tensor([40, 64, 128], dtype=torch.int32)
    return [a, b, torch.rand(128, generator=generator) + 0.5, torch.rand(3, 96) + 0.5, offs]


PROGRAMS = {"dense": (scaled, rowwise(130, 200, 384)), "grouped": (grouped, grouped_rowwise(384))}


@pytest.fixture(scope="module", params=list(PROGRAMS))
def compiled(request):
    fn, example = PROGRAMS[request.param]
    backend = resolve("reference")
    backend.configure(RunOptions(target_arch="sm90"))
    return request.param, backend.compile(fn, example, dynamic=False)


@pytest.mark.parametrize("k", [128, 384, 512, 208])  # 1, 3, 4 K tiles, ragged (16-aligned)
def test_the_promotion_matches_eager(compiled, k):
    form, function = compiled
    args = rowwise(130, 200, k) if form == "dense" else grouped_rowwise(k)
    expected = (scaled if form == "dense" else grouped_by_groups)(*args).float()
    error = (function(*args).float() - expected).norm() / expected.norm()
    assert error < 1e-3  # a few bf16 roundings apart; a K tile lost or doubled is ~0.3-1


@pytest.mark.parametrize("form", list(PROGRAMS))
def test_sm90_code_of_each_promotion(form):
    fn, example = PROGRAMS[form]
    backend = resolve("reference")
    backend.configure(RunOptions(target_arch="sm90"))
    function = backend.compile(fn, example, dynamic=False)
    function(*example)  # one launch: one kernel in the artifacts
    ttgir = function.artifacts()["ttgir"]
    dots = re.findall(r"ttng\.warp_group_dot .*", ttgir)
    imprecise = [re.search(r"maxNumImpreciseAcc = (\d+)", d).group(1) for d in dots]
    if form == "dense":  # promotion inside the MMA lowering, every 128-wide K tile
        assert imprecise == ["128"]
    else:  # each K tile's product fresh, added into the fp32 accumulator
        assert len(dots) == 1 and "128" not in imprecise


@pytest.mark.parametrize(
    ("option", "why"),
    [("promote=4", "1.1e-3"), ("fp8_accum=tile", "'tile' measured"), ("fp8_accum=mma", "one")],
)
def test_retired_variants_are_refused_with_the_reason(option, why):
    with pytest.raises(ValueError, match=rf"reference option '{option}' is retired: .*{why}"):
        resolve(f"reference:{option}")


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
