"""Are the reference backend's results and generated code bit for bit what another tree's were?

The check of a kernel refactor (issue 45, item 6): `pytest suites` judges by tolerance, so a
change that moves results within it passes there. This runs suite items on the reference backend
in this process (`run_item`, every check it makes) and keeps, per item, a SHA-256 of every value
the backend returned (dtype, shape, strides and bytes), in call order, the outcome, and the
launch plans (kernel, constexprs, grid, tile config). With --targets it also cross-compiles every
distinct launch for those arches and keeps hashes of its TTIR, TTGIR and PTX with source
locations taken out (they name files and lines, which a refactor moves), and the code checks'
outcomes. Run it once per tree, each tree on the path, then diff:

    PYTHONPATH=/tmp/site-old python tools/kernel_ab.py run --out old.json [-k TEXT] [FILES...]
    PYTHONPATH=/tmp/site-new python tools/kernel_ab.py run --out new.json [-k TEXT] [FILES...]
    python tools/kernel_ab.py diff old.json new.json

`diff` prints every difference and exits 1 when there is one. `--every N` keeps every N-th item,
`--shard i/n` one of n processes' share; a run stopped by SIGTERM (a time limit) writes what it
did, marked incomplete, and `diff` then compares the items both runs did. On a CPU the code
checks' items of each class run with `--target-arch` (and `--targets` hashes their IR); on a
GPU every item runs compiled there. tools/kernel_ab_gpu.sh runs it on a GPU machine. FILES
default to every suite file but bench/, cutlass/ and seeds/ (other backends' or timing suites);
items this machine cannot run are left out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

# the interpreter's tl.dot is numpy's matmul, whose sums depend on its thread count: both trees'
# runs must use the same (seen: fp16 and fp32 128x96 outputs differed between 1 and 2 threads)
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import torch  # noqa: E402 after the thread counts

SKIPPED_FOLDERS = ("bench", "cutlass", "seeds", "expectations")
IR_KINDS = ("ttir", "ttgir", "ptx")
# source locations: MLIR's `loc(...)` attributes and #loc lines, PTX's .loc/.file and debug info
_MLIR_LOC = re.compile(r"\s*loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
_LOC_LINE = re.compile(
    r"^\s*(#loc\d*\s*=|\.loc\s|\.file\s|//\s*begin inline asm|//\s*end inline|\$L__tmp\d+:$)"
)


def without_locations(text: str) -> str:
    """IR text with its source locations taken out (they move with every edit of the source)."""
    lines = []
    in_debug = False
    for line in text.splitlines():
        if line.strip().startswith(".section") and ".debug" in line:
            in_debug = True
        if in_debug:
            if line.strip() == "}":
                in_debug = False
            continue
        if _LOC_LINE.match(line):
            continue
        lines.append(_MLIR_LOC.sub("", line))
    return "\n".join(lines)


_SSA_NAME = re.compile(r"%[\w.$-]+")
_CONSTANT = re.compile(r"^\s*(%[\w.$-]+) = (arith\.constant .*)$")


def canonical_names(text: str) -> str:
    """MLIR text up to the names of its values and the order of its constants: Triton names
    values after the Python variables they were assigned to, and hoists constants in the order
    it met them, so a renamed local or a call passed through a tuple moves both. Constants are
    listed sorted, named in that order; other values are numbered in order of appearance."""
    constants = sorted(
        (m.group(2), m.group(1)) for line in text.splitlines() if (m := _CONSTANT.match(line))
    )
    names = {name: f"%c{i}" for i, (_, name) in enumerate(constants)}
    body = [line for line in text.splitlines() if not _CONSTANT.match(line)]

    def rename(m: re.Match[str]) -> str:
        return names.setdefault(m.group(), f"%v{len(names)}")

    listed = [f"{names[name]} = {value}" for value, name in constants]
    return "\n".join(listed + [_SSA_NAME.sub(rename, line) for line in body])


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def value_hash(value: Any) -> Any:
    """A hash of what a backend returned: tensors by dtype, shape, strides and bytes."""
    if isinstance(value, torch.Tensor):
        t = value.detach()
        raw = t.cpu().contiguous().reshape(-1)
        data = raw.view(torch.uint8) if raw.numel() else torch.empty(0, dtype=torch.uint8)
        body = hashlib.sha256(data.numpy().tobytes()).hexdigest()[:16]
        return f"{str(t.dtype)[6:]}{list(t.shape)}{list(t.stride())}:{body}"
    if isinstance(value, (list, tuple)):
        return [value_hash(v) for v in value]
    return repr(value)


class HashingCompiled:
    """A Compiled whose every call's result is hashed into `calls` (the rest is the inner's)."""

    def __init__(self, inner: Any, calls: list[Any]) -> None:
        self._inner, self._calls = inner, calls

    def __call__(self, *args: Any) -> Any:
        try:
            out = self._inner(*args)
        except Exception as exc:
            self._calls.append(f"raised {type(exc).__name__}")
            raise
        self._calls.append(value_hash(out))
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class HashingBackend:
    """The reference backend with every compiled function wrapped in `HashingCompiled`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: list[Any] = []
        self.compiled: list[Any] = []

    def compile(self, fn: Any, example_inputs: Any, *, dynamic: bool | None = None) -> Any:
        compiled = self._inner.compile(fn, example_inputs, dynamic=dynamic)
        self.compiled.append(compiled)
        return HashingCompiled(compiled, self.calls)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def suites_root() -> Path:
    """The suite of the gemmconf on the path (each tree compares its own copy)."""
    from gemmconf import bundled_suites

    return bundled_suites()


