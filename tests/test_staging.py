"""Tests of harness/staging.py: copies through the pinned staging buffer, piece by piece.

Pinned memory needs CUDA, so on a CPU the buffer is an ordinary host tensor and the copies run
between host tensors: the piece loop (full pieces, a short last one, dtypes of every size, views
that are not contiguous) is what these check; the GPU runs measured in BENCHMARKS.md
("2026-11-26, aa5068f") use the same loop.
"""

from __future__ import annotations

import pytest
import torch

from gemmconf import staging

STAGE = 10  # bytes per piece: every tensor below takes several, and a short last one


@pytest.fixture
def staged_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(staging, "STAGE_BYTES", STAGE)
    monkeypatch.setattr(staging, "_buffer", lambda: torch.empty(STAGE, dtype=torch.uint8))
    monkeypatch.setattr(staging, "_staged", lambda tensor, device: True)


def _values() -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(3)
    base = torch.randn(7, 9, generator=gen)
    return [
        base,
        base.t(),  # not contiguous: copied row-major
        base.to(torch.float16)[:, 1:6],
        base > 0,
        torch.complex(base, -base)[2:],
        torch.randint(-9, 9, (3, 5, 2), generator=gen, dtype=torch.int64),
    ]


@pytest.mark.parametrize("index", range(6))
@pytest.mark.usefixtures("staged_on_cpu")
def test_a_staged_copy_has_the_values_row_major_in_storage_of_its_own(index: int) -> None:
    value = _values()[index]
    for copy in (staging.to(value, "cpu"), staging.to_host(value)):
        assert copy.is_contiguous() and copy.dtype == value.dtype
        assert torch.equal(copy, value)
        assert copy.untyped_storage().data_ptr() != value.untyped_storage().data_ptr()


@pytest.mark.usefixtures("staged_on_cpu")
def test_a_staged_comparison_finds_a_difference_in_any_piece() -> None:
    host = torch.arange(95, dtype=torch.uint8)
    assert staging.equal_on_host(host.clone(), host)
    for position in (0, 9, 10, 94):  # first piece, its last byte, the next, the short last one
        changed = host.clone()
        changed[position] += 1
        assert not staging.equal_on_host(changed, host)
    assert not staging.equal_on_host(host[:90].clone(), host)  # sizes differ


def test_copies_that_do_not_cross_to_a_gpu_go_direct() -> None:
    value = torch.randn(4, 4)
    assert staging.to(value, "cpu") is value  # tensor.to's rule: already there
    assert not staging._staged(
        torch.empty(staging.DIRECT_BYTES, dtype=torch.uint8), torch.device("cpu")
    )


def test_a_tensor_that_requires_grad_keeps_its_autograd_history() -> None:
    """A backward item's fp64 reference differentiates through the copy of its inputs."""
    leaf = torch.randn(staging.DIRECT_BYTES // 4, requires_grad=True)
    assert not staging._staged(leaf, torch.device("cuda"))
    assert staging._staged(leaf.detach(), torch.device("cuda"))
