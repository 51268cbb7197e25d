"""Tests of the cutlass backend package, gemmconf_cutlass.

Three tiers, each skipping with its reason where the machine lacks what it needs:

1. Python only (needs cutlass_library, from the `cutlass` extra): kernel specs, the rendered
   `.cu` (FileCheck), rendering independent of PYTHONHASHSEED, the ctypes mirror of the launch
   ABI, the graph rewrite and launch planning on CPU tensors (every planned launch computed by
   `emulate_launch` from the pointers and strides the kernel would get), unsupported GEMMs, and
   the expectations table against the backend's coverage of the whole suite.
2. nvcc compile-only (needs nvcc): four kernels (fp16, bf16 with a C matrix, e4m3 tensorwise with
   a bias, e5m2 x e4m3 rowwise with fast accumulation) built for sm_90a once per source hash into
   the on-disk cache ($GEMMCONF_CACHE/cutlass or ~/.cache/gemmconf/cutlass), FileCheck on their
   PTX (wgmma, TMA) and SASS (HGMMA/QGMMA, UTMALDG; where a cuobjdump is found).
3. GPU (needs an sm90 CUDA GPU): real launches compared with eager torch.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from gemmconf_cutlass import codegen
from gemmconf_cutlass.backend import NO_GPU, CutlassBackend, CutlassCompiled
from gemmconf_cutlass.launch import _Args, emulate_launch
from gemmconf_cutlass.lowering import CutlassCompiler
from gemmconf_cutlass.planning import CutlassLaunchPlan, SkippedLaunch, plan_gemm

from gemmconf import api
from gemmconf.codecheck import CheckBlock, run_filecheck

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2

HAVE_CUTLASS_LIBRARY = importlib.util.find_spec("cutlass_library") is not None
needs_cutlass_library = pytest.mark.skipif(
    not HAVE_CUTLASS_LIBRARY,
    reason="cutlass_library is not installed: pip install -e '.[cutlass]' "
    "(nvidia-cutlass==4.2.0.0)",
)


def _sm90_gpu() -> bool:
    return (
        torch.cuda.is_available()
        and torch.version.hip is None
        and torch.cuda.get_device_capability() == (9, 0)
    )


needs_sm90 = pytest.mark.skipif(
    not _sm90_gpu(), reason="needs an sm90 CUDA GPU (H100/H200): the kernels are sm_90a"
)


def _cpu_rowwise_scaled_mm() -> bool:
    """Whether CPU eager runs rowwise-scaled fp8 GEMMs (torch 2.13 does; 2.11 asserts)."""
    a, b = torch.zeros(16, 16).to(E4M3), torch.zeros(16, 16).to(E4M3).t()
    try:
        torch._scaled_mm(a, b, torch.ones(16, 1), torch.ones(1, 16), out_dtype=torch.bfloat16)
    except RuntimeError:
        return False
    return True


CPU_ROWWISE = _cpu_rowwise_scaled_mm()
needs_cpu_rowwise = pytest.mark.skipif(
    not CPU_ROWWISE,
    reason=f"torch {torch.__version__} has no rowwise fp8 _scaled_mm on the CPU "
    "to emulate against (torch 2.13 has)",
)


def filecheck(checks: str, text: str, what: str) -> None:
    result = run_filecheck(
        CheckBlock(what, checks, f"tests/test_cutlass_backend.py::{what}"),
        text,
        artifact_name=f"<{what}>",
    )
    assert result.passed, result.diagnostic


# ---------------------------------------------------------------------------------------------
# The kernels compiled in tier 2, and what their code must show. Instruction spellings are those
# of nvcc 13.0 for sm_90a with CUTLASS 4.2 (kept here, in one place, for an upgrade).

KERNELS: dict[str, codegen.KernelSpec] = {
    # mm of a row-major a and a row-major b
    "fp16_mm": codegen.KernelSpec("fp16", "fp16", "fp16", a_major="k", b_major="n"),
    # addmm of a column-major a, a column-major b and a C matrix (TMA-loaded source)
    "bf16_addmm": codegen.KernelSpec(
        "bf16", "bf16", "bf16", a_major="m", b_major="k", source="matrix", source_dtype="bf16"
    ),
    # _scaled_mm tensorwise with a bias, to bf16
    "e4m3_tensorwise_bias": codegen.KernelSpec(
        "e4m3fn", "e4m3fn", "bf16", scaling="tensorwise", source="row", source_dtype="bf16"
    ),
    # _scaled_mm rowwise, mixed fp8 formats, fast accumulation, to fp16
    "e5m2_rowwise_fast": codegen.KernelSpec(
        "e5m2", "e4m3fn", "fp16", scaling="rowwise", fast_accum=True
    ),
}
MMA = {
    "fp16_mm": ("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", "HGMMA.64x128x16.F32"),
    "bf16_addmm": (
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
        "HGMMA.64x128x16.F32.BF16",
    ),
    "e4m3_tensorwise_bias": (
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3",
        "QGMMA.64x128x32.F32.E4M3.E4M3",
    ),
    "e5m2_rowwise_fast": (
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e4m3",
        "QGMMA.64x128x32.F32.E5M2.E4M3",
    ),
}
TMA_LOAD_PTX = "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
TMA_STORE_PTX = "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group"
# What the rendered .cu must say about each kernel's epilogue and schedule
CUDA_CHECKS = {
    "fp16_mm": """
        CHECK: using [[NAME:cutlass3x_sm90_tensorop_gemm_f16_f16_f32_void_f16_[a-z0-9_]+]]_fusion =
        CHECK-NEXT: Sm90Compute<cutlass::multiplies, cutlass::half_t, float
        CHECK-NEXT: Sm90ScalarBroadcast<float
        CHECK-NEXT: Sm90AccFetch>;
        CHECK: void, cutlass::layout::RowMajor, 0,
        CHECK-NEXT: cutlass::half_t, cutlass::layout::RowMajor, 8,
        CHECK: cutlass::half_t, cutlass::layout::RowMajor, 8,
        CHECK-NEXT: cutlass::half_t, cutlass::layout::RowMajor, 8,
        CHECK: cute::Shape<cute::_128, cute::_128, cute::_64>,
        CHECK: cutlass::gemm::KernelTmaWarpSpecializedCooperative
        CHECK: GemmUniversalAdapter<[[NAME]]>
        CHECK: cute::get<1>(stride_b) = p.b_stride_k;
        CHECK: {{[{][{][{]p.alpha[}], [{]nullptr[}], [{][}][}], [{][}], [{][}][}]}},
        CHECK-NEXT: nullptr, stride_c
        CHECK: int gemmconf_run(gemmconf_cutlass_args const* p)
    """,
    "bf16_addmm": """
        CHECK: using {{.*}}_fusion =
        CHECK-NEXT: Sm90Compute<cutlass::homogeneous_multiply_add, cutlass::bfloat16_t, float
        CHECK-NEXT: Sm90ScalarBroadcast<float
        CHECK-NEXT: Sm90SrcFetch<cutlass::bfloat16_t>
        CHECK: cutlass::bfloat16_t, cutlass::layout::RowMajor, 8,
        CHECK: cutlass::bfloat16_t, cutlass::layout::ColumnMajor, 8,
        CHECK-NEXT: cutlass::bfloat16_t, cutlass::layout::ColumnMajor, 8,
        CHECK: cute::get<1>(stride_a) = p.a_stride_k;
        CHECK: cute::get<0>(stride_b) = p.b_stride_n;
        CHECK: static_cast<ElementC const*>(p.c), stride_c
    """,
    "e4m3_tensorwise_bias": """
        CHECK: Sm90Compute<cutlass::homogeneous_multiply_add, cutlass::bfloat16_t, float
        CHECK: Sm90RowBroadcast<0, cute::Shape<cute::_128, {{.*}}>, cutlass::bfloat16_t, float
        CHECK: Sm90ScalarBroadcast<float, cute::Stride<cute::_0, cute::_0, int64_t>, 2>
        CHECK: cutlass::float_e4m3_t, cutlass::layout::RowMajor, 16,
        CHECK-NEXT: cutlass::float_e4m3_t, cutlass::layout::ColumnMajor, 16,
        CHECK: cutlass::gemm::KernelTmaWarpSpecializedCooperative
        CHECK: {p.scale_a, p.scale_b}
    """,
    "e5m2_rowwise_fast": """
        CHECK: Sm90ColBroadcast<0, {{.*}}, float, float, cute::Stride<cute::_1, cute::_0, int64_t>
        CHECK: Sm90RowBroadcast<0, {{.*}}, float, float, cute::Stride<cute::_0, cute::_1, int64_t>
        CHECK-NEXT: Sm90AccFetch>>;
        CHECK: cutlass::float_e5m2_t, cutlass::layout::RowMajor, 16,
        CHECK-NEXT: cutlass::float_e4m3_t, cutlass::layout::ColumnMajor, 16,
        CHECK: cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8FastAccum
    """,
}


def _checks(text: str) -> str:
    return "\n".join(line.strip() for line in text.strip().splitlines())


# ---------------------------------------------------------------------------------------------
# Tier 1: specs and rendering


@needs_cutlass_library
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_rendered_source(kernel: str) -> None:
    source = codegen.render(KERNELS[kernel])
    common = f"""
        CHECK: // gemmconf cutlass backend: {codegen.kernel_name(KERNELS[kernel])}
        CHECK: struct gemmconf_cutlass_args {{
        CHECK: cutlass::epilogue::collective::CollectiveBuilder<
        CHECK-NEXT: cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
        CHECK: cutlass::epilogue::TmaWarpSpecializedCooperative,
        CHECK: cutlass::gemm::collective::CollectiveBuilder<
        CHECK-NEXT: cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
        CHECK: extern "C" {{
        CHECK: int gemmconf_abi_version() {{ return {codegen.ABI_VERSION}; }}
    """
    filecheck(_checks(common), source, "cuda")
    filecheck(_checks(CUDA_CHECKS[kernel]), source, "cuda")


@needs_cutlass_library
def test_kernel_names_differ_by_epilogue_and_schedule() -> None:
    names = {codegen.kernel_name(spec) for spec in KERNELS.values()}
    assert len(names) == len(KERNELS)
    name = codegen.kernel_name(KERNELS["e5m2_rowwise_fast"])
    assert name.startswith("cutlass3x_sm90_tensorop_gemm_e5m2_e4m3_f32_void_f16_128x128x128_1x1x1")
    assert "fp8_fastaccum" in name and name.endswith("gemmconf_rowwise_none")


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"a_dtype": "fp32", "b_dtype": "fp32", "out_dtype": "fp32"}, "a_dtype 'fp32'"),
        ({"a_dtype": "fp16", "b_dtype": "bf16", "out_dtype": "fp16"}, "do not pair"),
        (
            {
                "a_dtype": "e4m3fn",
                "b_dtype": "e4m3fn",
                "out_dtype": "bf16",
                "scaling": "tensorwise",
                "a_major": "m",
            },
            "K-major",
        ),
        (
            {
                "a_dtype": "e4m3fn",
                "b_dtype": "e4m3fn",
                "out_dtype": "e4m3fn",
                "scaling": "tensorwise",
            },
            "out_dtype 'e4m3fn'",
        ),
        (
            {"a_dtype": "fp16", "b_dtype": "fp16", "out_dtype": "fp16", "scaling": "rowwise"},
            "for fp8 operands",
        ),
        (
            {"a_dtype": "fp16", "b_dtype": "fp16", "out_dtype": "fp16", "source": "row"},
            "source_dtype goes with a source",
        ),
    ],
)
def test_spec_rejects_what_no_kernel_implements(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(codegen.CodegenError, match=re.escape(problem)):
        codegen.KernelSpec(**fields)


@needs_cutlass_library
def test_rendering_does_not_depend_on_pythonhashseed() -> None:
    """cutlass_library's own default kernel choice does; pinned tiles must not."""
    script = (
        "import hashlib; from gemmconf_cutlass import codegen as c; "
        "s = c.KernelSpec('e4m3fn', 'e4m3fn', 'bf16', scaling='rowwise', source='row', "
        "source_dtype='bf16'); print(hashlib.sha256(c.render(s).encode()).hexdigest())"
    )
    digests = set()
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(done.stdout.strip())
    spec = codegen.KernelSpec(
        "e4m3fn", "e4m3fn", "bf16", scaling="rowwise", source="row", source_dtype="bf16"
    )
    digests.add(hashlib.sha256(codegen.render(spec).encode()).hexdigest())
    assert len(digests) == 1


_C_TO_CTYPES = {"int32_t": "c_int", "int64_t": "c_long", "uint64_t": "c_ulong", "float": "c_float"}


def test_ctypes_mirror_matches_the_shim_struct() -> None:
    """_Args must list the C struct's fields in order, with the same widths."""
    body = codegen._ARGS_STRUCT.split("{", 1)[1].rsplit("}", 1)[0]
    fields: list[tuple[str, str]] = []
    for statement in re.sub(r"//[^\n]*", "", body).split(";"):
        match = re.fullmatch(r"\s*(?:const\s+)?(\w+)\s*(\*?)\s*(.*?)\s*", statement, re.DOTALL)
        if match is None or not match[3]:
            continue
        ctype = "c_void_p" if match[2] else _C_TO_CTYPES[match[1]]
        fields += [(name.strip(), ctype) for name in match[3].split(",")]
    mirror = [(name, type_.__name__) for name, type_ in _Args._fields_]
    assert fields == mirror


# ---------------------------------------------------------------------------------------------
# Tier 1: graph rewrite and launch planning on CPU tensors (emulated launches)


def compile_emulated(fn: Callable[..., Any], *, dynamic: bool | None = False) -> CutlassCompiled:
    return CutlassCompiled(fn, CutlassCompiler(emulate_launch, allow_cpu=True), dynamic=dynamic)


def randn(*shape: int, dtype: torch.dtype = torch.float16) -> torch.Tensor:
    return (torch.randn(*shape) / max(shape[-1], 1) ** 0.25).to(dtype)


def col_major(t: torch.Tensor) -> torch.Tensor:
    return t.transpose(-2, -1).contiguous().transpose(-2, -1)


def fp8(*shape: int, dtype: torch.dtype = E4M3) -> torch.Tensor:
    return torch.randn(*shape).clamp(-8, 8).to(dtype)


def assert_like_eager(
    fn: Callable[..., Any],
    *args: Any,
    dynamic: bool = False,
    contains: tuple[str, ...] = (),
    excludes: tuple[str, ...] = (),
) -> str:
    """Compile `fn` with emulated launches, compare with eager; return the plan artifact."""
    torch.manual_seed(0)
    compiled = compile_emulated(fn, dynamic=dynamic)
    got, want = compiled(*args), fn(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-4}[want.dtype]
    torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol, equal_nan=True)
    plan = compiled.artifacts()["python"]
    for text in contains:
        assert text in plan, f"{text!r} not in the plan:\n{plan}"
    for text in excludes:
        assert text not in plan, f"{text!r} in the plan:\n{plan}"
    return plan


def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.mm(a, b)


@needs_cutlass_library
@pytest.mark.parametrize(
    ("a", "b", "contains", "excludes"),
    [
        # aligned row-major operands go to the kernel as they are
        (
            randn(64, 64),
            randn(64, 48),
            ("a k-major, b n-major", "gemm_f16_f16_f32_void_f16"),
            ("copied",),
        ),
        # column-major a and b (b = w.t() of a row-major weight): no copy either
        (
            col_major(randn(64, 32, dtype=torch.bfloat16)),
            col_major(randn(32, 48, dtype=torch.bfloat16)),
            ("a m-major, b k-major", "_nnt_"),
            ("copied",),
        ),
        # odd K: zero-padded along K; odd N: D computed wider and cut
        (
            randn(127, 33),
            randn(33, 65),
            ("kernel problem M=127 N=72 K=40", "a: copied", "b: copied", "D: computed 127x72"),
            (),
        ),
        # a 16-byte-aligned padded leading stride is read in place
        (randn(64, 80)[:, :64], randn(64, 48), (), ("copied",)),
        # an operand one element off a 16-byte boundary is copied
        (randn(64 * 64 + 1)[1:].view(64, 64), randn(64, 48), ("a: copied (base address",), ()),
    ],
)
def test_mm_plans(
    a: torch.Tensor, b: torch.Tensor, contains: tuple[str, ...], excludes: tuple[str, ...]
) -> None:
    assert_like_eager(mm, a, b, contains=contains, excludes=excludes)


@needs_cutlass_library
@pytest.mark.parametrize(
    ("bias_shape", "source"),
    [
        ((64, 48), "beta * matrix fp16"),
        ((48,), "beta * row fp16"),
        ((1, 48), "beta * row fp16"),
        ((64, 1), "beta * col fp16"),
        ((1,), "beta * row fp16"),
    ],
)
def test_addmm_bias_becomes_the_epilogue_source(bias_shape: tuple[int, ...], source: str) -> None:
    def addmm(c, a, b):
        return torch.addmm(c, a, b, beta=0.5, alpha=2.0)

    assert_like_eager(
        addmm,
        randn(*bias_shape),
        randn(64, 40),
        randn(40, 48),
        contains=(source, "alpha=2.0 beta=0.5"),
    )


@needs_cutlass_library
def test_addmm_beta_zero_never_reads_c() -> None:
    def addmm(c, a, b):
        return torch.addmm(c, a, b, beta=0.0, alpha=1.5)

    c = torch.full((64, 48), float("nan"), dtype=torch.bfloat16)
    plan = assert_like_eager(
        addmm,
        c,
        randn(64, 32, dtype=torch.bfloat16),
        randn(32, 48, dtype=torch.bfloat16),
        excludes=("beta * ",),
    )
    assert "gemmconf_alpha_none" in plan


@needs_cutlass_library
def test_linear_and_batched_ops() -> None:
    def linear(x, w, bias):
        return F.linear(x, w, bias)

    assert_like_eager(
        linear,
        randn(2, 33, 40),
        randn(24, 40),
        randn(24),
        contains=("aten.addmm.default", "b k-major"),
    )

    def bmm(a, b):
        return torch.bmm(a, b)

    expanded = randn(1, 32, 48).expand(3, 32, 48)  # batch stride 0: materialized
    assert_like_eager(
        bmm,
        randn(3, 40, 32),
        expanded,
        contains=("L=3 M=40 N=48 K=32", "b: copied (batch stride 0"),
    )

    def baddbmm(c, a, b):
        return torch.baddbmm(c, a, b, beta=1.0, alpha=1.0)

    assert_like_eager(
        baddbmm, randn(3, 1, 48), randn(3, 40, 32), randn(3, 32, 48), contains=("beta * row fp16",)
    )


@needs_cutlass_library
@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise"])
@pytest.mark.parametrize("bias", [False, True])
def test_scaled_mm_plans(scaling: str, bias: bool) -> None:
    if scaling == "rowwise" and not CPU_ROWWISE:
        pytest.skip(f"torch {torch.__version__} has no rowwise fp8 _scaled_mm on the CPU")
    m, k, n = 48, 64, 32
    a, b = fp8(m, k), fp8(n, k, dtype=E5M2).t()
    if scaling == "tensorwise":
        scale_a, scale_b = torch.tensor(0.5), torch.tensor(1.5)
    else:
        scale_a, scale_b = torch.rand(m, 1) + 0.5, torch.rand(1, n) + 0.5
    bias_t = randn(n, dtype=torch.bfloat16) if bias else None

    def scaled_mm(a, b, scale_a, scale_b, bias):
        return torch._scaled_mm(
            a, b, scale_a, scale_b, bias=bias, out_dtype=torch.bfloat16, use_fast_accum=True
        )

    expected = (
        f"e4m3fn x e5m2 -> bf16, a k-major, b k-major, D = {scaling}(acc)",
        "fast accumulation",
        *(("beta * row bf16",) if bias else ()),
    )
    assert_like_eager(scaled_mm, a, b, scale_a, scale_b, bias_t, contains=expected)


@needs_cutlass_library
def test_dynamic_shapes_compile_once_and_plan_per_call() -> None:
    compiled = compile_emulated(mm, dynamic=True)
    for m, k, n in ((64, 32, 48), (37, 32, 48), (128, 64, 16)):
        a, b = randn(m, k), randn(k, n)
        torch.testing.assert_close(compiled(a, b), a @ b, rtol=2e-3, atol=2e-3)
    assert compiled.compiles() == 1
    assert compiled.artifacts()["python"].count("launch cutlass3x_") == 3


def test_zero_sizes_launch_nothing() -> None:
    a, b = randn(0, 32), randn(32, 48)
    skipped = plan_gemm("mm", a, b)
    assert isinstance(skipped, SkippedLaunch) and skipped.output.shape == (0, 48)
    c = randn(48)
    k0 = plan_gemm("addmm", randn(16, 0), randn(0, 48), c=c, alpha=2.0, beta=0.5)
    assert isinstance(k0, SkippedLaunch) and "K = 0" in k0.describe()
    torch.testing.assert_close(k0.output, (0.5 * c.float()).expand(16, 48).half())


def test_plan_strides_describe_the_operands() -> None:
    a = col_major(randn(64, 32))
    b = randn(32, 48)
    plan = plan_gemm("mm", a, b)
    assert isinstance(plan, CutlassLaunchPlan)
    assert (plan.spec.a_major, plan.spec.b_major) == ("m", "n")
    assert plan.a.strides == (1, 64, 64 * 32)  # (M, K, L) of a column-major a
    assert plan.b.strides == (1, 48, 48 * 32)  # (N, K, L): b's N is contiguous
    assert plan.d.strides == (48, 1, 64 * 48)
    assert plan.notes == []


@needs_cutlass_library
def test_unsupported_gemms_raise_not_implemented() -> None:
    with pytest.raises(NotImplementedError, match=r"mm of fp32 x fp32 is not implemented"):
        compile_emulated(mm)(torch.randn(8, 8), torch.randn(8, 8))

    def int_mm(a, b):
        return torch._int_mm(a, b)

    a8 = torch.randint(-4, 4, (32, 16), dtype=torch.int8)
    b8 = torch.randint(-4, 4, (16, 32), dtype=torch.int8)
    with pytest.raises(NotImplementedError, match=r"aten._int_mm.default is not implemented"):
        compile_emulated(int_mm)(a8, b8)

    def to_fp8(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=E4M3)

    one = torch.tensor(1.0)
    with pytest.raises(NotImplementedError, match=r"_scaled_mm to e4m3fn is not implemented"):
        compile_emulated(to_fp8)(fp8(16, 32), fp8(16, 32).t(), one, one)


@needs_cutlass_library
def test_inputs_eager_rejects_raise_eagers_error() -> None:
    def addmm(c, a, b):
        return torch.addmm(c, a, b)

    # the meta function lets a C of another dtype through; eager raises RuntimeError
    with pytest.raises(RuntimeError) as info:
        compile_emulated(addmm)(torch.randn(8, 8), randn(8, 8), randn(8, 8))
    assert not isinstance(info.value, NotImplementedError)


@needs_cutlass_library
def test_cpu_tensors_are_refused_by_the_gpu_launcher() -> None:
    compiled = CutlassCompiled(mm, CutlassCompiler(), dynamic=False)
    with pytest.raises(NotImplementedError, match="cpu tensors"):
        compiled(randn(16, 16), randn(16, 16))


def test_availability_without_a_gpu_names_the_reason() -> None:
    backend = CutlassBackend()
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert backend.availability() == NO_GPU


# ---------------------------------------------------------------------------------------------
# Tier 1: the expectations table is the backend's coverage


def expected_outcome(instance: Any) -> str | None:
    """What the cutlass backend does with a scenario instance: skip, xfail, or None (passes)."""
    if instance.requires.device == "cpu":
        return "skip"  # CPU tensors: the kernels take CUDA tensors only
    if instance.checks.raises:
        return None  # eager's own error is raised, also for unsupported ops
    if instance.op == "int_mm":
        return "xfail"
    if instance.op != "scaled_mm":
        return "xfail" if instance.dtype in ("fp32", "tf32") else None
    if instance.out_dtype in ("e4m3fn", "e5m2"):
        return "xfail"
    if instance.scaling == "blockwise" and not _one_block(instance):
        return "xfail"
    return None


def _one_block(instance: Any) -> bool:
    """Blockwise scaling of a single block (M = 1, K = N = 128): both scales have one element,
    which eager, and so the backend, reads as tensorwise (passed on an H200)."""
    return all(
        d["M"] == 1 and d["K"] == 128 and d["N"] == 128
        for d in (instance.dims(i) for i in range(len(instance.shape_sets)))
    )


def test_expectations_match_the_backends_coverage() -> None:
    """The packaged expectations.yaml, loaded as a run loads it, over the whole suite."""
    from gemmconf import bundled_suites, expectations

    instances = api.instances()
    table = expectations.load(
        bundled_suites() / "expectations",
        "cutlass",
        instances,  # the instances, as a run passes them: field patterns need their fields
        packaged=expectations.packaged_files(CutlassBackend(), "cutlass"),
    )
    wrong = []
    for instance in instances:
        entry = table.lookup(instance.id)
        listed = entry.status if entry else None
        if listed != expected_outcome(instance):
            wrong.append(f"{instance.id}: listed {listed}, expected {expected_outcome(instance)}")
    assert not wrong, (
        "gemmconf_cutlass/expectations.yaml disagrees with the backend's coverage:\n"
        + "\n".join(wrong[:40])
    )


# ---------------------------------------------------------------------------------------------
# Tier 2: nvcc compile-only


BUILT = pytest.mark.xdist_group("cutlass_nvcc_builds")


@pytest.fixture(scope="module")
def built() -> dict[str, codegen.Built]:
    """The four kernels, compiled for sm_90a once per source hash (on-disk cache). Its tests are
    one `xdist_group` (`BUILT`): a cold build is about 180 CPU-seconds of nvcc on the 2-core dev
    CPU, and each worker that drew one of them waited on the build's lock."""
    if not HAVE_CUTLASS_LIBRARY:
        pytest.skip("cutlass_library is not installed (the `cutlass` extra)")
    if codegen.find_nvcc() is None:
        pytest.skip("nvcc not found (CUDACXX, CUDA_HOME, PATH, /usr/local/cuda/bin)")

    def build(spec: codegen.KernelSpec) -> codegen.Built:
        # fp16_mm also as the launchable shared library (host shim compiled and linked)
        outputs = ("so", *codegen.OUTPUTS[:3]) if spec == KERNELS["fp16_mm"] else None
        return codegen.build(
            codegen.render(spec), codegen.kernel_name(spec), outputs or codegen.OUTPUTS[:3]
        )

    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        entries = dict(zip(KERNELS, pool.map(build, KERNELS.values()), strict=True))
    return entries


@BUILT
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_ptx_uses_wgmma_and_tma(built: dict[str, codegen.Built], kernel: str) -> None:
    entry = built[kernel]
    checks = f"""
        CHECK: .target sm_90a
        CHECK: .entry {{{{.*}}}}{entry.name}
        CHECK-DAG: {MMA[kernel][0]}
        CHECK-DAG: {TMA_LOAD_PTX}
        CHECK-DAG: {TMA_STORE_PTX}
        CHECK-DAG: setmaxnreg.inc.sync.aligned.u32
    """
    filecheck(_checks(checks), entry.text("ptx"), "ptx")
    assert entry.has("cubin") and entry.path("cubin").stat().st_size > 0


@BUILT
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_sass_uses_gmma_and_tma(built: dict[str, codegen.Built], kernel: str) -> None:
    if not built[kernel].has("sass"):
        pytest.skip("no cuobjdump found (CUDA toolkit or Triton's bundled copy)")
    checks = f"""
        CHECK: Function : {{{{.*}}}}{built[kernel].name}
        CHECK-DAG: {MMA[kernel][1]}
        CHECK-DAG: UTMALDG
        CHECK-DAG: UTMASTG
    """
    filecheck(_checks(checks), built[kernel].text("sass"), "sass")


@BUILT
def test_cache_serves_builds_without_nvcc(
    built: dict[str, codegen.Built], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(codegen, "find_nvcc", lambda: None)
    spec = KERNELS["fp16_mm"]
    entry = codegen.build(codegen.render(spec), codegen.kernel_name(spec))
    assert entry.directory == built["fp16_mm"].directory
    assert entry.record()["nvcc"].startswith("Cuda compilation tools")
    other = codegen.KernelSpec("fp16", "fp16", "fp16", a_major="m", b_major="n")
    with pytest.raises(codegen.BuildError, match="no nvcc was found"):
        codegen.build(codegen.render(other) + "// not cached\n", codegen.kernel_name(other))


@BUILT
def test_shared_library_loads_and_reports_errors(built: dict[str, codegen.Built]) -> None:
    """The launch shim links and answers through ctypes; without a GPU its run fails cleanly."""
    from gemmconf_cutlass.launch import KernelLibrary, launch_args

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: tier 3 launches for real")
    library = KernelLibrary(KERNELS["fp16_mm"])
    assert library.built.directory == built["fp16_mm"].directory
    lib = library._lib
    assert lib.gemmconf_abi_version() == codegen.ABI_VERSION
    plan = plan_gemm("mm", randn(64, 64), randn(64, 48))
    assert isinstance(plan, CutlassLaunchPlan) and plan.spec == KERNELS["fp16_mm"]
    args = launch_args(plan)
    size = ctypes.c_uint64(1)
    assert lib.gemmconf_workspace_size(ctypes.byref(args), ctypes.byref(size)) == 0
    assert size.value == 0  # the persistent data-parallel schedule needs no workspace
    with pytest.raises(RuntimeError, match=r"failed \(10\): gemmconf_cutlass_args: ABI version"):
        library._check(lib.gemmconf_run(ctypes.byref(_Args(abi=codegen.ABI_VERSION + 1))))
    with pytest.raises(RuntimeError, match=r"failed \(4\): cudaGetDevice: "):
        library._check(lib.gemmconf_run(ctypes.byref(args)))


# ---------------------------------------------------------------------------------------------
# Tier 3: launches on an sm90 GPU


def _gpu_cases() -> list[tuple[str, Callable[..., Any], Callable[[], tuple[Any, ...]]]]:
    """(id, function, CPU inputs) of the GPU launches; the test moves inputs to the GPU."""

    def scaled(scaling: str, bias: bool, fast: bool) -> Callable[..., Any]:
        def fn(a, b, sa, sb, *rest):
            return torch._scaled_mm(
                a,
                b,
                sa,
                sb,
                bias=rest[0] if rest else None,
                out_dtype=torch.bfloat16,
                use_fast_accum=fast,
            )

        return fn

    def fp8_inputs(scaling: str, bias: bool, m: int = 256, k: int = 128, n: int = 192):
        a, b = fp8(m, k), fp8(n, k).t()
        if scaling == "tensorwise":
            sa, sb = torch.tensor(0.25), torch.tensor(0.5)
        else:
            sa, sb = torch.rand(m, 1) + 0.25, torch.rand(1, n) + 0.25
        return (a, b, sa, sb, *((randn(n, dtype=torch.bfloat16),) if bias else ()))

    def addmm(c, a, b):
        return torch.addmm(c, a, b, beta=0.5, alpha=2.0)

    def bmm(a, b):
        return torch.bmm(a, b)

    bf16 = torch.bfloat16
    return [
        ("fp16_mm", mm, lambda: (randn(256, 128), randn(128, 192))),
        ("fp16_mm_odd_col", mm, lambda: (col_major(randn(127, 33)), randn(33, 65))),
        (
            "bf16_addmm_bias",
            addmm,
            lambda: (
                randn(192, dtype=bf16),
                randn(256, 128, dtype=bf16),
                randn(128, 192, dtype=bf16),
            ),
        ),
        (
            "bf16_addmm_matrix",
            addmm,
            lambda: (
                randn(256, 192, dtype=bf16),
                randn(256, 128, dtype=bf16),
                col_major(randn(128, 192, dtype=bf16)),
            ),
        ),
        ("bf16_bmm", bmm, lambda: (randn(3, 130, 64, dtype=bf16), randn(3, 64, 96, dtype=bf16))),
        (
            "e4m3_tensorwise_bias",
            scaled("tensorwise", True, False),
            lambda: fp8_inputs("tensorwise", True),
        ),
        ("e4m3_rowwise_fast", scaled("rowwise", False, True), lambda: fp8_inputs("rowwise", False)),
    ]


@needs_cutlass_library
@pytest.mark.parametrize(
    ("name", "fn", "make_inputs"), _gpu_cases(), ids=[case[0] for case in _gpu_cases()]
)
def test_gpu_cases_plan_on_the_cpu(
    name: str, fn: Callable[..., Any], make_inputs: Callable[[], tuple[Any, ...]]
) -> None:
    """The GPU cases, planned and emulated here: the GPU test checks the kernels, not itself."""
    if "rowwise" in name and not CPU_ROWWISE:
        pytest.skip(f"torch {torch.__version__} has no rowwise fp8 _scaled_mm on the CPU")
    torch.manual_seed(0)
    assert_like_eager(fn, *make_inputs(), contains=("launch cutlass3x_sm90",))


@pytest.fixture(scope="module")
def gpu_kernels() -> None:
    """Build the GPU cases' kernels in parallel first (planned on CPU copies of their inputs)."""
    from gemmconf_cutlass.survey import _plan_only, prebuild

    specs: set[codegen.KernelSpec] = set()
    for _, fn, make_inputs in _gpu_cases():
        torch.manual_seed(0)
        compiler = CutlassCompiler(_plan_only, allow_cpu=True)
        CutlassCompiled(fn, compiler, dynamic=False)(*make_inputs())
        specs |= {r.spec for call in compiler.calls() for r in call.launches.values() if r.spec}
    failed = prebuild(sorted(specs, key=codegen.kernel_name), jobs=os.cpu_count() or 1)
    assert not failed, "\n".join(failed.values())


@needs_sm90
@needs_cutlass_library
@pytest.mark.parametrize(
    ("name", "fn", "make_inputs"), _gpu_cases(), ids=[case[0] for case in _gpu_cases()]
)
def test_gpu_launch_matches_torch(
    gpu_kernels: None, name: str, fn: Callable[..., Any], make_inputs: Callable[[], tuple[Any, ...]]
) -> None:
    backend = CutlassBackend()
    assert backend.availability() is None, backend.availability()
    torch.manual_seed(0)
    inputs = tuple(t.cuda() for t in make_inputs())  # strides (column-major b) are kept
    compiled = backend.compile(fn, inputs, dynamic=False)
    got = compiled(*inputs)
    torch.cuda.synchronize()
    want = fn(*inputs)
    # reference in fp32 from the same (dequantized) values; CUTLASS accumulates in fp32 too
    tol = 2e-2 if want.dtype == torch.bfloat16 else 5e-3
    torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol)
    artifacts = compiled.artifacts()
    assert "launch cutlass3x_sm90" in artifacts["python"]
    assert 'extern "C"' in artifacts["cuda"]
    assert "wgmma.mma_async" in artifacts["ptx"]
    if "sass" in artifacts:
        assert re.search(r"[HQ]GMMA\.", artifacts["sass"])


@needs_sm90
@needs_cutlass_library
def test_gpu_kernel_failure_is_an_error_not_a_wrong_result(gpu_kernels: None) -> None:
    """A plan the kernel cannot implement raises with CUTLASS's status, never returns garbage."""
    from gemmconf_cutlass.launch import kernel_library

    a, b = randn(64, 64).cuda(), randn(64, 48).cuda()
    plan = plan_gemm("mm", a, b)
    assert isinstance(plan, CutlassLaunchPlan)
    plan.problem = type(plan.problem)(1, 64, 47, 64, (64, 47, 64))  # N breaks D's alignment
    with pytest.raises(RuntimeError, match="can_implement"):
        kernel_library(plan.spec).run(plan)


@needs_cutlass_library
@needs_cpu_rowwise
def test_codegen_suite_checks_hold_on_emulated_launches() -> None:
    """suites/cutlass/codegen.yaml's items, judged by gemmconf's runner and oracle on the CPU
    with emulated launches: values, recompiles and the `python` and `cuda` code checks."""
    instances = api.instances(["cutlass_codegen/*"])
    assert instances
    backend = CutlassBackend(launcher=emulate_launch, allow_cpu=True)
    for instance in instances:
        verdict = api.run(instance, backend)
        assert verdict.passed, "\n".join(verdict.problems)
        assert verdict.metrics.get("code_checks"), f"{instance.id}: no code check ran"


@needs_cutlass_library
def test_survey_finds_the_kernels_and_leaves_judging_to_gemmconf(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Plan-only survey of two instances; with --check, gemmconf's runner judges each one, so a
    launch that computes the wrong thing is caught by the harness, not by the backend."""
    from gemmconf_cutlass import survey

    ids = ["cutlass_codegen/sm90_kernels[fp16_mm]", "cutlass_codegen/sm90_kernels[fp16_linear_odd]"]
    found = survey.survey(api.instances(ids))
    why = (found.errors, found.not_implemented, found.failed)
    assert sorted({i for used in found.specs.values() for i in used}) == sorted(ids), why
    assert not (found.errors or found.not_implemented or found.failed)
    assert survey.main([*ids, "--check"]) == 0
    assert "0 failed gemmconf's check" in capsys.readouterr().out

    def off_by_one(plan: CutlassLaunchPlan) -> None:
        emulate_launch(plan)
        plan.d.tensor.add_(1)  # a plausible bug: a stray epilogue term

    monkeypatch.setattr(survey, "emulate_launch", off_by_one)
    found = survey.survey(api.instances(ids[:1]), check=True)
    assert list(found.failed) == ids[:1] and "not close" in found.failed[ids[0]].lower()
