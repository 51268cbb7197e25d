"""Repro: eager blockwise-scaled fp8 GEMMs returning inf (found by the suite on an H200).

    python tools/repro_eager_blockwise.py

For each shape and output dtype, runs `torch._scaled_mm` with DeepSeek-style blockwise scales
(1x128 for a, 128x128 for b, both column-major as cuBLASLt wants) and compares it with the same
GEMM in fp64 on the dequantized operands. Prints one line per case: how many outputs are NaN/Inf
although the fp64 result is small and finite, and the largest finite error. Needs an sm90 GPU.
"""

from __future__ import annotations

import torch

SHAPES = [
    (64, 256, 256),
    (64, 128, 256),
    (64, 256, 128),
    (128, 256, 256),
    (100, 128, 384),
    (1, 128, 128),
    (300, 384, 512),
    (64, 512, 256),
    (256, 256, 256),
]
OUT_DTYPES = [torch.bfloat16, torch.float16, torch.float32]


def blockwise_operands(
    m: int, n: int, k: int, seed: int = 0
) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """(a, b, scale_a, scale_b) for `torch._scaled_mm` with 1x128 / 128x128 scales, and the
    product of the dequantized operands in fp64."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda", generator=gen).to(torch.float8_e4m3fn).t()  # col-major
    scale_a = (torch.rand(k // 128, m, device="cuda", generator=gen) + 0.5).t()  # (M, K/128)
    scale_b = (torch.rand(n // 128, k // 128, device="cuda", generator=gen) + 0.5).t()
    a64 = a.double() * scale_a.double().repeat_interleave(128, dim=1)
    b64 = b.double() * scale_b.double().repeat_interleave(128, 0).repeat_interleave(128, 1)
    return (a, b, scale_a, scale_b), a64 @ b64


def case(m: int, n: int, k: int, out_dtype: torch.dtype, seed: int = 0) -> tuple[int, float]:
    operands, ref = blockwise_operands(m, n, k, seed)
    out = torch._scaled_mm(*operands, out_dtype=out_dtype)
    wrong = int((~torch.isfinite(out) & torch.isfinite(ref)).sum())
    finite = torch.isfinite(out)
    err = float((out.double() - ref).abs()[finite].max()) if finite.any() else float("nan")
    return wrong, err


def main() -> None:
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    for m, n, k in SHAPES:
        for out_dtype in OUT_DTYPES:
            wrong, err = case(m, n, k, out_dtype)
            name = str(out_dtype).replace("torch.", "")
            flag = "  <-- NaN/Inf where fp64 is finite" if wrong else ""
            print(
                f"M={m:4d} N={n:4d} K={k:4d} out={name:8s} nonfinite={wrong:6d} "
                f"max_err={err:.3g}{flag}"
            )


if __name__ == "__main__":
    main()
