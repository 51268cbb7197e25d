"""Sweep the reference backend's tile configs on the anchor shapes (an sm90 GPU).

    python tools/tune_sm90.py [bf16|fp16|fp8 ...]
    python tools/tune_sm90.py --decode

For each recipe at 8192^3 and each candidate (tile config x persistent on, off or
warp-specialized), patches the sm90 "large" row of backend/configs.TABLE, checks the result
against cuBLAS (relative Frobenius error), and times the compiled call with do_bench next to
cuBLAS on the same inputs. Prints one line per candidate, then the best three: the figures that
chose the table's rows (BENCHMARKS.md). fp8 first times the default backend, whose large GEMMs
run `hopper_gemm_kernel` (configs.HOPPER), then sweeps the Triton kernel with the persistent
loop forced.

`--decode` times the Llama-3 8B decode projections (M = 16: qkv, o, gate_up, down) in bf16
(`F.linear`) and fp8 rowwise (`_scaled_mm`), in device time (gemmconf.bench's `kernel` mode:
median of 100 calls issued while the GPU is busy, L2 flushed), next to cuBLAS: the tile the table
gives (the "small" or "skinny" row), then each of `DECODE_TILES` (64-row tiles, 64 or 128
wide, 3 to 8 pipeline stages; BLOCK_K stays the table's). About two minutes on an H100.
"""

from __future__ import annotations

import sys

import torch
from triton.testing import do_bench

from gemmconf.backends import resolve
from gemmconf_reference import configs

M = N = K = 8192
FLOPS = 2.0 * M * N * K

CANDIDATES = {
    "16bit": [
        configs.TileConfig(128, 256, 64, 8, 3),
        configs.TileConfig(128, 256, 64, 8, 4),
        configs.TileConfig(256, 128, 64, 8, 3),
        configs.TileConfig(128, 128, 64, 8, 4),
        configs.TileConfig(128, 256, 64, 8, 3, group_m=16),
    ],
    "fp8": [
        configs.TileConfig(128, 256, 128, 8, 3),
        configs.TileConfig(128, 256, 128, 8, 4),
        configs.TileConfig(256, 128, 128, 8, 3),
        configs.TileConfig(128, 128, 128, 8, 4),
        configs.TileConfig(128, 128, 128, 8, 3),
        configs.TileConfig(128, 256, 64, 8, 4),
        configs.TileConfig(128, 256, 128, 8, 3, group_m=16),
    ],
}


def scaled_mm(a, b, scale_a, scale_b):
    return torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16)


def fp8_rowwise(x: torch.Tensor, w: torch.Tensor, gen: torch.Generator):
    """`scaled_mm`'s arguments for x (M, K) and w (N, K): e4m3 operands, w column-major as
    _scaled_mm wants it, and rowwise scales in [0.5, 1.5)."""
    m, n = x.shape[0], w.shape[0]
    sa = torch.rand(m, 1, device="cuda", generator=gen) + 0.5
    sb = torch.rand(1, n, device="cuda", generator=gen) + 0.5
    return x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn).t(), sa, sb


def problem(recipe: str):
    gen = torch.Generator(device="cuda").manual_seed(0)
    if recipe in ("bf16", "fp16"):
        dtype = torch.bfloat16 if recipe == "bf16" else torch.float16
        a = torch.randn(M, K, device="cuda", generator=gen).to(dtype)
        b = torch.randn(K, N, device="cuda", generator=gen).to(dtype)
        return (lambda x, y: torch.mm(x, y)), (a, b), "16bit"
    a = torch.randn(M, K, device="cuda", generator=gen)
    b = torch.randn(N, K, device="cuda", generator=gen)
    return scaled_mm, fp8_rowwise(a, b, gen), "fp8"


