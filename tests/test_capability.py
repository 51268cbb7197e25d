"""Tests of harness/capability.py: hardware classes, skip reasons and code-check targets."""

from __future__ import annotations

import json
import pickle

import pytest
import torch

from gemmconf.capability import (
    HARDWARE_CLASSES,
    Capability,
    Requirements,
    Unmet,
    class_of_capability,
    detect,
    hardware_class_of,
    parse_required_hardware,
    require_hardware_violation,
    target_class,
    unmet,
)

VERSIONS = {"torch_version": "2.11.0+cu130", "triton_version": "3.6.0", "cuda_version": "13.0"}


def gpu(name: str, cc: tuple[int, int], memory_gb: float, *, tma: bool | None = None) -> Capability:
    hardware_class = class_of_capability(cc)
    assert hardware_class is not None
    return Capability(
        device="cuda",
        name=name,
        capability=cc,
        hardware_class=hardware_class,
        fp8=cc >= (8, 9),
        tma=cc >= (9, 0) if tma is None else tma,
        memory_bytes=int(memory_gb * 1e9),
        **VERSIONS,
    )


CPU = Capability(
    device="cpu",
    name="CPU (x86_64, 2 cores)",
    capability=None,
    hardware_class="cpu",
    fp8=True,
    tma=False,
    memory_bytes=24_000_000_000,
    torch_version="2.13.0+cpu",
    triton_version="3.7.1",
    cuda_version=None,
)
A100 = gpu("NVIDIA A100-SXM4-40GB", (8, 0), 42.5)
L4 = gpu("NVIDIA L4", (8, 9), 24)
H100 = gpu("NVIDIA H100 80GB HBM3", (9, 0), 85)
B200 = gpu("NVIDIA B200", (10, 0), 190)
RTX5090 = gpu("NVIDIA GeForce RTX 5090", (12, 0), 34)


@pytest.mark.parametrize(
    "cc, expected",
    [
        ((7, 5), None),
        ((8, 0), "sm80"),
        ((8, 6), "sm80"),
        ((8, 7), "sm80"),
        ((8, 9), "sm89"),
        ((9, 0), "sm90"),
        ((10, 0), "sm100"),
        ((10, 3), "sm100"),
        ((11, 0), "sm100"),
        ((12, 0), "sm120"),
        ((12, 1), "sm120"),
    ],
)
def test_class_of_capability_is_the_largest_class_not_above_the_gpu(cc, expected):
    assert class_of_capability(cc) == expected


def test_default_requirements_run_everywhere():
    for cap in (CPU, A100, L4, H100, B200):
        assert unmet(Requirements(), cap) is None
        assert unmet(Requirements(device="cpu", features=("fp8",)), cap) is None


@pytest.mark.parametrize(
    "req, cap, reason, missing",
    [
        (Requirements(min_class="sm90"), CPU, "needs sm90 (found CPU)", "sm90"),
        (Requirements(device="gpu"), CPU, "needs a GPU (found CPU)", "sm80"),
        (
            Requirements(min_class="sm90"),
            A100,
            "needs sm90 (found NVIDIA A100-SXM4-40GB, sm80)",
            "sm90",
        ),
        (
            Requirements(min_class="sm89"),
            A100,
            "needs sm89 (found NVIDIA A100-SXM4-40GB, sm80)",
            "sm89",
        ),
        (
            Requirements(min_class="sm100"),
            H100,
            "needs sm100 (found NVIDIA H100 80GB HBM3, sm90)",
            "sm100",
        ),
        (
            Requirements(device="gpu", features=("fp8",)),
            A100,
            "needs fp8 GEMM support (found NVIDIA A100-SXM4-40GB, sm80)",
            "sm89",
        ),
        (
            Requirements(features=("fp8",)),
            A100,
            "needs fp8 GEMM support (found NVIDIA A100-SXM4-40GB, sm80)",
            "sm89",
        ),
        (
            Requirements(features=("tma",)),
            L4,
            "needs TMA (tensor descriptors) (found NVIDIA L4, sm89)",
            "sm90",
        ),
        (
            Requirements(features=("tma",)),
            CPU,
            "needs TMA (tensor descriptors) (found CPU)",
            "sm90",
        ),
        (
            Requirements(device="gpu", memory_gb=80),
            A100,
            "needs 80 GB GPU memory (found 42.5 GB)",
            None,
        ),
        (Requirements(memory_gb=100), H100, "needs 100 GB GPU memory (found 85 GB)", None),
        (Requirements(memory_gb=32), CPU, "needs 32 GB memory (found 24 GB)", None),
        (
            Requirements(target="sm90"),
            CPU,
            "code checks for sm90 need an sm90 GPU or --target-arch sm90 (found CPU)",
            "sm90",
        ),
        (
            Requirements(target="sm90"),
            A100,
            "code checks for sm90 need an sm90 GPU or --target-arch "
            "sm90 (found NVIDIA A100-SXM4-40GB, sm80)",
            "sm90",
        ),
        (
            Requirements(target="sm100"),
            RTX5090,
            "code checks for sm100 need an sm100 GPU or "
            "--target-arch sm100 (found NVIDIA GeForce RTX 5090, sm120)",
            "sm100",
        ),
    ],
)
def test_unmet_reasons(req, cap, reason, missing):
    found = unmet(req, cap)
    assert found == reason
    assert isinstance(found, Unmet)
    assert found.reason == reason
    assert found.missing_class == missing


