"""What a GEMM at 8192^3 runs at when it runs for seconds: the reference's kernel and cuBLAS's,
each called back to back for SECONDS, alternating (reference, cuBLAS, reference, cuBLAS, ...),
with nvidia-smi sampling the SM clock, the power draw and the clock-throttle reasons every 100
ms. Prints per stretch: TFLOP/s over the stretch, and the median clock and power of its samples.
On an sm90 GPU (issue 41, item 2: whether a kernel at cuBLAS's tensor-pipe utilization can still
run faster at free clocks, where the power limit sets the clock). Nothing here is asserted.

    python tools/sustained_clock.py [bf16|fp16|fp8 ...]      (default: bf16 fp8)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import torch

from gemmconf.backends import resolve
from tools.tune_sm90 import FLOPS, problem

SECONDS = 6.0
ROUNDS = 2
QUERY = "clocks.sm,power.draw,clocks_event_reasons.active"


def stretch(call, seconds: float) -> tuple[float, list[list[str]]]:
    """TFLOP/s of `call` repeated for `seconds`, and nvidia-smi's samples meanwhile."""
    smi = subprocess.Popen(
        ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits", "-lms", "100"],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.3)  # nvidia-smi's first sample
    torch.cuda.synchronize()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            call()
        calls += 20
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    smi.terminate()
    out, _ = smi.communicate()
    samples = [line.split(", ") for line in out.splitlines() if line.count(",") == 2]
    return FLOPS * calls / elapsed / 1e12, samples


def main(recipes: list[str]) -> None:
    for recipe in recipes:
        fn, args, _ = problem(recipe)
        compiled = resolve("reference").compile(fn, list(args), dynamic=False)
        for _ in range(3):
            compiled(*args)
            fn(*args)
        callers = {"reference": compiled, "cuBLAS": fn}
        for round_ in range(ROUNDS):
            for who, caller in callers.items():
                tflops, samples = stretch(lambda c=caller, a=args: c(*a), SECONDS)
                clocks = [float(s[0]) for s in samples]
                power = [float(s[1]) for s in samples]
                reasons = sorted({s[2] for s in samples})
                print(
                    f"{recipe} round {round_ + 1} {who:9s}: {tflops:7.1f} TFLOP/s, SM clock median "
                    f"{statistics.median(clocks):.0f} MHz ({min(clocks):.0f}-{max(clocks):.0f}), "
                    f"power median {statistics.median(power):.0f} W, {len(samples)} samples, "
                    f"throttle reasons {reasons}",
                    flush=True,
                )


if __name__ == "__main__":
    main(sys.argv[1:] or ["bf16", "fp8"])
