"""The ptxas that Triton uses, chosen once for every process of a run.

Triton assembles PTX with the ptxas that `TRITON_PTXAS_PATH` names, else the one it bundles.
Inductor sets that variable, in its own process, at its first Triton compile, to the ptxas that
a CUDA build of torch ships in `torch/bin` (torch 2.11-2.13:
`torch._inductor.runtime.compile_tasks._set_triton_ptxas_path`, which leaves a variable that is
set alone). From then on every Triton compile in that process, a backend's too, takes torch's
ptxas, and the ptxas version in Triton's cache key changes with it, but only where no compile
had read the version before (Triton keeps the first version it reads, per process and arch).

So in a run whose processes had met inductor at different times (an item that compiles with
inductor, the torch.compile layer of a failure's attribution), one kernel signature was
assembled by two ptxas versions under two cache keys, or by torch's under the key of Triton's.
On an H200 (2026-11-30, torch 2.11.0+cu130, triton 3.6.0) Triton's own ptxas is CUDA 12.8's
and torch's CUDA 13.0's; one inductor compile switched a process from one to the other
(reports/published/2026-11-30-nvidia-h200-compile-key/), and whole reference-suite runs met 1,014
to 1,017 distinct Triton kernels for 882 kernel signatures where others met 882.

`pin_ptxas` applies inductor's rule before any process compiles: where the variable is unset
and torch ships an executable ptxas, every process of the run uses torch's, as each would once
inductor ran in it. A variable the user set is kept. Called in each pytest process's
`pytest_configure`; xdist and isolation workers inherit the variable from the process that
starts them.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

PTXAS_ENV = "TRITON_PTXAS_PATH"


@dataclass(frozen=True)
class PtxasChoice:
    path: str | None  # what TRITON_PTXAS_PATH names after `pin_ptxas` (None: Triton's own)
    why: str

    def line(self) -> str:
        return f"Triton's ptxas: {self.path or 'the one Triton bundles'} ({self.why})"


def torch_ptxas(torch_dir: Path | None = None) -> Path | None:
    """The ptxas a CUDA build of torch ships (None where it ships none, as CPU builds do)."""
    if torch_dir is None:
        import torch

        torch_dir = Path(torch.__file__).parent
    ptxas = torch_dir / "bin" / "ptxas"
    return ptxas if ptxas.is_file() and os.access(ptxas, os.X_OK) else None


def pin_ptxas(
    environ: MutableMapping[str, str] = os.environ, torch_dir: Path | None = None
) -> PtxasChoice:
    """Sets TRITON_PTXAS_PATH to torch's ptxas where it is unset and torch ships one (see the
    module docstring); what the run's processes will use, and why."""
    chosen = environ.get(PTXAS_ENV)
    if chosen is not None:
        return PtxasChoice(chosen, f"{PTXAS_ENV} as set")
    ptxas = torch_ptxas(torch_dir)
    if ptxas is None:
        return PtxasChoice(None, "torch ships none")
    environ[PTXAS_ENV] = str(ptxas)
    return PtxasChoice(str(ptxas), "torch's, which inductor would set: one ptxas for every process")
