"""Block-scaled ("microscaling") formats: MX (OCP MXFP8) and NVFP4, quantized and laid out as
`F.scaled_mm` takes them.

- MX: blocks of 32 consecutive K elements share one power-of-two scale, stored as e8m0 (the
  exponent alone, bias 127). The scale is 2**(floor(log2(amax)) - emax), emax being the
  element format's largest exponent (8 for e4m3fn, 15 for e5m2), so the block's largest value
  lands in the format's top binade; elements are the block divided by it, rounded to fp8 with
  saturation.
- NVFP4: blocks of 16 share an e4m3fn scale, elements are fp4 e2m1 (0, 0.5, 1, 1.5, 2, 3, 4, 6
  and their negatives), two to a byte (`torch.float4_e2m1fn_x2`, element 2j in the low nibble).
  With a global scale (a second, per-tensor fp32 level) the block scales are amax / 6 divided by
  the global scale amax(tensor) / (448 * 6), which keeps them inside e4m3's range.
- Layouts: scales are (rows, K blocks) for an operand read as (rows, K): a is (M, K), b is
  (N, K) (its transpose, the column-major (K, N) matrix eager takes). `swizzle` turns them into
  cuBLAS's block-scaling layout (`SwizzleType.SWIZZLE_32_4_4`): rows padded to 128, K blocks to
  4, each 128 x 4 tile stored as 512 bytes with row r, block c at (r % 32) * 16 + (r // 32) * 4
  + c, tiles ordered along K blocks first.

Every quantizer returns the exactly dequantized values in fp64, from which the oracle's
reference is computed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

FP4 = getattr(torch, "float4_e2m1fn_x2", None)
E8M0 = getattr(torch, "float8_e8m0fnu", None)
MX_BLOCK = 32
NVFP4_BLOCK = 16
FP4_MAX = 6.0
E4M3_MAX = 448.0
_FP4_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)
_EMAX = {torch.float8_e4m3fn: 8, torch.float8_e5m2: 15}


@dataclass(frozen=True)
class BlockScaled:
    """One operand in a block-scaled format: what `F.scaled_mm` takes, and the exact values."""

    values: torch.Tensor  # fp8 (rows, K), or fp4x2 (rows, K / 2)
    scale: torch.Tensor  # (rows, K blocks), e8m0 (MX) or e4m3fn (NVFP4), not yet swizzled
    global_scale: torch.Tensor | None  # NVFP4's per-tensor fp32 scale, if any
    dequantized: torch.Tensor  # fp64 (rows, K): values * scale (* global_scale), exactly


def _blocks(x: torch.Tensor, block: int) -> torch.Tensor:
    """(rows, K) -> (rows, K blocks, block), zero-padding K to a multiple of the block."""
    rows, k = x.shape
    padded = -(-k // block) * block
    if padded != k:
        x = torch.nn.functional.pad(x, (0, padded - k))
    return x.reshape(rows, padded // block, block)


def quantize_mx(x: torch.Tensor, dtype: torch.dtype) -> BlockScaled:
    """(rows, K) float values as MX: fp8 `dtype` elements with an e8m0 scale per 32 along K."""
    rows, k = x.shape
    blocks = _blocks(x.double(), MX_BLOCK)
    amax = blocks.abs().amax(-1)
    exponent = torch.where(amax > 0, torch.floor(torch.log2(amax)), torch.zeros_like(amax))
    exponent = (exponent - _EMAX[dtype]).clamp(-127, 127)
    scale = torch.exp2(exponent)
    top = torch.finfo(dtype).max
    q = (blocks / scale[..., None]).clamp(-top, top).to(dtype)
    deq = q.double() * scale[..., None]
    e8m0 = (exponent + 127).to(torch.uint8).view(E8M0)
    padded = blocks.shape[1] * MX_BLOCK
    return BlockScaled(
        q.reshape(rows, padded)[:, :k].contiguous(), e8m0, None, deq.reshape(rows, padded)[:, :k]
    )


def to_fp4(x: torch.Tensor) -> torch.Tensor:
    """Nearest e2m1 codes (ties to even, saturating at 6) of fp64 values, as uint8 0..15."""
    magnitude = x.abs().clamp(max=FP4_MAX)
    distance = (magnitude[..., None] - _FP4_VALUES).abs()
    distance = distance + torch.arange(8, dtype=torch.float64) % 2 * 1e-9  # ties: even codes
    code = distance.argmin(-1).to(torch.uint8)
    return code | ((x < 0) & (code != 0)).to(torch.uint8) << 3


def fp4_values(codes: torch.Tensor) -> torch.Tensor:
    """fp64 values of e2m1 codes (uint8 0..15)."""
    magnitude = _FP4_VALUES[(codes & 7).long()]
    return torch.where((codes & 8) != 0, -magnitude, magnitude)


def pack_fp4(codes: torch.Tensor) -> torch.Tensor:
    """(rows, K) e2m1 codes -> (rows, K / 2) `float4_e2m1fn_x2`, element 2j in the low nibble."""
    pairs = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 2, 2)
    return (pairs[..., 0] | (pairs[..., 1] << 4)).contiguous().view(FP4)


def quantize_nvfp4(x: torch.Tensor, *, global_scale: bool) -> BlockScaled:
    """(rows, K) values as NVFP4: fp4 elements, an e4m3 scale per 16 along K, optionally a
    per-tensor fp32 global scale. K must be even (two elements a byte)."""
    rows, k = x.shape
    assert k % 2 == 0, "NVFP4 packs two values a byte: K must be even"
    x = x.double()
    glob = None
    divisor = torch.tensor(1.0, dtype=torch.float64)
    if global_scale:
        amax = x.abs().amax() if x.numel() else torch.tensor(0.0, dtype=torch.float64)
        divisor = torch.where(amax > 0, amax / (E4M3_MAX * FP4_MAX), torch.ones_like(amax))
        glob = divisor.float()
        divisor = glob.double()  # the fp32 value the kernel multiplies by
    blocks = _blocks(x, NVFP4_BLOCK)
    block_scale = (blocks.abs().amax(-1) / FP4_MAX / divisor).clamp(max=E4M3_MAX)
    e4m3 = block_scale.to(torch.float8_e4m3fn)
    scale = e4m3.double() * divisor
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    codes = to_fp4(blocks / safe[..., None])
    deq = fp4_values(codes) * scale[..., None]
    padded = blocks.shape[1] * NVFP4_BLOCK
    codes = codes.reshape(rows, padded)[:, :k]
    return BlockScaled(pack_fp4(codes), e4m3, glob, deq.reshape(rows, padded)[:, :k])


def swizzle(scale: torch.Tensor) -> torch.Tensor:
    """(rows, K blocks) scales -> cuBLAS's 1-D block-scaling layout (module docstring)."""
    rows, cols = scale.shape
    row_tiles, col_tiles = -(-rows // 128), -(-cols // 4)
    raw = scale.view(torch.uint8)
    padded = torch.zeros(row_tiles * 128, col_tiles * 4, dtype=torch.uint8)
    padded[:rows, :cols] = raw
    # (row tile, 4 row groups of 32, 32, col tile, 4) -> (row tile, col tile, 32, 4 groups, 4)
    tiles = padded.reshape(row_tiles, 4, 32, col_tiles, 4).permute(0, 3, 2, 1, 4)
    return tiles.contiguous().reshape(-1).view(scale.dtype)


def unswizzle(flat: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """The inverse of `swizzle`: (rows, K blocks) from the 1-D layout."""
    row_tiles, col_tiles = -(-rows // 128), -(-cols // 4)
    tiles = flat.view(torch.uint8).reshape(row_tiles, col_tiles, 32, 4, 4)
    padded = tiles.permute(0, 3, 2, 1, 4).reshape(row_tiles * 128, col_tiles * 4)
    return padded[:rows, :cols].contiguous().view(flat.dtype)
