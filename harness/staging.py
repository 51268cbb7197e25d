"""Large copies between the host and a GPU, through one pinned staging buffer per process.

A copy from or to pageable host memory ran at about 1.4 GB/s on the H100 machines: a 3 GiB
input took 2.2 s to copy to the host and 2.5 s to compare with its host copy in 64 MiB pieces.
Through a 64 MiB pinned buffer, reused piece after piece, the copy took 0.30 s and the
comparison 0.35 s (`nvidia-h100-x1`, 2026-11-26, BENCHMARKS.md "Session 11"). The harness moves
its large tensors this way: the inputs drawn on the CPU to the item's device, the pieces of the
fp64 reference's inputs, and the input guard's host copies and comparisons (`integrity`).

Copies smaller than `DIRECT_BYTES`, copies that do not cross between a CPU and a CUDA device,
and copies of tensors that require grad go direct. Every function here returns only when its
copy is complete.
"""

from __future__ import annotations

import torch

__all__ = ["DIRECT_BYTES", "STAGE_BYTES", "equal_on_host", "to", "to_host"]

STAGE_BYTES = 64 << 20  # the pinned buffer
DIRECT_BYTES = 8 << 20  # below this, one pageable copy costs less than staging it

_stage: torch.Tensor | None = None


def _buffer() -> torch.Tensor:
    """The process's pinned staging buffer, made on first use (it needs CUDA)."""
    global _stage
    if _stage is None:
        _stage = torch.empty(STAGE_BYTES, dtype=torch.uint8, pin_memory=True)
    return _stage


def _bytes(contiguous: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor's bytes, as a 1-D uint8 view."""
    return contiguous.reshape(-1).view(torch.uint8)


def _staged(tensor: torch.Tensor, device: torch.device) -> bool:
    """Whether a copy goes through the buffer: one that crosses between the host and a GPU, is
    large, and keeps no autograd history (a tensor that requires grad goes direct, so that
    its copy stays differentiable, as `tensor.to` makes it)."""
    crosses = {tensor.device.type, device.type} == {"cpu", "cuda"}
    large = tensor.numel() * tensor.element_size() >= DIRECT_BYTES
    return crosses and large and not tensor.requires_grad


def _copy(source: torch.Tensor, target: torch.Tensor) -> None:
    """Copy bytes to bytes (1-D uint8, one on the host, one on the GPU) through the buffer."""
    stage = _buffer()
    for start in range(0, source.numel(), STAGE_BYTES):
        end = min(start + STAGE_BYTES, source.numel())
        stage[: end - start].copy_(source[start:end])
        target[start:end].copy_(stage[: end - start])  # synchronous: the buffer is reused next


def to(tensor: torch.Tensor, device: str | torch.device) -> torch.Tensor:
    """`tensor.to(device)`: `tensor` itself where it is already there, else a copy (contiguous
    where it crosses between the host and a GPU through the buffer)."""
    device = torch.device(device)
    if not _staged(tensor, device):
        return tensor.to(device)
    source = tensor.contiguous()
    target = torch.empty(source.shape, dtype=source.dtype, device=device)
    _copy(_bytes(source), _bytes(target))
    return target


def to_host(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous copy of `tensor` on the host, in storage of its own."""
    if not _staged(tensor, torch.device("cpu")):
        return tensor.to("cpu", copy=True).contiguous()
    source = tensor.contiguous()
    target = torch.empty(source.shape, dtype=source.dtype)
    _copy(_bytes(source), _bytes(target))
    return target


def equal_on_host(device_bytes: torch.Tensor, host_bytes: torch.Tensor) -> bool:
    """Whether 1-D uint8 tensors of one size, one on a GPU and one on the host, hold the same
    bytes: the GPU's are brought over a piece at a time and compared on the host."""
    if device_bytes.numel() != host_bytes.numel():
        return False
    if not _staged(device_bytes, torch.device("cpu")):
        return torch.equal(device_bytes.cpu(), host_bytes)
    stage = _buffer()
    for start in range(0, device_bytes.numel(), STAGE_BYTES):
        end = min(start + STAGE_BYTES, device_bytes.numel())
        piece = stage[: end - start]
        piece.copy_(device_bytes[start:end])
        if not torch.equal(piece, host_bytes[start:end]):
            return False
    return True
