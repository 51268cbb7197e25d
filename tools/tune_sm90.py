"""Sweep the reference backend's tile configs on the anchor shapes (an sm90 GPU).

    python tools/tune_sm90.py [bf16|fp16|fp8 ...] [--accum]

For each recipe at 8192^3 and each candidate (tile config x persistent on/off x, for fp8, the
promotion interval), patches the sm90 "large" row of backend/configs.TABLE, checks the result
against cuBLAS (relative Frobenius error), and times the compiled call with do_bench next to
cuBLAS on the same inputs. Prints one line per candidate, best first: the figures that chose the
table's rows (BENCHMARKS.md).

`--accum` sweeps, for fp8, the promotion variants instead (`reference:fp8_accum=tile|mma|
pingpong`, persistent, every tile config): a variant is a valid `use_fast_accum=False` choice
only where its error against cuBLAS stays in cuBLAS's own class (about 1e-5; promoting every 4
tiles measured 1.1e-3, the fast-accumulation class). About 3-4 minutes on an H100.
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


def problem(recipe: str):
    gen = torch.Generator(device="cuda").manual_seed(0)
    if recipe in ("bf16", "fp16"):
        dtype = torch.bfloat16 if recipe == "bf16" else torch.float16
        a = torch.randn(M, K, device="cuda", generator=gen).to(dtype)
        b = torch.randn(K, N, device="cuda", generator=gen).to(dtype)
        return (lambda x, y: torch.mm(x, y)), (a, b), "16bit"
    a = torch.randn(M, K, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda", generator=gen).to(torch.float8_e4m3fn).t()
    sa = torch.rand(M, 1, device="cuda", generator=gen) + 0.5
    sb = torch.rand(1, N, device="cuda", generator=gen) + 0.5

    def fp8(x, y, s, t):
        return torch._scaled_mm(x, y, s, t, out_dtype=torch.bfloat16)

    return fp8, (a, b, sa, sb), "fp8"


def sweep(recipe: str, accum: bool = False) -> None:
    fn, args, dclass = problem(recipe)
    expected = fn(*args).float()
    cublas_ms = do_bench(lambda: fn(*args), return_mode="median")
    print(
        f"{recipe} {M}x{N}x{K}: cuBLAS {cublas_ms:.4f} ms = {FLOPS / cublas_ms / 1e9:.1f} TFLOP/s",
        flush=True,
    )
    options = ["persistent=auto", "persistent=never"]
    if dclass == "fp8" and accum:
        options = [f"persistent=auto,fp8_accum={mode}" for mode in ("tile", "mma", "pingpong")]
    elif dclass == "fp8":
        options += ["persistent=auto,promote=2", "persistent=auto,promote=4"]
    rows = []
    saved = configs.TABLE[("sm90", dclass, "large")]
    try:
        for config in CANDIDATES[dclass]:
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


if __name__ == "__main__":
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    for name in names or ["bf16", "fp8"]:
        sweep(name, accum="--accum" in sys.argv[1:])
