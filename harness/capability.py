"""What this machine can run, and why an item cannot (docs/design.md, "Capability").

`detect()` describes the device the run uses as a `Capability`; a scenario states what it needs as
`Requirements`; `unmet(req, cap)` says whether the item runs here and, if not, why, in words that
go straight into the skip reason and the reports.

Hardware classes, in generation order: cpu < sm80 < sm89 < sm90 < sm100 < sm120. A GPU's class
is the largest class whose compute capability is <= the GPU's: sm86/sm87 count as sm80, sm89
(Ada) is sm89, sm90 is sm90, cc 10.x and 11.x (sm100, sm103, sm110: datacenter Blackwell with
tcgen05 MMA and tensor memory) are sm100, and cc >= 12.0 (consumer Blackwell: RTX 50xx, RTX PRO,
DGX Spark) is sm120. The order is not a chain of features: sm120 has TMA, fp8 and block-scaled
MMA but neither tcgen05 nor tensor memory, so it meets `min_class` sm80, sm89, sm90 and sm120 but
not sm100 (`meets_class`). `max_class` bounds from above in generation order: `max_class: sm90`
holds on Hopper and below, never on either Blackwell. For code checks a class is one
architecture family: `target_class` gives a GPU's class only when the GPU is of that class's
family (same major), and None otherwise.

A GPU below sm80 has no class: `detect()` then describes the CPU, and says in its name that the
GPU was left out, so CPU items still run and GPU items skip with a reason.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

HARDWARE_CLASSES = ("cpu", "sm80", "sm89", "sm90", "sm100", "sm120")  # generation order
GPU_CLASSES = HARDWARE_CLASSES[1:]
FEATURES = ("fp8", "tma")
DEVICES = ("any", "cpu", "gpu")

_CLASS_CC = {"sm80": (8, 0), "sm89": (8, 9), "sm90": (9, 0), "sm100": (10, 0), "sm120": (12, 0)}
# Classes a later class does not meet as a minimum: consumer Blackwell lacks tcgen05/TMEM.
_NOT_MET = {"sm120": frozenset({"sm100"})}
# the lowest class that has a feature: the class whose absence a feature skip is blamed on
_FEATURE_CLASS = {"fp8": "sm89", "tma": "sm90"}
_FEATURE_WORDS = {"fp8": "fp8 GEMM support", "tma": "TMA (tensor descriptors)"}


def _rank(hardware_class: str) -> int:
    return HARDWARE_CLASSES.index(hardware_class)


def meets_class(have: str, wanted: str) -> bool:
    """Whether hardware of class `have` meets `min_class: wanted` (module docstring)."""
    return _rank(have) >= _rank(wanted) and wanted not in _NOT_MET.get(have, frozenset())


def class_of_capability(capability: tuple[int, int]) -> str | None:
    """The hardware class of a GPU with this compute capability; None below sm80."""
    found = None
    for name, cc in _CLASS_CC.items():
        if tuple(capability) >= cc:
            found = name
    return found


@dataclass(frozen=True)
class Capability:
    """The device a run uses and what it supports."""

    device: str  # "cpu" or "cuda"
    name: str  # "CPU (x86_64, 2 cores)" or torch.cuda.get_device_name()
    capability: tuple[int, int] | None  # (9, 0); None on a CPU
    hardware_class: str  # one of HARDWARE_CLASSES
    fp8: bool  # torch fp8 GEMMs (`torch._scaled_mm`) run on this device
    tma: bool  # sm90+ and triton has tensor descriptors
    memory_bytes: int | None  # GPU memory; system memory on a CPU; None when unknown
    torch_version: str
    triton_version: str | None
    cuda_version: str | None
    # fp8 GEMMs on the CPU, for device "cpu" items on a GPU machine; None: unknown (not probed)
    cpu_fp8: bool | None = None

    @property
    def is_gpu(self) -> bool:
        return self.device != "cpu"

    @property
    def arch(self) -> str | None:
        """The exact architecture, "sm86" for an RTX A6000; None on a CPU."""
        return None if self.capability is None else f"sm{self.capability[0]}{self.capability[1]}"

    def describe(self) -> str:
        """How a skip reason names the device: "CPU", "NVIDIA A100-SXM4-80GB, sm80"."""
        return f"{self.name}, {self.arch}" if self.is_gpu else "CPU"

    def as_record(self) -> dict[str, Any]:
        """The `environment` entry of results.json (JSON types only); `triton_interpret: true`
        where Triton's kernels ran in its interpreter (`TRITON_INTERPRET=1`), whose own bf16
        defects (docs/measurements.md) a run on it may meet: two runs of one backend, compiled
        and interpreted, read apart (a FlagGems trial, 2026-12-02)."""
        record = {
            "device": self.device,
            "device_name": self.name,
            "capability": None if self.capability is None else ".".join(map(str, self.capability)),
            "hardware_class": self.hardware_class,
            "fp8": self.fp8,
            "tma": self.tma,
            "memory_bytes": self.memory_bytes,
            "torch": self.torch_version,
            "triton": self.triton_version,
            "cuda": self.cuda_version,
        }
        if _interpreting():
            record["triton_interpret"] = True
        return record


def _interpreting() -> bool:
    """Whether Triton runs its kernels in the interpreter, as Triton reads TRITON_INTERPRET
    (its knobs: "1", "true", "on" and "yes" are, "0", "false" and "2" are not)."""
    try:
        from triton import knobs
    except ImportError:  # no Triton: nothing of it runs, interpreted or not
        return False
    return bool(knobs.runtime.interpret)


def detect() -> Capability:
    """The Capability of the device this process uses (GPU 0 of CUDA_VISIBLE_DEVICES, else CPU).

    Cached per value of CUDA_VISIBLE_DEVICES (an xdist worker pins its GPU before it asks). On a
    machine without a usable GPU nothing initialises CUDA; on a GPU machine reading the compute
    capability does (so an isolation scheme that forks must fork before, or use spawn).
    """
    return _detect(os.environ.get("CUDA_VISIBLE_DEVICES"))


@functools.cache
def _detect(cuda_visible_devices: str | None) -> Capability:
    import torch

    versions = {
        "torch_version": torch.__version__,
        "triton_version": _package_version("triton", "pytorch-triton"),
        "cuda_version": torch.version.cuda,
    }
    skipped_gpu = ""
    # is_available() asks the driver for a device count without creating a context
    if torch.cuda.is_available() and torch.version.hip is not None:
        skipped_gpu = "; ROCm GPU left out: the hardware classes are NVIDIA's"
    elif torch.cuda.is_available():
        index = torch.cuda.current_device()
        capability = tuple(torch.cuda.get_device_capability(index))
        name = torch.cuda.get_device_name(index)
        hardware_class = class_of_capability(capability)
        if hardware_class is not None:
            return Capability(
                device="cuda",
                name=name,
                capability=(capability[0], capability[1]),
                hardware_class=hardware_class,
                fp8=capability >= _CLASS_CC["sm89"],
                tma=capability >= _CLASS_CC["sm90"] and _triton_has_tensor_descriptors(),
                memory_bytes=torch.cuda.get_device_properties(index).total_memory,
                cpu_fp8=_cpu_fp8_gemm_works(),
                **versions,
            )
        skipped_gpu = f"; {name} (sm{capability[0]}{capability[1]}) left out: below sm80"
    fp8 = _cpu_fp8_gemm_works()
    return Capability(
        device="cpu",
        name=f"CPU ({platform.machine() or 'unknown'}, {_cpu_count()} cores{skipped_gpu})",
        capability=None,
        hardware_class="cpu",
        fp8=fp8,
        tma=False,
        memory_bytes=_system_memory(),
        cpu_fp8=fp8,
        **versions,
    )


def _cpu_fp8_gemm_works() -> bool:
    """Whether `torch._scaled_mm` runs on the CPU, tensorwise and rowwise (torch 2.13 does)."""
    import torch

    try:
        a = torch.ones(16, 32).to(torch.float8_e4m3fn)
        b = torch.ones(16, 32).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm needs
        one = torch.tensor(1.0)
        tensorwise = torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        rowwise = torch._scaled_mm(
            a, b, scale_a=torch.ones(16, 1), scale_b=torch.ones(1, 16), out_dtype=torch.bfloat16
        )
    except (AttributeError, NotImplementedError, RuntimeError, TypeError):
        return False
    return bool((tensorwise.float() == 32).all() and (rowwise.float() == 32).all())


def _triton_has_tensor_descriptors() -> bool:
    try:
        import triton.language as tl
    except ImportError:
        return False
    return hasattr(tl, "make_tensor_descriptor")


def _package_version(*names: str) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _cpu_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _system_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


@dataclass(frozen=True)
class Requirements:
    """What a scenario needs to run; the default runs anywhere.

    device "cpu" runs on the CPU (every machine has one; on a GPU machine only
    `Capability.cpu_fp8` is checked for it); "any" runs on the run's device, GPU or CPU; "gpu"
    needs a GPU of at least `min_class` (sm80 when not given). A `min_class` implies a GPU.
    `target` asks for code checks of that class: met when `target_class` (--target-arch, else the
    GPU's class) is that class. Contradictions (device "cpu" with a GPU class or TMA) and unknown
    names raise ValueError.
    """

    device: str = "any"
    min_class: str | None = None
    features: tuple[str, ...] = ()
    memory_gb: float | None = None  # decimal GB (1e9 bytes), as GPUs are sold
    target: str | None = None
    max_class: str | None = None  # holds only on GPUs up to this class (CPUs always qualify)

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", tuple(self.features))
        problems = []
        if self.device not in DEVICES:
            problems.append(f"device {self.device!r} is not one of {', '.join(DEVICES)}")
        if self.min_class is not None and self.min_class not in GPU_CLASSES:
            problems.append(f"min_class {self.min_class!r} is not one of {', '.join(GPU_CLASSES)}")
        unknown = [f for f in self.features if f not in FEATURES]
        if unknown:
            problems.append(f"unknown features {unknown}; known: {', '.join(FEATURES)}")
        if self.target is not None and self.target not in GPU_CLASSES:
            problems.append(f"target {self.target!r} is not one of {', '.join(GPU_CLASSES)}")
        if self.max_class is not None and self.max_class not in GPU_CLASSES:
            problems.append(f"max_class {self.max_class!r} is not one of {', '.join(GPU_CLASSES)}")
        elif (
            self.max_class is not None
            and self.min_class in GPU_CLASSES
            and _rank(self.min_class) > _rank(self.max_class)
        ):
            problems.append(f"min_class {self.min_class} is above max_class {self.max_class}")
        if self.memory_gb is not None and not self.memory_gb > 0:
            problems.append(f"memory_gb must be positive, got {self.memory_gb!r}")
        if self.device == "cpu" and (self.min_class is not None or "tma" in self.features):
            problems.append("device 'cpu' cannot also need a GPU class or TMA")
        if problems:
            raise ValueError("; ".join(problems))


class Unmet(str):
    """Why an item cannot run here: the reason itself (a str), plus the class it lacks.

    `missing_class` is the hardware class whose absence caused the skip (the item's GPU class, the
    class that brings a missing feature, or the code-check target), or None when no class would
    help (memory). `--require-hardware` reads it through `require_hardware_violation`.
    """

    missing_class: str | None

    def __new__(cls, reason: str, missing_class: str | None) -> Unmet:
        unmet = super().__new__(cls, reason)
        unmet.missing_class = missing_class
        return unmet

    def __getnewargs__(self) -> tuple[str, str | None]:  # type: ignore[override]
        return (str(self), self.missing_class)  # so that pickling (xdist) keeps the class

    @property
    def reason(self) -> str:
        return str(self)


def unmet(req: Requirements, cap: Capability, *, target_arch: str | None = None) -> Unmet | None:
    """None when an item with `req` can run on `cap`, else the reason (an `Unmet`, a str)."""
    found = f"(found {cap.describe()})"
    if req.device == "gpu" or req.min_class is not None:
        wanted = req.min_class or "sm80"
        if not cap.is_gpu:
            what = f"needs {req.min_class}" if req.min_class else "needs a GPU"
            return Unmet(f"{what} {found}", wanted)
        if not meets_class(cap.hardware_class, wanted):
            return Unmet(f"needs {wanted} {found}", wanted)
    too_new = req.max_class is not None and _rank(cap.hardware_class) > _rank(req.max_class)
    if too_new and cap.is_gpu and req.device != "cpu":
        # no class is missing: the scenario's claim does not hold on newer hardware
        return Unmet(f"holds only up to {req.max_class} {found}", None)
    if req.device == "cpu" and cap.is_gpu:
        # the item runs on this GPU machine's CPU: the GPU's features and memory do not apply
        if "fp8" in req.features and cap.cpu_fp8 is False:
            return Unmet(
                f"needs fp8 GEMM support on the CPU (torch {cap.torch_version} has none)", None
            )
        return None
    for feature in req.features:
        if not getattr(cap, feature):
            extra = ""
            if feature == "tma" and cap.is_gpu and cap.capability >= _CLASS_CC["sm90"]:
                extra = f"; triton {cap.triton_version} has no tensor descriptors"
            reason = f"needs {_FEATURE_WORDS[feature]} (found {cap.describe()}{extra})"
            return Unmet(reason, _FEATURE_CLASS[feature])
    memory = cap.memory_bytes
    if req.memory_gb is not None and memory is not None and memory < req.memory_gb * 1e9:
        kind = "GPU memory" if cap.is_gpu else "memory"
        return Unmet(f"needs {req.memory_gb:g} GB {kind} (found {_gb(memory)} GB)", None)
    if req.target is not None:
        target = target_class(cap, target_arch)
        if target != req.target:
            where = f"target is {target}" if target_arch else cap.describe()
            return Unmet(
                f"code checks for {req.target} need an {req.target} GPU or "
                f"--target-arch {req.target} (found {where})",
                req.target,
            )
    return None


def item_device(req: Requirements, run_device: str) -> str:
    """Where an item runs: on the CPU when it asks for one (`requires: {device: cpu}`), else on
    the run's device."""
    return "cpu" if req.device == "cpu" else run_device


def hardware_class_of(req: Requirements) -> str:
    """The class marker of an item: "cpu" when it can run on a CPU, else its least GPU class.

    A plain GPU requirement is sm80; a TMA requirement is at least sm90; fp8 alone stays "cpu"
    (torch runs fp8 GEMMs on the CPU) unless the item needs a GPU, then it is at least sm89. A code
    check `target` does not raise the class: --target-arch meets it on a CPU.
    """
    if req.device == "cpu":
        return "cpu"
    classes = [req.min_class] if req.min_class else []
    if req.device == "gpu":
        classes.append("sm80")
    if "tma" in req.features:
        classes.append(_FEATURE_CLASS["tma"])
    if classes and "fp8" in req.features:
        classes.append(_FEATURE_CLASS["fp8"])
    return max(classes, key=_rank) if classes else "cpu"


def require_hardware_violation(required: Collection[str], reason_class: str | None) -> bool:
    """Whether a skip blamed on `reason_class` fails a run started with --require-hardware.

    `required` holds the classes the run must have (`parse_required_hardware`); `reason_class` is
    `Unmet.missing_class` of the skip. Matching is exact: `--require-hardware sm90` fails the
    items that skipped for want of sm90 (so a misconfigured H100 runner cannot pass by skipping),
    not the sm100 items it rightly skips; name several classes to cover several.
    """
    return reason_class is not None and reason_class in required


def parse_required_hardware(values: Iterable[str]) -> frozenset[str]:
    """`--require-hardware` values ("sm90", "sm80,sm90") as a set; ValueError on unknown ones."""
    classes = {c.strip() for v in values for c in v.split(",") if c.strip()}
    unknown = sorted(classes - set(HARDWARE_CLASSES))
    if unknown:
        raise ValueError(
            f"unknown hardware class {', '.join(unknown)}; known: {', '.join(HARDWARE_CLASSES)}"
        )
    return frozenset(classes)


def target_class(cap: Capability, target_arch: str | None) -> str | None:
    """The class whose code the code checks expect: --target-arch if given, else the GPU's class.

    None on a CPU without --target-arch, and on a GPU that is not of its class's architecture
    family (an sm120 GPU generates no sm100 code).
    """
    if target_arch is not None:
        if target_arch not in GPU_CLASSES:
            known = ", ".join(GPU_CLASSES)
            raise ValueError(f"--target-arch {target_arch!r} is not one of {known}")
        return target_arch
    if not cap.is_gpu or cap.capability is None:
        return None
    if cap.capability[0] != _CLASS_CC[cap.hardware_class][0]:
        return None
    return cap.hardware_class


def _gb(n_bytes: int) -> str:
    return f"{n_bytes / 1e9:.1f}".removesuffix(".0")


def gpu_memory_bytes() -> int | None:
    """The smallest GPU's memory, without initialising CUDA in this process (nvidia-smi)."""
    out = _nvidia_smi("memory.total")
    sizes = [int(v) for v in out if v.isdigit()]
    return min(sizes) << 20 if sizes else None  # MiB


def gpu_ids() -> list[str]:
    """GPU indices without initialising CUDA in this process (nvidia-smi, when present)."""
    return _nvidia_smi("index")


def _nvidia_smi(query: str) -> list[str]:
    import shutil
    import subprocess

    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]
