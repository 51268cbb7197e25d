"""Sweep the reference backend's tile configs on the anchor shapes (an sm90 GPU).

    python tools/tune_sm90.py [bf16|fp16|fp8 ...]
    python tools/tune_sm90.py --decode
    python tools/tune_sm90.py --split [--two]
    python tools/tune_sm90.py --fill

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

`--split` times the same projections on the backend's own call path (a `GemmCall`, no graph)
with the tile forced to each of `SPLIT_TILES` (`SPLIT_TILES_FP8`: block sizes, stages, warps,
tensor descriptors or pointer loads; the decode tile and `deepen` bypassed) and K cut into each
of `SPLITS` slices (`BackendOptions.split_k`; 1 runs the dense kernel), in kernel mode next to
cuBLAS, with each result's error against cuBLAS and whether two calls gave the same bits.
`--two` also times the other reduction form: the split kernel with its last-arrival sum
switched off, followed by a second kernel that sums the partials (`reduce_partials`). About a
minute on an H200 (2026-11-29).

`--fill` times how tiles and slices fill the SMs, on the bf16 projections: each of `FILL_TILES`
(pointer loads; tiles 64 to 256 wide, BLOCK_K 64 or 128, 2 to 8 stages, 4 or 8 warps) cut into
each of `FILL_SPLITS` slices while tiles x slices stay within three programs per SM, each
candidate timed interleaved with cuBLAS (kernel mode, the two calls alternating, the ratio of
their medians), with its programs, the shared memory and registers its kernel took and the
programs per SM they allow; the backend's own choice (`auto`) first, and fp8's as it is.

`--stream` times stream-K (`split_k="stream"`: one program per SM, or two, each an equal share
of all tiles' K steps) on the bf16 and fp8 decode projections: the backend's own plan first,
then each of `STREAM_TILES`, interleaved with cuBLAS as `--fill` times them.
"""

from __future__ import annotations

import contextlib
import sys
import time

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


def gemm_call_args(recipe: str, args: tuple) -> tuple:
    """`decode_problem`'s arguments as a GemmCall takes them: (A, B as K x N, the two scales
    or None, no epilogue operands, no stage shapes)."""
    if recipe == "bf16":
        return (args[0], args[1].t(), None, None, [], [])
    return (args[0], args[1], args[2], args[3], [], [])


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

    clock = kernel_clock()
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


# `--split`: the split-K kernel (backend/kernels/splitk.py) on the decode projections
SPLIT_TILES = (  # (BLOCK_M, BLOCK_N, BLOCK_K, stages, warps, operand path)
    (64, 128, 64, 8, 4, "tma"),
    (64, 128, 128, 4, 4, "tma"),
    (64, 128, 128, 4, 4, "pointers"),
    (64, 128, 128, 3, 4, "pointers"),
    (64, 128, 128, 5, 4, "pointers"),
    (64, 128, 128, 4, 8, "pointers"),
    (64, 64, 128, 6, 4, "pointers"),
    (64, 128, 64, 8, 4, "pointers"),
    (64, 256, 64, 4, 4, "pointers"),
    (64, 128, 256, 2, 4, "pointers"),
    (16, 128, 128, 6, 4, "pointers"),
)
SPLIT_TILES_FP8 = (
    (64, 64, 128, 8, 4, "tma"),
    (64, 128, 128, 6, 4, "tma"),
    (64, 64, 256, 6, 4, "tma"),
    (64, 128, 256, 4, 4, "tma"),
    (64, 128, 128, 6, 4, "pointers"),
)
SPLITS = (1, 2, 3, 4, 6)


