"""The toolchain every process of a run uses: the ptxas that Triton runs, chosen once for all
of them (below), and whether Python finds torch compiled to bytecode (`bytecode_note`).

Triton assembles PTX with the ptxas that `TRITON_PTXAS_PATH` names, else the one it bundles.
Inductor sets that variable, in its own process, at its first Triton compile, to the ptxas that
a CUDA build of torch ships in `torch/bin` (torch 2.11-2.13:
`torch._inductor.runtime.compile_tasks._set_triton_ptxas_path`, which leaves a variable that is
set alone). From then on every Triton compile in that process, another backend's too, takes
torch's ptxas, while Triton's cache key keeps the ptxas version the process read first (Triton
caches it per process and arch): a kernel assembled by torch's ptxas is stored under the key of
Triton's, and a process that met inductor before its first compile keys the same kernel
differently from one that met it later. On an H200 (2026-11-30, torch 2.11.0+cu130, triton
3.6.0) Triton's own ptxas is CUDA 12.8's and torch's CUDA 13.0's, and one inductor compile
switched a process from one to the other (reports/published/2026-11-30-nvidia-h200-compile-key/,
call 2). A run whose backends include inductor and a Triton backend, or whose checks run
inductor in a worker, meets this.

`pin_ptxas` sets the variable before any process compiles, so that one ptxas serves the whole
run: torch's where the run has an inductor backend (as inductor would set it), else Triton's own
(what a Triton backend gets in a process that never runs inductor), which inductor then leaves
alone. A variable the user set is kept. Where torch ships no ptxas (CPU builds) inductor cannot
switch one and nothing is set. The choice moved no kernel-mode bench figure on that H200 (the 27
bench items with each ptxas, call 4). Called in each pytest process's `pytest_configure`; xdist
and isolation workers inherit the variable from the process that starts them.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

PTXAS_ENV = "TRITON_PTXAS_PATH"
# --backend names (before any option) that compile with inductor
INDUCTOR_BACKENDS = frozenset({"inductor", "inductor-max-autotune"})


@dataclass(frozen=True)
class PtxasChoice:
    path: str | None  # what TRITON_PTXAS_PATH names after `pin_ptxas` (None: Triton's own)
    why: str

    def line(self) -> str:
        return f"Triton's ptxas: {self.path or 'the one Triton bundles'} ({self.why})"


def runs_inductor(backend_option: str) -> bool:
    """Whether a --backend list names a backend that compiles with inductor (the built-in
    inductor backends, `dynamo:inductor`)."""
    for piece in backend_option.split(","):
        name, _, option = piece.strip().partition(":")
        if name in INDUCTOR_BACKENDS or (name == "dynamo" and option.startswith("inductor")):
            return True
    return False


def bundled_ptxas(package_dir: Path) -> Path | None:
    """The ptxas in `package_dir/bin` (torch's CUDA builds) or `package_dir/backends/nvidia/bin`
    (Triton's), where it is an executable file."""
    for folder in (package_dir / "bin", package_dir / "backends" / "nvidia" / "bin"):
        ptxas = folder / "ptxas"
        if ptxas.is_file() and os.access(ptxas, os.X_OK):
            return ptxas
    return None


def _package_dir(name: str) -> Path:
    return Path(importlib.import_module(name).__file__).parent  # type: ignore[arg-type]


def pin_ptxas(
    environ: MutableMapping[str, str] = os.environ,
    *,
    inductor: bool = False,
    torch_dir: Path | None = None,
    triton_dir: Path | None = None,
) -> PtxasChoice:
    """Sets TRITON_PTXAS_PATH (see the module docstring) where it is unset and torch ships a
    ptxas: torch's for a run with an inductor backend, else Triton's own. What the run's
    processes will use, and why."""
    chosen = environ.get(PTXAS_ENV)
    if chosen is not None:
        return PtxasChoice(chosen, f"{PTXAS_ENV} as set")
    torch_ptxas = bundled_ptxas(torch_dir or _package_dir("torch"))
    if torch_ptxas is None:
        return PtxasChoice(None, "torch ships none, so inductor cannot switch it")
    if inductor:
        why = "torch's, as inductor sets it: the run has an inductor backend"
        ptxas: Path | None = torch_ptxas
    else:
        why = f"Triton's own, which inductor would replace with torch's; {PTXAS_ENV} picks another"
        ptxas = bundled_ptxas(triton_dir or _package_dir("triton"))
    if ptxas is None:
        return PtxasChoice(None, "Triton ships none")
    environ[PTXAS_ENV] = str(ptxas)
    return PtxasChoice(str(ptxas), why)


def bytecode_note(package: str = "torch") -> str | None:
    """A header line where this Python writes no bytecode (PYTHONDONTWRITEBYTECODE, `-B`) and
    `package` has none where Python looks for it: every process of the run, xdist's workers
    and each spawned isolation worker, then compiles the package's modules from source. The
    GPU machines' image is so: `import torch` took 3.2-3.5 s there and 1.4 s once compiled, and
    the reference suite cold on two H200s 150.6 s before and 123.1 s after (2026-12-01,
    reports/published/2026-12-01-nvidia-h200-worker-start/). None where bytecode is written
    or present."""
    if not sys.flags.dont_write_bytecode:
        return None
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        cached = Path(importlib.util.cache_from_source(spec.origin))
    except (NotImplementedError, ValueError):
        return None
    if cached.exists():
        return None
    folder = Path(spec.origin).parent
    return (
        f"Python writes no bytecode here (PYTHONDONTWRITEBYTECODE or -B) and {package} has none "
        f"({folder}): every process of this run compiles its modules from source; "
        f"`python -m compileall -q {folder}` once saves that (torch: 3.2 -> 1.4 s a process on "
        "an H200 host)"
    )
