"""The fp64 reference of the suite's largest fp8 items, from the operands kept as stored values
and scales (`scaling.Scaled`, multiplied out on the GPU piece by piece) against the same
operands multiplied out on the host first (the fp64 copies the reference was given before): the
same pieces (one plan), the outputs compared bit for bit, each path timed and its host copies
counted. Run from the project root with the tree's gemmconf importable."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import sys
import time

import torch

from gemmconf import chunked, inputs, program
from gemmconf.gemm.scaling import Scaled
from gemmconf.scenario import load_suite

ROOT = pathlib.Path.cwd()
IDS = sys.argv[1:] or [
    "bench/llama3_70b[fp8-gate_up]",
    "bench/llama3_70b[fp8-down]",
    "bench/llama3_70b[fp8-qkv]",
    "bench/square_fp8_rowwise",
    "bench/llama3_8b[fp8-prefill_gate_up]",
]
DEVICE = os.environ.get("DEVICE", "cuda")  # the dev CPU tries the script on small items
SUITE = ROOT / os.environ.get("SUITE", "suites/bench/anchors.yaml")
found = {i.id: i for i in load_suite(SUITE, root=ROOT)}
torch.set_num_threads(4)


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def timed(evaluate):
    sync()
    start = time.perf_counter()
    result = evaluate()
    sync()
    return result, time.perf_counter() - start


for item_id in IDS:
    instance = found[item_id]
    built = inputs.build(instance, 0, 0, "cpu")
    fn = program.make_reference(instance)
    kept = [t for t in built.reference if isinstance(t, Scaled)]
    kept_bytes = sum(t.values.numel() * t.values.element_size() for t in kept)
    start = time.perf_counter()
    multiplied = tuple(inputs.exact(t) for t in built.reference)
    host_s = time.perf_counter() - start
    copy_bytes = sum(inputs.exact(t).numel() * 8 for t in kept)
    before = dataclasses.replace(built, reference=multiplied)
    plan = chunked.plan(instance, built.dims)
    new, new_s = timed(lambda: chunked.Evaluator(instance, built, DEVICE)(fn))
    old, old_s = timed(lambda: chunked.Evaluator(instance, before, DEVICE)(fn))
    same = torch.equal(new, old)
    print(
        f"{item_id}: {plan.pieces} pieces; bit for bit {'equal' if same else 'DIFFERENT'}; "
        f"on the GPU from values and scales {new_s:.2f} s, from host fp64 copies {old_s:.2f} s "
        f"(+{host_s:.2f} s making them); operands held {kept_bytes / 2**30:.2f} GiB against "
        f"{copy_bytes / 2**30:.2f} GiB of fp64 copies",
        flush=True,
    )
    del new, old, before, multiplied, built
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