def decode_call(recipe: str, split_k, tile, programs: int | None = None):
    """A GemmCall for the decode GEMM (F.linear's mm on W^T, or _scaled_mm), its config forced to
    `tile` (no `deepen`), split as `split_k` says; `programs`: stream-K's program count (the
    target's SM count, which only stream-K reads once the tile is forced)."""
    from dataclasses import replace

    from gemmconf_reference import launcher
    from gemmconf_reference.launcher import BackendOptions, GemmCall, GemmSpec, Runtime
    from gemmconf_reference.target import detect

    fp8 = recipe == "fp8"
    spec = GemmSpec(
        name="sweep",
        op="scaled_mm" if fp8 else "mm",
        dtype=torch.float8_e4m3fn if fp8 else torch.bfloat16,
        steps=(),
        gemm_dtype=torch.bfloat16,
        out_dtype=torch.bfloat16,
        has_bias=False,
        use_fast_accum=False,
        input_precision="ieee",
        gemm_node="sweep",
        fused_nodes=(),
        operand_names=(),
        input_names=("a", "b"),
    )
    target = detect() if programs is None else replace(detect(), num_sms=programs)
    call = GemmCall(spec, Runtime(target, BackendOptions(split_k=split_k)))
    lookup, deepen, paths = configs.lookup, configs.deepen, launcher.descriptor_paths
    decode_plan = launcher.decode_plan
    block_m, block_n, block_k, stages, warps, path = tile

    def forced(arch, dtype, size):
        row = lookup(arch, dtype, size)
        return replace(row, block_m=block_m, block_n=block_n, block_k=block_k,
                       num_stages=stages, num_warps=warps)  # fmt: skip

    def planned(*args):
        configs.lookup, configs.deepen = forced, lambda config, *_: config
        launcher.decode_plan = lambda *_: None  # the forced tile, not the decode tile
        if path == "pointers":
            launcher.descriptor_paths = lambda *_: ("none", "none")
        try:
            return call(*args)
        finally:
            configs.lookup, configs.deepen, launcher.descriptor_paths = lookup, deepen, paths
            launcher.decode_plan = decode_plan

    return call, planned


def reduce_kernel():
    """The other reduction form, for comparison: a second kernel that sums the partials of
    every slice in slice order and stores the bf16 tile (no scales, no epilogue)."""
    import triton
    import triton.language as tl

    @triton.jit
    def reduce_partials(ws_ptr, c_ptr, M, N, stride_cm, splits,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):  # fmt: skip
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        tiles = tl.num_programs(0) * tl.num_programs(1)
        tile = pid_m * tl.num_programs(1) + pid_n
        rows = tl.arange(0, BLOCK_M)
        cols = tl.arange(0, BLOCK_N)
        block = rows[:, None] * BLOCK_N + cols[None, :]
        live = (pid_m * BLOCK_M + rows)[:, None] < M
        total = tl.load(ws_ptr + tile * (BLOCK_M * BLOCK_N) + block, mask=live, other=0.0)
        for s in range(1, splits):
            part = ws_ptr + (s * tiles + tile) * (BLOCK_M * BLOCK_N) + block
            total += tl.load(part, mask=live, other=0.0)
        offs_m = pid_m * BLOCK_M + rows
        offs_n = pid_n * BLOCK_N + cols
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :]
        tl.store(ptrs, total.to(c_ptr.dtype.element_ty), mask=mask)

    return reduce_partials


def two_kernel_form(call, planned, args, reduce_partials):
    """The split call with its last-arrival sum switched off (counters far below the slice
    count), followed by `reduce_partials`: a callable, and its first result."""
    out = planned(*args)
    ((workspace, counters),) = call.runtime.split_buffers.by_stream.values()
    counters.fill_(-(2**30))
    (launch,) = [record.plan for record in call.launches.values()]
    tiles_m, tiles_n, splits = launch.grid
    cfg = launch.config

    def run():
        c = planned(*args)
        reduce_partials[(tiles_m, tiles_n)](
            workspace, c, c.shape[0], c.shape[1], c.stride(0), splits, cfg.block_m, cfg.block_n
        )
        return c

    return run, out