@pytest.mark.parametrize(
    "req, caps",
    [
        (Requirements(min_class="sm80"), (A100, L4, H100, B200)),
        (Requirements(device="gpu", features=("fp8",)), (L4, H100, B200)),
        (Requirements(features=("fp8",)), (CPU, L4, H100, B200)),
        (Requirements(min_class="sm90", features=("fp8", "tma")), (H100, B200)),
        (Requirements(device="gpu", memory_gb=80), (H100, B200)),
        (Requirements(min_class="sm100"), (B200,)),
        (Requirements(min_class="sm90", features=("fp8", "tma")), (H100, B200, RTX5090)),
        (Requirements(min_class="sm120"), (RTX5090,)),
        (Requirements(max_class="sm90"), (CPU, A100, L4, H100)),
        (Requirements(device="cpu", max_class="sm80"), (CPU, H100, B200)),
        (Requirements(min_class="sm89", max_class="sm90"), (L4, H100)),
    ],
)
def test_requirements_met(req, caps):
    for cap in caps:
        assert unmet(req, cap) is None, cap.name


def test_consumer_blackwell_is_no_datacenter_blackwell():
    reason = unmet(Requirements(min_class="sm100"), RTX5090)
    assert reason == "needs sm100 (found NVIDIA GeForce RTX 5090, sm120)"
    assert reason.missing_class == "sm100"
    assert unmet(Requirements(min_class="sm120"), B200).missing_class == "sm120"


def test_max_class_skips_newer_gpus_without_blaming_a_missing_class():
    below_blackwell = Requirements(device="gpu", max_class="sm90")
    for cap in (B200, RTX5090):
        reason = unmet(below_blackwell, cap)
        assert reason == f"holds only up to sm90 (found {cap.name}, {cap.arch})"
        # --require-hardware sm100 must not fail a run for rightly skipping these
        assert not require_hardware_violation(frozenset({"sm100", "sm120"}), reason.missing_class)
    assert unmet(Requirements(max_class="sm100"), B200) is None
    assert unmet(Requirements(max_class="sm100"), RTX5090) is not None


def test_unknown_memory_does_not_skip():
    cap = Capability(**{**CPU.__dict__, "memory_bytes": None})
    assert unmet(Requirements(memory_gb=1000), cap) is None


def test_tma_reason_names_triton_when_the_gpu_has_tma_but_triton_has_no_descriptors():
    old_triton = gpu("NVIDIA H100 80GB HBM3", (9, 0), 85, tma=False)
    assert unmet(Requirements(features=("tma",)), old_triton) == (
        "needs TMA (tensor descriptors) (found NVIDIA H100 80GB HBM3, sm90; triton 3.6.0 has no "
        "tensor descriptors)"
    )


def test_cpu_without_fp8_gemms_skips_fp8_items():
    no_fp8 = Capability(**{**CPU.__dict__, "fp8": False})
    reason = unmet(Requirements(features=("fp8",)), no_fp8)
    assert reason == "needs fp8 GEMM support (found CPU)"
    assert reason.missing_class == "sm89"