def sweep(recipe: str) -> None:
    fn, args, dclass = problem(recipe)
    expected = fn(*args).float()
    cublas_ms = do_bench(lambda: fn(*args), return_mode="median")
    print(
        f"{recipe} {M}x{N}x{K}: cuBLAS {cublas_ms:.4f} ms = {FLOPS / cublas_ms / 1e9:.1f} TFLOP/s",
        flush=True,
    )
    # the default options run hopper_gemm_kernel here, not the table's tile: the Triton kernel
    # is swept with the persistent loop forced, and the default is timed once, first
    options = ["persistent=always", "persistent=never", "persistent=always,ws"]
    candidates = CANDIDATES[dclass]
    rows = []
    compiled = resolve("reference").compile(fn, list(args), dynamic=False)
    ms = do_bench(lambda: compiled(*args), return_mode="median")
    err = float((compiled(*args).float() - expected).norm() / expected.norm())
    print(
        f"  reference (hopper_gemm_kernel): {ms:.4f} ms {FLOPS / ms / 1e9:.1f} TFLOP/s "
        f"({cublas_ms / ms:.3f}x cuBLAS) rel.err {err:.2e}",
        flush=True,
    )
    saved = configs.TABLE[("sm90", dclass, "large")]
    try:
        for config in candidates:
            configs.TABLE[("sm90", dclass, "large")] = config
            for option in options:
                compiled = resolve(f"reference:{option}").compile(fn, list(args), dynamic=False)
                try:
                    out = compiled(*args).float()
                    ms = do_bench(lambda c=compiled: c(*args), return_mode="median")
                except Exception as exc:  # shared memory, registers: the config does not fit
                    print(f"  {config.describe()} {option}: {type(exc).__name__}", flush=True)
                    continue
                err = float((out - expected).norm() / expected.norm())
                rows.append((ms, config, option, err))
                print(
                    f"  {config.describe()} group_m={config.group_m} {option}: {ms:.4f} ms "
                    f"{FLOPS / ms / 1e9:.1f} TFLOP/s ({cublas_ms / ms:.3f}x cuBLAS) "
                    f"rel.err {err:.2e}",
                    flush=True,
                )
    finally:
        configs.TABLE[("sm90", dclass, "large")] = saved
    print(f"best for {recipe}:")
    for ms, config, option, err in sorted(rows, key=lambda r: r[0])[:3]:
        print(
            f"  {config.describe()} group_m={config.group_m} {option}: "
            f"{FLOPS / ms / 1e9:.1f} TFLOP/s ({cublas_ms / ms:.3f}x) rel.err {err:.2e}"
        )


DECODE = {  # Llama-3 8B projections at M = 16: (N, K)
    "qkv": (6144, 4096),
    "o": (4096, 4096),
    "gate_up": (28672, 4096),
    "down": (4096, 14336),
}


def decode_problem(recipe: str, n: int, k: int, m: int = 16):
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(m, k, device="cuda", generator=gen)
    w = torch.randn(n, k, device="cuda", generator=gen)
    if recipe == "bf16":
        return (
            (lambda a, b: torch.nn.functional.linear(a, b)),
            (
                x.bfloat16(),
                w.bfloat16(),
            ),
            "16bit",
        )
    return scaled_mm, fp8_rowwise(x, w, gen), "fp8"


def kernel_ms(clock, call, reps: int = 100) -> float:
    import statistics

    return statistics.median(clock.sample(call, 0.2) for _ in range(reps))


DECODE_TILES = (  # (BLOCK_M, BLOCK_N, stages); BLOCK_K stays the dtype's (batch invariance)
    (64, 64, 3),
    (64, 64, 6),
    (64, 64, 8),
    (64, 128, 4),
    (64, 128, 6),
    (64, 128, 8),
)


def sweep_decode() -> None:
    from dataclasses import replace

    from gemmconf.bench import CudaClock

    clock = CudaClock("kernel")
    lookup = configs.lookup
    for recipe in ("bf16", "fp8"):
        for name, (n, k) in DECODE.items():
            fn, args, _ = decode_problem(recipe, n, k)
            flops = 2.0 * 16 * n * k
            expected = fn(*args).float()
            for _ in range(3):
                fn(*args)
            cublas_ms = kernel_ms(clock, lambda f=fn, a=args: f(*a))
            print(
                f"{recipe} decode {name} 16x{n}x{k}: cuBLAS {cublas_ms * 1e3:.1f} us "
                f"{flops / cublas_ms / 1e9:.1f} TFLOP/s",
                flush=True,
            )
            for tile in (None, *DECODE_TILES):
                if tile is not None:
                    block_m, block_n, stages = tile

                    def patched(arch, dtype, size, t=(block_m, block_n, stages)):
                        row = lookup(arch, dtype, size)
                        return replace(row, block_m=t[0], block_n=t[1], num_stages=t[2])

                    configs.lookup = patched
                try:
                    compiled = resolve("reference").compile(fn, list(args), dynamic=False)
                    out = compiled(*args).float()
                    for _ in range(3):
                        compiled(*args)
                    ms = kernel_ms(clock, lambda c=compiled, a=args: c(*a))
                except Exception as exc:
                    print(f"  {tile}: {exc!r}"[:300], flush=True)
                    continue
                finally:
                    configs.lookup = lookup
                (record,) = compiled.compiler.launches()
                err = float((out - expected).norm() / expected.norm())
                print(
                    f"  {'table' if tile is None else 'sweep'} "
                    f"{record.plan.config.describe()}: {ms * 1e3:.1f} us "
                    f"{flops / ms / 1e9:.1f} TFLOP/s ({cublas_ms / ms:.3f}x cuBLAS) "
                    f"rel.err {err:.1e}",
                    flush=True,
                )


if __name__ == "__main__":
    if "--decode" in sys.argv[1:]:
        sweep_decode()
        sys.exit(0)
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    for name in names or ["bf16", "fp8"]:
        sweep(name)