def sweep_split(two_kernels: bool) -> None:
    clock = kernel_clock()
    reduce_partials = reduce_kernel()
    for recipe in ("bf16", "fp8"):
        for name, (n, k) in DECODE.items():
            fn, args, _ = decode_problem(recipe, n, k)
            call_args = gemm_call_args(recipe, args)
            flops = 2.0 * 16 * n * k
            expected = fn(*args).float()
            cublas_ms = kernel_ms(clock, lambda f=fn, a=args: f(*a), reps=50)
            print(f"{recipe} decode {name} 16x{n}x{k}: cuBLAS {cublas_ms * 1e3:.1f} us", flush=True)
            default = resolve("reference").compile(fn, list(args), dynamic=False)
            default(*args)
            ms = kernel_ms(clock, lambda c=default, a=args: c(*a), reps=50)
            (record,) = default.compiler.launches()
            print(
                f"  default {record.plan.kernel} grid={record.plan.grid} "
                f"{record.plan.config.describe()}: {ms * 1e3:.1f} us ({cublas_ms / ms:.3f}x)",
                flush=True,
            )
            rows = []
            for tile in SPLIT_TILES if recipe == "bf16" else SPLIT_TILES_FP8:
                for splits in SPLITS:
                    two = two_kernels and recipe == "bf16" and splits > 1
                    forms = ["last"] + (["two"] if two else [])
                    for form in forms:
                        row = time_split(clock, recipe, tile, splits, form, call_args, expected,
                                         reduce_partials)  # fmt: skip
                        if row is None:
                            continue
                        ms, err, same = row
                        rows.append((ms, tile, splits, form))
                        print(
                            f"  {tile} splits={splits} {form}: {ms * 1e3:.1f} us "
                            f"{flops / ms / 1e9:.0f} TFLOP/s ({cublas_ms / ms:.3f}x) "
                            f"rel.err {err:.1e} repeat-equal {same}",
                            flush=True,
                        )
            for ms, tile, splits, form in sorted(rows)[:4]:
                print(f"  best {tile} splits={splits} {form}: {cublas_ms / ms:.3f}x", flush=True)


def time_split(clock, recipe, tile, splits, form, call_args, expected, reduce_partials):
    """(kernel ms, rel. error against cuBLAS, two calls bitwise equal) of one candidate."""
    try:
        call, planned = decode_call(recipe, "never" if splits == 1 else splits, tile)
        if form == "two":
            run, _ = two_kernel_form(call, planned, call_args, reduce_partials)
        else:
            run = lambda: planned(*call_args)  # noqa: E731
        first, second = run().float(), run().float()
        ms = kernel_ms(clock, run, reps=50)
    except Exception as exc:  # shared memory: the tile does not fit
        print(f"  {tile} splits={splits} {form}: {exc!r}"[:200], flush=True)
        return None
    err = float((first - expected).norm() / expected.norm())
    return ms, err, bool(torch.equal(first, second))


# `--fill`: tiles x slices against the SMs' program slots (bf16 decode projections)
FILL_TILES = (  # (BLOCK_M, BLOCK_N, BLOCK_K, stages, warps), pointer loads
    (64, 128, 128, 4, 4),  # the decode tile (configs.DECODE, 2026-11-29)
    (64, 128, 128, 3, 4),
    (64, 128, 128, 2, 4),
    (64, 128, 128, 4, 8),
    (64, 128, 128, 3, 8),
    (64, 128, 64, 8, 4),
    (64, 128, 64, 6, 4),
    (64, 128, 64, 4, 4),
    (64, 128, 64, 3, 4),
    (64, 64, 128, 6, 4),
    (64, 64, 128, 4, 4),
    (64, 64, 128, 3, 4),
    (64, 64, 64, 8, 4),
    (64, 64, 64, 6, 4),
    (64, 64, 64, 4, 4),
    (64, 256, 64, 4, 4),
    (64, 256, 128, 2, 4),
)
FILL_SPLITS = (1, 2, 3, 4, 5, 6, 8)
FILL_PAIRS = 60  # interleaved (cuBLAS, candidate) samples per candidate
FILL_DEADLINE_S = 240.0  # no candidate starts after this: what was timed gets printed


def interleaved(clock, first, second, pairs: int = FILL_PAIRS) -> tuple[float, float]:
    """Median kernel ms of `first` and of `second`, sampled alternately (which goes first
    alternates too), so that clock drift weighs on both alike."""
    import statistics

    a, b = [], []
    for i in range(pairs):
        if i % 2:
            b.append(clock.sample(second, 0.2))
            a.append(clock.sample(first, 0.2))
        else:
            a.append(clock.sample(first, 0.2))
            b.append(clock.sample(second, 0.2))
    return statistics.median(a), statistics.median(b)