def suite_files(given: list[Path]) -> list[Path]:
    if given:
        return given
    root = suites_root()
    return sorted(
        p
        for p in root.rglob("*.yaml")
        if not any(part in SKIPPED_FOLDERS for part in p.relative_to(root).parts)
    )


def _plans(compiler: Any) -> list[str]:
    return sorted(
        {
            f"{r.plan.kernel}{list(r.plan.grid)} {r.plan.config} "
            + ",".join(f"{k}={v}" for k, v in r.plan.constexprs)
            for r in compiler.launches()
        }
    )


def _code(compiler: Any, targets: list[str]) -> dict[str, Any]:
    """Per target: hashes of each IR kind (locations out) over the item's launches."""
    found: dict[str, Any] = {}
    for arch in targets:
        try:
            texts = compiler.compiled_ir(arch)
        except Exception as exc:  # a failed cross-compile is a result to compare too
            found[arch] = f"raised {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            continue
        found[arch] = {kind: digest(without_locations(texts[kind])) for kind in sorted(texts)}
        for kind in ("ttir", "ttgir"):  # the same, value names and constants' order aside
            if kind in texts:
                found[arch][f"{kind}~"] = digest(canonical_names(without_locations(texts[kind])))
        found[arch]["kernels"] = texts.get("ttgir", "").count("tt.func public")
    return found


def run(args: argparse.Namespace) -> int:
    from gemmconf import capability
    from gemmconf.backends import resolve
    from gemmconf.backends.base import RunOptions
    from gemmconf.runner import run_item
    from gemmconf.scenario import load_suite

    here = capability.detect()
    targets = [t for t in args.targets.split(",") if t]
    arch = args.target_arch
    items = [
        i
        for path in suite_files(args.files)
        for i in load_suite(path, suites_root())
        if args.match in i.id and capability.unmet(i.requires, here, target_arch=arch) is None
        if arch is None or capability.unmet(i.requires, here) is not None  # that class's own
    ]
    items = items[:: args.every]
    if args.shard:
        items = items[args.shard[0] :: args.shard[1]]
    records: dict[str, Any] = {}
    start = time.perf_counter()
    stopped = []  # SIGTERM (a time limit): write what was done, marked incomplete
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
    for instance in items:
        if stopped:
            break
        reference = resolve("reference")
        reference.configure(RunOptions(target_arch=arch, device=here.device))
        backend = HashingBackend(reference)
        outcome = run_item(
            instance,
            backend,
            seed=args.seed,
            device=capability.item_device(instance.requires, here.device),
            target=arch,
        )
        compilers = [c.compiler for c in backend.compiled if hasattr(c, "compiler")]
        records[instance.id] = {
            "outcome": "passed" if outcome.passed else f"failed {outcome.kind}",
            "calls": backend.calls,
            "plans": [p for c in compilers for p in _plans(c)],
            "code": [_code(c, targets) for c in compilers] if targets else [],
        }
        if args.verbose:
            print(f"{instance.id}: {records[instance.id]['outcome']}", flush=True)
    elapsed = time.perf_counter() - start
    outcomes = Counter(r["outcome"].split()[0] for r in records.values())
    calls = sum(len(r["calls"]) for r in records.values())
    import triton

    document = {
        "versions": {"torch": torch.__version__, "triton": triton.__version__},
        "threads": os.environ["OMP_NUM_THREADS"],
        "device": here.describe(),
        "seed": args.seed,
        "targets": targets,
        "target_arch": arch,
        "incomplete": bool(stopped),
        "items": records,
    }
    Path(args.out).write_text(json.dumps(document, indent=1, sort_keys=True))
    print(
        f"{len(records)} of {len(items)} items ({dict(outcomes)}), {calls} backend calls hashed, "
        f"{len(targets)} targets, {elapsed:.0f} s; wrote {args.out}"
    )
    return 0


