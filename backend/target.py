"""Which GPU class the generated code is for, and what that class can do.

Two targets matter for one compiled function: the one the kernels run on (the GPU found here, or
the Triton interpreter on a CPU-only machine, which then plays the role of the configured arch)
and the one its code artifacts are cross-compiled for (`RunOptions.target_arch`, else the GPU
found here, else sm90). Capabilities decide code paths: tensor descriptors (TMA) need sm90+, fp8
tensor-core MMA needs sm89+.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import torch

from gemmconf_reference import compat

DEFAULT_ARCH = "sm90"
INTERPRETER_PROGRAMS = 4  # "SM count" the persistent kernel uses in the interpreter
# SM counts of the flagship part of each class (A100, L40S, H100 SXM, B200, RTX 5090): what
# artifacts for an arch assume when no such GPU is here
TYPICAL_SMS = {80: 108, 89: 142, 90: 132, 100: 148, 120: 170}


@dataclass(frozen=True)
class Target:
    arch: str  # "sm80", "sm90", "sm100", ...
    capability: int  # 80, 90, 100, ...
    interpreter: bool  # kernels run in the Triton interpreter, not on this arch
    num_sms: int

    @property
    def has_tma(self) -> bool:
        return self.capability >= 90

    @property
    def has_fp8_mma(self) -> bool:
        return self.capability >= 89

    @property
    def has_tcgen05(self) -> bool:
        """Datacenter Blackwell (sm100/103/110): tcgen05 MMA into tensor memory. Consumer
        Blackwell (sm120+) has neither and runs mma.sync (with fp8 and block-scaled variants)."""
        return 100 <= self.capability < 120

    @property
    def arch_class(self) -> str:
        """The tile-table row: "interpreter", "sm80" (Ampere/Ada), "sm90", "sm100" or "sm120"."""
        if self.interpreter:
            return "interpreter"
        if self.capability >= 120:
            return "sm120"
        if self.capability >= 100:
            return "sm100"
        if self.capability >= 90:
            return "sm90"
        return "sm80"

    def compiled(self) -> Target:
        """The same arch as a real GPU compiles for it (what artifacts show)."""
        return replace(self, interpreter=False)


def parse_arch(arch: str) -> int:
    """ "sm90" / "sm_90a" / "90" -> 90."""
    match = re.fullmatch(r"(?:sm_?)?(\d+)[a-z]?", arch.strip().lower())
    if match is None:
        raise ValueError(f"unknown target arch {arch!r}: expected e.g. 'sm80', 'sm90', 'sm100'")
    return int(match.group(1))


def detect(target_arch: str | None = None) -> Target:
    """The target kernels run on here; `target_arch` names the arch when there is no GPU."""
    if torch.cuda.is_available() and not compat.interpreting():
        major, minor = torch.cuda.get_device_capability()
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        return Target(f"sm{major}{minor}", major * 10 + minor, False, props.multi_processor_count)
    capability = parse_arch(target_arch or DEFAULT_ARCH)
    return Target(f"sm{capability}", capability, True, INTERPRETER_PROGRAMS)


def for_artifacts(run_target: Target, target_arch: str | None) -> Target:
    """The arch artifacts are compiled for: the configured one, else the one kernels run as."""
    capability = run_target.capability if target_arch is None else parse_arch(target_arch)
    if not run_target.interpreter and capability == run_target.capability:
        return run_target
    known = max((c for c in TYPICAL_SMS if c <= capability), default=min(TYPICAL_SMS))
    return Target(f"sm{capability}", capability, False, TYPICAL_SMS[known])