def resident(compiled, warps: int) -> tuple[int, int, int]:
    """(shared bytes, registers per thread, programs per SM they allow) of a compiled kernel
    (sm90: 228 KB of shared memory per SM, 1 KB kept per program; 64 K registers, allocated
    per warp in 256s; at most 32 programs)."""
    props = torch.cuda.get_device_properties(0)
    smem = getattr(props, "shared_memory_per_multiprocessor", 233472)
    shared = int(getattr(compiled.metadata, "shared", 0))
    regs = int(getattr(compiled, "n_regs", 0) or 0)
    by_smem = smem // (shared + 1024)
    per_warp = -(-regs * 32 // 256) * 256
    by_regs = 65536 // max(per_warp * warps, 1)
    return shared, regs, min(by_smem, by_regs, 32)


@contextlib.contextmanager
def compiled_kernels():
    """A list that receives the compiled kernel of each first launch while the block runs."""
    from gemmconf_reference import launcher

    kernels: list = []
    jit = launcher.TritonLauncher.jit

    def heard(self, fn, launch, signature=None):
        compiled = jit(self, fn, launch, signature)
        kernels.append(compiled)
        return compiled

    launcher.TritonLauncher.jit = heard
    try:
        yield kernels
    finally:
        launcher.TritonLauncher.jit = jit


def auto_line(clock, recipe: str, name: str, n: int, k: int):
    """Prints cuBLAS against the backend's own plan for one decode projection, interleaved;
    returns (cuBLAS call, the GemmCall's arguments, cuBLAS's result in fp32)."""
    fn, args, _ = decode_problem(recipe, n, k)
    cublas = lambda f=fn, a=args: f(*a)  # noqa: E731
    default = resolve("reference").compile(fn, list(args), dynamic=False)
    default(*args)
    (record,) = default.compiler.launches()
    plan = record.plan
    base_ms, ms = interleaved(clock, cublas, lambda c=default, a=args: c(*a), 100)
    print(
        f"{recipe} decode {name} 16x{n}x{k}: cuBLAS {base_ms * 1e3:.2f} us; auto "
        f"{plan.kernel} grid={plan.grid} {plan.config.describe()}: {ms * 1e3:.2f} us "
        f"({base_ms / ms:.3f}x)",
        flush=True,
    )
    return cublas, gemm_call_args(recipe, args), fn(*args).float()


def kernel_clock():
    from gemmconf.bench import CudaClock

    return CudaClock("kernel")


def sm_count() -> int:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()}: {sms} SMs", flush=True)
    return sms


def each_projection(clock):
    """(recipe, N, K, the compiled-kernel list, then `auto_line`'s three) per decode projection,
    bf16 then fp8, each after its auto line."""
    with compiled_kernels() as kernels:
        for recipe in ("bf16", "fp8"):
            for name, (n, k) in DECODE.items():
                yield recipe, n, k, kernels, *auto_line(clock, recipe, name, n, k)


