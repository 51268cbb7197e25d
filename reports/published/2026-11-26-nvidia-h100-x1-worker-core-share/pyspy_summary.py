"""Where a py-spy profile of a whole suite run puts its samples (session 19, call 1).

Usage: python pyspy_summary.py call1-pyspy.txt.gz   (py-spy record --subprocesses -f raw, 20 Hz)

Each sample is one thread seen running (or waiting for a core: py-spy reads the thread's state),
so threads that outnumber the cores are over-counted; a thread waiting on a subprocess (ptxas)
or a lock is not counted. Categories go by the first matching frame from the innermost out."""

import collections
import gzip
import sys

RATE = 20
CATEGORIES = [  # (name, a substring of one frame), innermost match wins
    ("Triton compile (Python and MLIR/LLVM in-process; ptxas runs apart)", "compile (triton/compiler/compiler.py"),
    ("input draws", "fill (gemmconf/inputs.py"),
    ("fp8/MX quantization of drawn inputs", "Recipe.quantize (gemmconf/gemm/scaling.py"),
    ("dynamo and the backend's lowering (first call)", "_compile (torch/_dynamo/convert_frame.py"),
    ("fp64 reference", "Evaluator.__call__ (gemmconf/chunked.py"),
    ("oracle", "judge (gemmconf/oracle.py"),
    ("input guard and staged copies", "gemmconf/staging.py"),
    ("drawing and laying out inputs, other", "build_copies (gemmconf/inputs.py"),
    ("the backend's calls, other", "ReferenceCompiled.__call__"),
    ("eager", "_ItemRun._eager"),
    ("other item work", "run_item (gemmconf/runner.py"),
]


def category(stack: str) -> str:
    frames = stack.split(";")
    for frame in reversed(frames):
        for name, marker in CATEGORIES:
            if marker in frame:
                if name == "input draws":  # a piece of a parallel draw runs in a pool thread
                    pool = "_bootstrap_inner" in stack
                    return f"{name}, {'pool threads (parallel pieces)' if pool else 'inline'}"
                return name
    return "outside items (start-up, collection, xdist, isolation plumbing)"


counts: collections.Counter[str] = collections.Counter()
for line in gzip.open(sys.argv[1], "rt"):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    if n.isdigit():
        counts[category(stack)] += int(n)
total = sum(counts.values())
print(f"{total} samples = {total / RATE:.0f} thread-seconds")
for name, n in counts.most_common():
    print(f"{n / RATE:8.0f} s  {100 * n / total:5.1f}%  {name}")