def load(paths: str) -> dict[str, Any]:
    """One `run` file, or several (comma-separated: shards) as one."""
    documents = [json.loads(Path(p).read_text()) for p in paths.split(",")]
    merged = dict(documents[0], items={})
    for document in documents:
        merged["items"].update(document["items"])
        merged["incomplete"] = merged.get("incomplete") or document.get("incomplete", False)
    return merged


def semantic(code: Any) -> Any:
    """An item's code hashes as compared: PTX exactly, TTIR/TTGIR up to value names and the
    order of constants (`canonical_names`)."""
    if not isinstance(code, list):
        return code
    return [
        {
            arch: {k: v for k, v in found.items() if k not in IR_KINDS or k == "ptx"}
            if isinstance(found, dict)
            else found
            for arch, found in per_compiler.items()
        }
        for per_compiler in code
    ]


def diff(args: argparse.Namespace) -> int:
    old, new = load(args.old), load(args.new)
    a, b = old["items"], new["items"]
    differing = 0
    cut_off = old.get("incomplete") or new.get("incomplete")
    for key in sorted(a.keys() ^ b.keys()):
        print(f"ONLY IN {'old' if key in a else 'new'}: {key}")
        differing += 0 if cut_off else 1  # a run stopped by its time limit did fewer items
    if cut_off:
        print(f"{len(a.keys() ^ b.keys())} items in one run only: a run was cut off by its limit")
    fields: Counter[str] = Counter()
    reordered = 0
    for key in sorted(a.keys() & b.keys()):
        if a[key].get("code") != b[key].get("code"):
            reordered += semantic(a[key]["code"]) == semantic(b[key]["code"])
        for field in ("outcome", "calls", "plans", "code"):
            if field == "code":
                if semantic(a[key].get(field)) != semantic(b[key].get(field)):
                    fields[field] += 1
                    differing += 1
                    print(f"DIFFERS {key}: code")
                    print(f"  old: {json.dumps(a[key].get(field))[:400]}")
                    print(f"  new: {json.dumps(b[key].get(field))[:400]}")
                continue
            if a[key].get(field) != b[key].get(field):
                fields[field] += 1
                differing += 1
                print(f"DIFFERS {key}: {field}")
                print(f"  old: {json.dumps(a[key].get(field))[:400]}")
                print(f"  new: {json.dumps(b[key].get(field))[:400]}")
    common = a.keys() & b.keys()
    calls = sum(len(a[k]["calls"]) for k in common)
    kernels: Counter[str] = Counter()
    for k in common:
        for per_compiler in a[k]["code"]:
            for arch, found in per_compiler.items():
                kernels[arch] += found.get("kernels", 0) if isinstance(found, dict) else 0
    print(
        f"compared {len(common)} items ({calls} backend results"
        + (f"; kernels compiled per target: {dict(kernels)}" if kernels else "")
        + f"), old {old['versions']} on {old['device']}, new {new['versions']} on {new['device']}"
    )
    if reordered:
        print(
            f"{reordered} items' TTIR/TTGIR differ only in value names or the order of their "
            "constants (their PTX is the same)"
        )
    print(f"{differing} differences" + (f" ({dict(fields)})" if fields else ""))
    return 1 if differing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run", help="hash the reference backend's results here")
    run_parser.add_argument("files", nargs="*", type=Path)
    run_parser.add_argument("--out", required=True)
    run_parser.add_argument("-k", dest="match", default="", help="ids that contain this")
    run_parser.add_argument("--seed", type=int, default=0)
    run_parser.add_argument(
        "--target-arch", default=None,
        help="run the items of this class (sm80, sm90, sm100, sm120) that need its GPU, with their "
        "code checks on code cross-compiled for it, as pytest's --target-arch does",
    )  # fmt: skip
    run_parser.add_argument(
        "--targets", default="", help="arches to cross-compile for, e.g. sm80,sm90,sm100,sm120"
    )
    run_parser.add_argument("--every", type=int, default=1, help="every N-th item only")
    run_parser.add_argument(
        "--shard", type=lambda s: tuple(int(x) for x in s.split("/")), default=None,
        help="i/n: of those, every n-th from the i-th (one of n processes)",
    )  # fmt: skip
    run_parser.add_argument("-v", "--verbose", action="store_true")
    diff_parser = sub.add_parser("diff", help="compare two files `run` wrote")
    diff_parser.add_argument("old", help="a file, or shards' files comma-separated")
    diff_parser.add_argument("new", help="a file, or shards' files comma-separated")
    args = parser.parse_args(argv)
    return run(args) if args.command == "run" else diff(args)


if __name__ == "__main__":
    sys.exit(main())
