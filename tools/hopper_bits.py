"""The bits of the reference backend's 8192^3 results (bf16, and fp8 rowwise with bf16 out),
which its large GEMMs compute with `hopper_gemm_kernel`, as a sha256 per recipe: run with one
tree's gemmconf first on the path, then another's, to show that a change of that kernel's source
left its results bit for bit (issue 41, item 4). On an sm90 GPU; the inputs are
tools/tune_sm90.py's (the same generator draws each run). Nothing here is asserted.

    python tools/hopper_bits.py [bf16|fp16|fp8 ...]      (default: bf16 fp8)
"""

from __future__ import annotations

import hashlib
import sys

import torch

import gemmconf
from gemmconf.backends import resolve
from tools.tune_sm90 import problem


def main(recipes: list[str]) -> None:
    print(f"gemmconf from {gemmconf.__file__}")
    for recipe in recipes:
        fn, args, _ = problem(recipe)
        compiled = resolve("reference").compile(fn, list(args), dynamic=False)
        first = compiled(*args)
        again = compiled(*args)
        bits = first.contiguous().view(torch.uint8).cpu().numpy().tobytes()
        same = bool(torch.equal(first.view(torch.uint8), again.view(torch.uint8)))
        print(f"{recipe}: sha256 {hashlib.sha256(bits).hexdigest()[:32]} (two calls alike: {same})")


if __name__ == "__main__":
    main(sys.argv[1:] or ["bf16", "fp8"])
