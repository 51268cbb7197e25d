"""Hardware: --require-hardware, --target-arch, and one GPU (or one OpenMP thread) per xdist
worker."""

from __future__ import annotations

import os
import re

import pytest

from gemmconf import capability
from gemmconf.plugin import options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = options.group(parser)
    group.addoption(
        "--require-hardware",
        action="append",
        default=[],
        metavar="CLASS",
        help="turn a skip for missing CLASS (cpu, sm80, sm89, sm90, sm100, sm120) into a "
        "failure, so a run that should have had the hardware cannot pass by skipping; "
        "repeatable",
    )
    group.addoption(
        "--target-arch",
        default=None,
        metavar="smXY",
        help="code-check target (sm80, sm90, sm100, sm120) for backends that cross-compile "
        "(the reference backend does): checks and items for that class run without "
        "such a GPU",
    )


TARGETS = ("sm80", "sm90", "sm100", "sm120")


def parse_target(text: str | None) -> str | None:
    if text is not None and text not in TARGETS:
        raise pytest.UsageError(f"--target-arch: {text!r} is not one of {', '.join(TARGETS)}")
    return text


def parse_required(values: list[str]) -> frozenset[str]:
    try:
        return capability.parse_required_hardware(values)
    except ValueError as exc:
        raise pytest.UsageError(f"--require-hardware: {exc}") from None


def pin_worker(config: pytest.Config) -> None:
    """xdist workers: one GPU each (before CUDA starts), one OpenMP thread each on a CPU."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    index = int(re.sub(r"\D", "", worker) or 0)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = visible.split(",") if visible else gpu_ids()
    if gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[index % len(gpus)]
    else:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        import torch

        torch.set_num_threads(1)


def gpu_ids() -> list[str]:
    """GPU indices without initialising CUDA in this process (nvidia-smi, when present)."""
    import shutil
    import subprocess

    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]
