"""Large copies between the host and a GPU, through one pinned staging buffer per process.

A copy from or to pageable host memory ran at about 1.4 GB/s on the H100 machines: a 3 GiB
input took 2.2 s to copy to the host and 2.5 s to compare with its host copy in 64 MiB pieces.
Through a 64 MiB pinned buffer, reused piece after piece, the copy took 0.30 s and the
comparison 0.35 s (`nvidia-h100-x1`, BENCHMARKS.md "2026-11-26, aa5068f"). The harness moves
its large tensors this way: the inputs drawn on the CPU to the item's device, the pieces of the
fp64 reference's inputs, and the input guard's host copies and comparisons (`integrity`).

Copies smaller than `DIRECT_BYTES`, copies that do not cross between a CPU and a CUDA device,
and copies of tensors that require grad go direct. Every function here returns only when its
copy is complete.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

__all__ = [
    "DIRECT_BYTES",
    "STAGE_BYTES",
    "WHOLE_ELEMENT",
    "equal_bytes",
    "equal_on_host",
    "to",
    "to_host",
    "words",
]

STAGE_BYTES = 64 << 20  # the pinned buffer
DIRECT_BYTES = 8 << 20  # below this, one pageable copy costs less than staging it

_stage: torch.Tensor | None = None
# the integer of each byte width: bytes read as whole elements (`words`, integrity's poison check)
WHOLE_ELEMENT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


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


def _staged_pieces(source: torch.Tensor) -> Iterator[tuple[slice, torch.Tensor]]:
    """Each piece of `source`'s bytes (1-D uint8) copied into the buffer: (where it sits in
    `source`, its copy in the buffer). A piece must be used before the next is asked for: the
    copies are synchronous and the buffer is reused."""
    stage = _buffer()
    for start in range(0, source.numel(), STAGE_BYTES):
        end = min(start + STAGE_BYTES, source.numel())
        piece = stage[: end - start]
        piece.copy_(source[start:end])
        yield slice(start, end), piece


def _through_buffer(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A contiguous copy of `tensor` on `device`, piece by piece through the buffer."""
    source = tensor.contiguous()
    target = torch.empty(source.shape, dtype=source.dtype, device=device)
    target_bytes = _bytes(target)
    for where, piece in _staged_pieces(_bytes(source)):
        target_bytes[where].copy_(piece)
    return target


def to(tensor: torch.Tensor, device: str | torch.device) -> torch.Tensor:
    """`tensor.to(device)`: `tensor` itself where it is already there, else a copy (contiguous
    where it crosses between the host and a GPU through the buffer)."""
    device = torch.device(device)
    return _through_buffer(tensor, device) if _staged(tensor, device) else tensor.to(device)


def to_host(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous copy of `tensor` on the host, in storage of its own."""
    host = torch.device("cpu")
    if _staged(tensor, host):
        return _through_buffer(tensor, host)
    return tensor.to(host, copy=True).contiguous()


def equal_on_host(device_bytes: torch.Tensor, host_bytes: torch.Tensor) -> bool:
    """Whether 1-D uint8 tensors of one size, one on a GPU and one on the host, hold the same
    bytes: the GPU's are brought over a piece at a time and compared on the host as words
    (`equal_bytes`)."""
    if device_bytes.numel() != host_bytes.numel():
        return False
    if not _staged(device_bytes, torch.device("cpu")):
        return equal_bytes(device_bytes.cpu(), host_bytes)
    return all(
        equal_bytes(piece, host_bytes[where]) for where, piece in _staged_pieces(device_bytes)
    )


def equal_bytes(first: torch.Tensor, second: torch.Tensor) -> bool:
    """Whether two 1-D uint8 tensors on one device hold the same bytes, compared as the widest
    integers that divide their size and both addresses (64 MiB in 8 ms as 8-byte words against
    47 ms as bytes, one thread of the dev CPU, 2026-11-30)."""
    if first.numel() != second.numel():
        return False
    return torch.equal(*words(first, second))


def words(*raw: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """1-D uint8 tensors of one size, each seen as the widest integers that divide that size
    and every one's address (copying 8-byte words took two thirds of the time bytes did)."""
    for size in (8, 4, 2):
        if raw[0].numel() % size == 0 and all(t.data_ptr() % size == 0 for t in raw):
            return tuple(t.view(WHOLE_ELEMENT[size]) for t in raw)
    return raw