def test_cpu_items_on_a_gpu_machine_use_the_cpus_fp8_support():
    cpu_item = Requirements(device="cpu", features=("fp8",))
    assert unmet(cpu_item, A100) is None  # cpu_fp8 unknown: not a reason to skip
    no_cpu_fp8 = Capability(**{**H100.__dict__, "cpu_fp8": False})
    reason = unmet(cpu_item, no_cpu_fp8)
    assert reason == "needs fp8 GEMM support on the CPU (torch 2.11.0+cu130 has none)"
    assert reason.missing_class is None
    assert unmet(cpu_item, Capability(**{**A100.__dict__, "cpu_fp8": True})) is None


def test_code_check_target_rules():
    sm90_checks = Requirements(target="sm90")
    assert unmet(sm90_checks, H100) is None
    assert unmet(sm90_checks, CPU, target_arch="sm90") is None
    assert unmet(sm90_checks, A100, target_arch="sm90") is None
    # --target-arch decides which code is generated, so it wins over the GPU's own class
    crossed = unmet(sm90_checks, H100, target_arch="sm100")
    assert crossed == (
        "code checks for sm90 need an sm90 GPU or --target-arch sm90 (found target is sm100)"
    )
    assert unmet(Requirements(target="sm100"), B200) is None


@pytest.mark.parametrize(
    "cap, target_arch, expected",
    [
        (CPU, None, None),
        (CPU, "sm90", "sm90"),
        (A100, None, "sm80"),
        (L4, None, "sm89"),
        (H100, None, "sm90"),
        (H100, "sm100", "sm100"),
        (B200, None, "sm100"),
        (gpu("NVIDIA RTX A6000", (8, 6), 48), None, "sm80"),  # same family: sm80 code
        (RTX5090, None, "sm120"),  # its own family, not sm100 code
        (RTX5090, "sm100", "sm100"),
        (gpu("NVIDIA Thor", (11, 0), 128), None, None),  # class sm100, but not sm100 code
    ],
)
def test_target_class(cap, target_arch, expected):
    assert target_class(cap, target_arch) == expected


def test_target_class_rejects_unknown_arch():
    with pytest.raises(ValueError, match="--target-arch 'sm86' is not one of sm80, sm89"):
        target_class(CPU, "sm86")


@pytest.mark.parametrize(
    "req, marker",
    [
        (Requirements(), "cpu"),
        (Requirements(device="cpu", features=("fp8",)), "cpu"),
        (Requirements(features=("fp8",)), "cpu"),  # torch runs fp8 GEMMs on the CPU
        (Requirements(target="sm90"), "cpu"),  # --target-arch sm90 meets it on a CPU
        (Requirements(memory_gb=8), "cpu"),
        (Requirements(device="gpu"), "sm80"),
        (Requirements(device="gpu", features=("fp8",)), "sm89"),
        (Requirements(features=("tma",)), "sm90"),
        (Requirements(min_class="sm90"), "sm90"),
        (Requirements(min_class="sm80", features=("tma",)), "sm90"),
        (Requirements(min_class="sm100", features=("fp8",)), "sm100"),
        (Requirements(min_class="sm120"), "sm120"),
        (Requirements(target="sm120"), "cpu"),
        (Requirements(max_class="sm90"), "cpu"),
        (Requirements(device="gpu", max_class="sm90"), "sm80"),
    ],
)
def test_hardware_class_of(req, marker):
    assert hardware_class_of(req) == marker
    assert marker in HARDWARE_CLASSES


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"device": "tpu"}, "device 'tpu' is not one of any, cpu, gpu"),
        ({"min_class": "sm86"}, "min_class 'sm86' is not one of sm80, sm89, sm90, sm100, sm120"),
        ({"max_class": "cpu"}, "max_class 'cpu' is not one of sm80"),
        ({"min_class": "sm100", "max_class": "sm90"}, "min_class sm100 is above max_class sm90"),
        ({"min_class": "cpu"}, "min_class 'cpu' is not one of"),
        ({"features": ("bf16",)}, "unknown features ['bf16']"),
        ({"target": "sm75"}, "target 'sm75' is not one of"),
        ({"memory_gb": 0}, "memory_gb must be positive"),
        (
            {"device": "cpu", "min_class": "sm90"},
            "device 'cpu' cannot also need a GPU class or TMA",
        ),
        (
            {"device": "cpu", "features": ("tma",)},
            "device 'cpu' cannot also need a GPU class or TMA",
        ),
    ],
)
def test_contradictory_or_unknown_requirements_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Requirements(**kwargs)


def test_requirements_are_hashable_even_from_a_list():
    req = Requirements(features=["fp8"])  # type: ignore[arg-type]
    assert req.features == ("fp8",)
    assert hash(req) == hash(Requirements(features=("fp8",)))