def sweep_fill() -> None:
    start, clock, sms = time.perf_counter(), kernel_clock(), sm_count()
    for recipe, n, k, kernels, cublas, call_args, expected in each_projection(clock):
        if recipe != "bf16":
            continue
        rows = []
        for tile in FILL_TILES:
            block_m, block_n, block_k = tile[:3]
            tiles = -(-16 // block_m) * -(-n // block_n)
            k_tiles = -(-k // block_k)
            for splits in FILL_SPLITS:
                if tiles * splits > 3 * sms or k_tiles < 2 * splits:
                    continue
                if time.perf_counter() - start > FILL_DEADLINE_S:
                    print("  deadline: no more candidates", flush=True)
                    break
                split_k = "never" if splits == 1 else splits
                label = f"{tile} splits={splits} programs={tiles * splits}"
                row = time_candidate(clock, cublas, "bf16", split_k, tile, None,
                                     call_args, expected, kernels, label)  # fmt: skip
                if row is not None:
                    rows.append((row, tile, splits))
        for ratio, tile, splits in sorted(rows, reverse=True)[:6]:
            print(f"  best {tile} splits={splits}: {ratio:.3f}x", flush=True)
    print(f"fill sweep: {time.perf_counter() - start:.0f} s", flush=True)


def time_candidate(clock, cublas, recipe, split_k, tile, programs, call_args, expected, kernels,
                   label):  # fmt: skip
    """Times one candidate (pointer loads; `programs`: stream-K's count) interleaved with
    cuBLAS and prints its line: time, cuBLAS's, the ratio, the error against cuBLAS, whether two
    calls gave the same bits, and the shared memory, registers and programs per SM of its
    kernel (`resident`). Returns the ratio, None where the tile does not fit."""
    try:
        _call, planned = decode_call(recipe, split_k, (*tile, "pointers"), programs)
        kernels.clear()
        run = lambda: planned(*call_args)  # noqa: E731
        first, second = run().float(), run().float()
        shared, regs, per_sm = resident(kernels[0], tile[4]) if kernels else (0, 0, 0)
        base_ms, ms = interleaved(clock, cublas, run)
    except Exception as exc:  # shared memory: the tile does not fit
        print(f"  {label}: {exc!r}"[:200], flush=True)
        return None
    err = float((first - expected).norm() / expected.norm())
    print(
        f"  {label} shared={shared} regs={regs} per_sm={per_sm}: {ms * 1e3:.2f} us "
        f"cuBLAS {base_ms * 1e3:.2f} us ({base_ms / ms:.3f}x) rel.err {err:.1e} "
        f"repeat-equal {bool(torch.equal(first, second))}",
        flush=True,
    )
    return base_ms / ms


# `--stream`: stream-K (splitk_gemm_kernel with STREAM) on the decode projections
STREAM_TILES = {  # (BLOCK_M, BLOCK_N, BLOCK_K, stages, warps), pointer loads
    "bf16": (
        (64, 64, 128, 6, 4),
        (64, 64, 128, 4, 4),
        (64, 64, 128, 3, 4),
        (64, 128, 128, 4, 4),
        (64, 128, 128, 3, 4),
        (64, 64, 64, 8, 4),
        (64, 128, 64, 6, 4),
        (64, 32, 128, 8, 4),
    ),
    "fp8": (
        (64, 64, 128, 8, 4),
        (64, 64, 128, 6, 4),
        (64, 128, 128, 6, 4),
        (64, 128, 128, 4, 4),
        (64, 64, 256, 4, 4),
    ),
}
STREAM_PER_SM = (1, 2)  # programs per SM


def sweep_stream() -> None:
    """Per projection and recipe: cuBLAS against the backend's own plan (`auto`), then each of
    `STREAM_TILES` as stream-K with one and two programs per SM (where they fit), each candidate
    timed interleaved with cuBLAS (kernel mode, ratio of medians)."""
    start, clock, sms = time.perf_counter(), kernel_clock(), sm_count()
    for recipe, _n, _k, kernels, cublas, call_args, expected in each_projection(clock):
        rows = []
        for tile in STREAM_TILES[recipe]:
            for per_sm in STREAM_PER_SM:
                if time.perf_counter() - start > FILL_DEADLINE_S:
                    print("  deadline: no more candidates", flush=True)
                    break
                label = f"{tile} stream programs={sms * per_sm}"
                row = time_candidate(clock, cublas, recipe, "stream", tile, sms * per_sm,
                                     call_args, expected, kernels, label)  # fmt: skip
                if row is not None:
                    rows.append((row, tile, per_sm))
        for ratio, tile, per_sm in sorted(rows, reverse=True)[:4]:
            print(f"  best {tile} stream x{per_sm}: {ratio:.3f}x", flush=True)
    print(f"stream sweep: {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    if "--stream" in sys.argv[1:]:
        sweep_stream()
        sys.exit(0)
    if "--decode" in sys.argv[1:]:
        sweep_decode()
        sys.exit(0)
    if "--fill" in sys.argv[1:]:
        sweep_fill()
        sys.exit(0)
    if "--split" in sys.argv[1:]:
        sweep_split(two_kernels="--two" in sys.argv[1:])
        sys.exit(0)
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    for name in names or ["bf16", "fp8"]:
        sweep(name)