def test_require_hardware_turns_skips_for_that_class_into_failures():
    required = parse_required_hardware(["sm90"])
    on_a100 = unmet(Requirements(min_class="sm90"), A100)
    assert require_hardware_violation(required, on_a100.missing_class)
    # an H100 runner rightly skips sm100 items and items too big for its memory
    assert not require_hardware_violation(
        required, unmet(Requirements(min_class="sm100"), H100).missing_class
    )
    too_big = unmet(Requirements(device="gpu", memory_gb=141), H100)
    assert not require_hardware_violation(required, too_big.missing_class)
    # a "GPU" runner that came up without its GPU fails its sm90 code checks
    checks = unmet(Requirements(target="sm90"), CPU)
    assert require_hardware_violation(required, checks.missing_class)
    assert not require_hardware_violation(frozenset(), "sm90")


def test_parse_required_hardware():
    assert parse_required_hardware(["sm80,sm90", " sm100 "]) == {"sm80", "sm90", "sm100"}
    assert parse_required_hardware([]) == frozenset()
    with pytest.raises(ValueError, match="unknown hardware class sm86"):
        parse_required_hardware(["sm86"])


def test_unmet_survives_pickling():
    reason = unmet(Requirements(min_class="sm90"), CPU)
    copy = pickle.loads(pickle.dumps(reason))
    assert copy == reason
    assert copy.missing_class == "sm90"


def test_as_record_is_json():
    record = H100.as_record()
    assert json.loads(json.dumps(record)) == record
    assert record["capability"] == "9.0"
    assert record["device_name"] == "NVIDIA H100 80GB HBM3"
    assert record["hardware_class"] == "sm90"
    assert CPU.as_record()["capability"] is None


def test_a_record_says_where_triton_s_interpreter_ran(monkeypatch):
    """A FlagGems trial: its compiled and interpreted runs differed only in file name."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert CPU.as_record()["triton_interpret"] is True
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert "triton_interpret" not in CPU.as_record()
    monkeypatch.setenv("TRITON_INTERPRET", "false")  # as Triton reads it: not interpreting
    assert "triton_interpret" not in CPU.as_record()
    monkeypatch.delenv("TRITON_INTERPRET")
    assert "triton_interpret" not in H100.as_record()


def _cpu_fp8_probe() -> bool:
    try:
        x = torch.randn(32, 64).to(torch.float8_e4m3fn)
        w = torch.randn(48, 64).to(torch.float8_e4m3fn)
        torch._scaled_mm(
            x, w.t(), scale_a=torch.tensor(1.0), scale_b=torch.tensor(1.0), out_dtype=torch.bfloat16
        )
        torch._scaled_mm(
            x, w.t(), scale_a=torch.ones(32, 1), scale_b=torch.ones(1, 48), out_dtype=torch.bfloat16
        )
    except (AttributeError, NotImplementedError, RuntimeError, TypeError):
        return False
    return True


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks detection on a machine without GPU")
def test_detect_on_a_cpu_machine():
    cap = detect()
    assert cap.device == "cpu"
    assert cap.hardware_class == "cpu"
    assert cap.capability is None
    assert cap.name.startswith("CPU (")
    assert cap.fp8 == _cpu_fp8_probe()
    assert cap.cpu_fp8 == cap.fp8
    assert not cap.tma
    assert cap.torch_version == torch.__version__
    assert detect() is cap  # cached
    assert not torch.cuda.is_initialized()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks detection on a machine without GPU")
def test_detect_with_no_visible_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert detect().device == "cpu"
    assert not torch.cuda.is_initialized()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_detect_on_a_gpu_machine():
    cap = detect()
    cc = torch.cuda.get_device_capability()
    expected = class_of_capability(cc)
    if expected is None:
        assert cap.device == "cpu" and "below sm80" in cap.name
        return
    assert cap.device == "cuda"
    assert cap.capability == tuple(cc)
    assert cap.hardware_class == expected
    assert cap.name == torch.cuda.get_device_name()
    assert cap.fp8 == (tuple(cc) >= (8, 9))
    assert cap.memory_bytes == torch.cuda.get_device_properties(0).total_memory
    assert cap.cpu_fp8 == _cpu_fp8_probe()
    assert unmet(Requirements(device="gpu"), cap) is None
