"""The built-in backends `eager` and `inductor` / `inductor-max-autotune[:BACKENDS]`.

Inductor compiles take seconds on a CPU, so each test makes few and small ones (mm alone needs no
C++ kernel; addmm+relu needs one, shared by a module-scoped fixture).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch.testing import FileCheck

import gemmconf.backends.dynamo as dynamo_support
from gemmconf.backends import inductor as inductor_module
from gemmconf.backends.base import Backend, Compiled
from gemmconf.backends.dynamo import RECOMPILE_LIMIT
from gemmconf.backends.eager import EagerBackend
from gemmconf.backends.inductor import (
    GEMM_BACKENDS,
    InductorBackend,
    make_inductor,
    make_inductor_max_autotune,
)

# What inductor's output module shows for addmm+relu on a CPU (torch 2.11-2.13), in order.
CPU_ADDMM_RELU_CODE = ("def call(", "extern_kernels.addmm(", "cpp_fused_relu")
# What a C++ kernel source holds.
CPU_KERNEL_CODE = 'extern "C"'
# What inductor's output module and Triton kernel show for mm+relu on a CUDA GPU.
CUDA_MM_RELU_CODE = ("async_compile.triton(", "def call(", "extern_kernels.mm(")
CUDA_TRITON_KERNEL_CODE = ("@triton.jit", "def triton_")

needs_no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without GPU")
needs_cuda = pytest.mark.skipif(
    not (torch.cuda.is_available() and torch.version.hip is None), reason="needs a CUDA GPU"
)


def _randn(*shape: int, seed: int, device: str = "cpu", dtype: torch.dtype = torch.float32):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=dtype).to(device)


def _addmm_relu(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(torch.addmm(bias, a, b))


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.mm(a, b)


def _run_shapes(compiled: Compiled, fn: Any, ms: list[int], k: int = 32, n: int = 16) -> None:
    """Call `compiled` once per M and check each result against `fn` run eagerly."""
    for m in ms:
        a, b = _randn(m, k, seed=m), _randn(k, n, seed=1000 + m)
        torch.testing.assert_close(compiled(a, b), fn(a, b))


ADDMM_RELU = pytest.mark.xdist_group("inductor_addmm_relu")


@pytest.fixture(scope="module")
def addmm_relu() -> SimpleNamespace:
    """One plain-inductor compile of addmm+relu, called once; its tests are one `xdist_group`
    (`ADDMM_RELU`): a cold compile, C++ and all, took 48.6 s of a worker on the dev CPU."""
    backend = make_inductor()
    bias, a, b = _randn(16, seed=1), _randn(8, 32, seed=2), _randn(32, 16, seed=3)
    compiled = backend.compile(_addmm_relu, [bias, a, b], dynamic=False)
    return SimpleNamespace(
        backend=backend,
        compiled=compiled,
        actual=compiled(bias, a, b),
        expected=_addmm_relu(bias, a, b),
    )


def test_eager_returns_what_fn_returns() -> None:
    marker = object()
    backend = EagerBackend()
    compiled = backend.compile(lambda *args: (marker, args), [], dynamic=None)
    result = compiled(1, "two")
    assert result[0] is marker and result[1] == (1, "two")
    assert (backend.name, backend.availability()) == ("eager", None)
    assert (compiled.artifacts(), compiled.compiles()) == ({}, 0)
    assert isinstance(backend, Backend) and isinstance(compiled, Compiled)


@ADDMM_RELU
def test_inductor_backends_follow_the_protocol(addmm_relu: SimpleNamespace) -> None:
    assert isinstance(addmm_relu.backend, Backend)
    assert isinstance(addmm_relu.compiled, Compiled)
    assert addmm_relu.backend.name == "inductor"
    assert addmm_relu.backend.availability() is None


@ADDMM_RELU
def test_inductor_addmm_relu_matches_eager(addmm_relu: SimpleNamespace) -> None:
    torch.testing.assert_close(addmm_relu.actual, addmm_relu.expected)
    assert addmm_relu.compiled.compiles() == 1


@ADDMM_RELU
def test_python_artifact_is_the_output_code(addmm_relu: SimpleNamespace) -> None:
    artifacts = addmm_relu.compiled.artifacts()
    check = FileCheck()
    for text in CPU_ADDMM_RELU_CODE:
        check = check.check(text)
    check.run(artifacts["python"])
    assert CPU_KERNEL_CODE in artifacts["cpp"]
    assert "triton" not in artifacts


def test_same_shape_compiles_once_and_each_static_shape_recompiles() -> None:
    compiled = make_inductor().compile(torch.mm, [], dynamic=False)
    _run_shapes(compiled, _mm, [5, 5, 5])
    assert compiled.compiles() == 1
    _run_shapes(compiled, _mm, [6, 7])
    assert compiled.compiles() == 3
    python = compiled.artifacts()["python"]
    assert python.count("def call(") == 3
    # Modules accumulate across calls, in compile order.
    assert python.index("(5, 32)") < python.index("(6, 32)") < python.index("(7, 32)")


def test_dynamic_true_compiles_once_for_all_m() -> None:
    # dynamic=True makes every size symbolic from the first compile (0 and 1 are still
    # specialized, hence M >= 2), so new M values reuse the one graph.
    compiled = make_inductor().compile(_mm, [], dynamic=True)
    _run_shapes(compiled, _mm, [8, 16, 24])
    assert compiled.compiles() == 1


def test_dynamic_none_is_automatic_and_no_state_crosses_compiles() -> None:
    # Dynamo's default: the first graph is static, the first new shape recompiles with dynamic
    # sizes, later shapes reuse it. A second compile of the same fn starts afresh: had dynamo's
    # cache or automatic-dynamic profile crossed over, it would start dynamic and compile once.
    for ms in ([8, 16, 24], [32, 40, 48]):
        compiled = make_inductor().compile(_mm, [], dynamic=None)
        _run_shapes(compiled, _mm, ms)
        assert compiled.compiles() == 2


def test_recompiles_past_dynamo_default_limit_are_counted() -> None:
    assert torch._dynamo.config.recompile_limit < 10 <= RECOMPILE_LIMIT
    compiled = make_inductor().compile(_mm, [], dynamic=False)
    _run_shapes(compiled, _mm, list(range(2, 12)), k=8, n=4)
    assert compiled.compiles() == 10


def test_hitting_the_recompile_limit_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    # (monkeypatch would delete, not restore, a torch config entry: use the config's own patch)
    monkeypatch.setattr(dynamo_support, "RECOMPILE_LIMIT", 2)
    with torch._dynamo.config.patch(recompile_limit=1):
        compiled = make_inductor().compile(_mm, [], dynamic=False)
        _run_shapes(compiled, _mm, [2, 3], k=8, n=4)
        with pytest.raises(Exception, match="limit"):
            _run_shapes(compiled, _mm, [4], k=8, n=4)
        assert compiled.compiles() == 2
        assert torch._dynamo.config.recompile_limit == 1


def test_max_autotune_config_reaches_compile_and_is_scoped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = torch._inductor.config
    before = (config.max_autotune, config.max_autotune_gemm_backends)
    limit_before = torch._dynamo.config.recompile_limit
    compile_fx_module = importlib.import_module("torch._inductor.compile_fx")
    real_compile_fx = compile_fx_module.compile_fx
    seen: list[tuple[Any, ...]] = []

    def spy(gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
        seen.append(
            (
                config.max_autotune,
                config.max_autotune_gemm_backends,
                torch._dynamo.config.recompile_limit,
                kwargs.get("config_patches"),
            )
        )
        return real_compile_fx(gm, example_inputs, **kwargs)

    monkeypatch.setattr(compile_fx_module, "compile_fx", spy)
    backend = make_inductor_max_autotune("aten")
    compiled = backend.compile(_mm, [], dynamic=False)
    _run_shapes(compiled, _mm, [64], k=32, n=16)

    assert backend.name == "inductor-max-autotune:ATEN"
    # compile_fx re-enters itself once its config_patches are applied: the first call is ours.
    assert compiled.compiles() == 1 and len([s for s in seen if s[3]]) == 1
    max_autotune, gemm_backends, limit, patches = seen[0]
    assert (max_autotune, gemm_backends, limit) == (True, "ATEN", RECOMPILE_LIMIT)
    assert patches["max_autotune"] is True and patches["max_autotune_gemm_backends"] == "ATEN"
    assert "triton.cudagraphs" not in patches
    assert (config.max_autotune, config.max_autotune_gemm_backends) == before
    assert torch._dynamo.config.recompile_limit == limit_before
    FileCheck().check("def call(").check("extern_kernels.mm(").run(compiled.artifacts()["python"])


def test_gemm_backend_options_are_validated_and_normalized() -> None:
    with pytest.raises(ValueError, match="FOO") as unknown:
        make_inductor_max_autotune("TRITON,FOO")
    assert all(name in str(unknown.value) for name in ("ATEN", "TRITON", "CUTLASS", "CPP"))
    assert {"ATEN", "TRITON", "CUTLASS", "CK", "CKTILE", "CPP"} <= set(GEMM_BACKENDS)
    for empty in ("", "ATEN,", " , "):
        with pytest.raises(ValueError, match="empty"):
            make_inductor_max_autotune(empty)
    with pytest.raises(ValueError, match="no options"):
        make_inductor("TRITON")
    with pytest.raises(ValueError, match="max-autotune"):
        InductorBackend(gemm_backends="ATEN")

    backend = make_inductor_max_autotune(" aten, triton ,aten")
    assert backend.name == "inductor-max-autotune:ATEN,TRITON"
    assert backend.inductor_patches()["max_autotune_gemm_backends"] == "ATEN,TRITON"
    assert make_inductor_max_autotune().name == "inductor-max-autotune"
    assert "max_autotune_gemm_backends" not in make_inductor_max_autotune().inductor_patches()
    assert make_inductor().inductor_patches() == {}


def test_cutlass_profiling_is_capped_unless_told_otherwise(monkeypatch) -> None:
    def capped(option: str) -> dict:
        return {
            k: v
            for k, v in make_inductor_max_autotune(option).inductor_patches().items()
            if k.endswith("cutlass_max_profiling_configs")
        }

    assert list(capped("CUTLASS").values()) == [4]
    assert capped("TRITON") == {}
    monkeypatch.setenv("GEMMCONF_CUTLASS_MAX_CONFIGS", "0")
    assert capped("ATEN,CUTLASS") == {}
    monkeypatch.setenv("GEMMCONF_CUTLASS_MAX_CONFIGS", "2")
    assert list(capped("ATEN,CUTLASS").values()) == [2]


@needs_no_gpu
def test_availability_without_gpu() -> None:
    assert make_inductor().availability() is None
    assert make_inductor_max_autotune().availability() is None
    assert make_inductor_max_autotune("ATEN,CPP").availability() is None
    cutlass = make_inductor_max_autotune("CUTLASS").availability()
    assert cutlass == "inductor CUTLASS templates need a CUDA GPU (none found)"
    for option in ("TRITON", "ATEN,TRITON"):
        reason = make_inductor_max_autotune(option).availability()
        assert reason is not None and "silently falls back to ATen" in reason
    assert "ROCm" in (make_inductor_max_autotune("CK").availability() or "")


@needs_cuda
def test_availability_with_cuda_gpu() -> None:
    assert make_inductor_max_autotune("ATEN,TRITON").availability() is None
    cutlass = make_inductor_max_autotune("CUTLASS").availability()
    assert cutlass is None or "none found" not in cutlass
    assert "ROCm" in (make_inductor_max_autotune("CKTILE").availability() or "")
    cpp = make_inductor_max_autotune("ATEN,CPP").availability()  # the items run on the GPU
    assert cpp is not None and "compile for the CPU" in cpp


def test_cpp_templates_are_unavailable_only_where_the_items_run_on_a_gpu(monkeypatch) -> None:
    """Where the items run is the harness's choice (`capability.detect`): a ROCm machine runs
    them on its CPU, where the CPP templates take them, though torch sees a GPU there."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for device, unavailable in (("cpu", False), ("cuda", True)):
        monkeypatch.setattr(
            inductor_module.capability, "detect", lambda d=device: SimpleNamespace(device=d)
        )
        reason = make_inductor_max_autotune("ATEN,CPP").availability()
        assert (reason is not None) is unavailable, (device, reason)


@needs_cuda
def test_triton_artifact_on_cuda() -> None:
    compiled = make_inductor().compile(lambda a, b: torch.relu(a @ b), [], dynamic=False)
    a = _randn(64, 32, seed=1, device="cuda", dtype=torch.float16)
    b = _randn(32, 16, seed=2, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(compiled(a, b), torch.relu(a @ b))
    artifacts = compiled.artifacts()
    check = FileCheck()
    for text in CUDA_MM_RELU_CODE:
        check = check.check(text)
    check.run(artifacts["python"])
    for text in CUDA_TRITON_KERNEL_CODE:
        assert text in artifacts["triton"]


def test_kernel_sources_are_split_by_kind() -> None:
    module = (
        "k0 = async_compile.triton('triton_poi_fused_relu_0', '''\n@triton.jit\n"
        "def triton_poi_fused_relu_0(in_ptr0):\n    pass\n''', device_str='cuda')\n"
        "k1 = async_compile.cpp_pybinding(['float*'], r'''\nextern \"C\" void kernel() {}\n''')\n"
        "def call(args):\n    pass\n"
    )
    artifacts = inductor_module.artifacts_of([module, module])
    assert set(artifacts) == {"python", "triton", "cpp"}
    assert artifacts["python"].count("def call(") == 2
    assert artifacts["triton"].count("@triton.jit\ndef triton_poi_fused_relu_0(") == 2
    assert artifacts["cpp"].count('extern "C" void kernel()') == 2


def test_reference_options_name_the_backend_and_bad_ones_are_refused() -> None:
    from gemmconf.backends import resolve

    tuned = resolve("reference:autotune,persistent=never,cudagraphs")
    assert tuned.name == "reference:autotune,persistent=never,cudagraphs"
    assert (tuned.options.autotune, tuned.options.persistent, tuned.options.cudagraphs) == (
        True,
        "never",
        True,
    )
    assert resolve("reference:ws").options.warp_specialize
    assert resolve("reference").name == "reference" and resolve("reference").options is None
    for bad in ("fast", "persistent=sometimes", "autotune=yes", "ws=1"):
        with pytest.raises(ValueError, match="unknown reference option"):
            resolve(f"reference:{bad}")


@pytest.mark.skipif(
    importlib.util.find_spec("cutlass_library") is None,
    reason="needs the nvidia-cutlass wheel (the `cutlass` extra)",
)
def test_the_cutlass_wheel_stands_in_for_inductors_checkout(tmp_path, monkeypatch) -> None:
    from gemmconf.backends import inductor

    monkeypatch.setenv("GEMMCONF_CACHE", str(tmp_path))
    # try_import_cutlass links into inductor's cache dir; links of another venv there trip it
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
    root = Path(inductor.wheel_cutlass_dir())
    assert root == tmp_path / "inductor-cutlass"
    assert (root / "include" / "cutlass" / "cutlass.h").is_file()
    assert (root / "tools" / "util" / "include").is_dir()
    assert all(
        (root / "python" / name).is_dir()
        for name in ("cutlass_library", "cutlass_cppgen", "pycute")
    )
    assert inductor.wheel_cutlass_dir() == str(root)  # a second call finds the links in place
    patches = make_inductor_max_autotune("CUTLASS").inductor_patches()
    assert str(root) in patches.values()
    # torch's try_import_cutlass accepts it, and its import of CUTLASS's python package (which
    # opens a sqlite file in the working directory) leaves nothing in the user's folder
    for name in [m for m in sys.modules if m.split(".")[0] == "cutlass_cppgen"]:
        monkeypatch.delitem(sys.modules, name)  # imported again, as in a fresh process
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.chdir(user)
    assert inductor._cutlass_import_problem() is None
    assert list(user.iterdir()) == [] and Path.cwd() == user
    monkeypatch.setattr(inductor, "wheel_cutlass_dir", lambda: None)
    assert not any(
        k.endswith("cutlass_dir") for k in make_inductor_max_autotune("CUTLASS").inductor_patches()
    )


@pytest.mark.skipif(
    importlib.util.find_spec("cutlass_library") is None,
    reason="needs the nvidia-cutlass wheel (the `cutlass` extra)",
)
def test_a_relative_cutlass_dir_names_the_users_folder(tmp_path, monkeypatch, request) -> None:
    """The CUTLASS import runs in gemmconf's cache (above); a cutlass_dir the user gave relative
    to their folder still names a checkout there."""
    from gemmconf.backends import inductor

    utils = pytest.importorskip("torch._inductor.codegen.cutlass.utils")
    monkeypatch.setenv("GEMMCONF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
    user = tmp_path / "user"
    user.mkdir()
    (user / "checkout").symlink_to(inductor.wheel_cutlass_dir())  # a checkout's layout
    monkeypatch.chdir(user)
    utils.try_import_cutlass.cache_clear()  # torch answers once per process
    request.addfinalizer(utils.try_import_cutlass.cache_clear)
    relative = {f"{inductor._cutlass_section()}.cutlass_dir": "checkout"}
    with inductor._inductor_config().patch(relative):
        assert inductor._cutlass_import_problem() is None


def test_a_foreign_cutlass_link_in_inductors_cache_is_a_reason_not_a_crash(monkeypatch) -> None:
    from gemmconf.backends import inductor

    utils = pytest.importorskip("torch._inductor.codegen.cutlass.utils")

    def foreign_link() -> bool:
        raise AssertionError("Symlink at /tmp/x/torch_cutlass/cuda does not point to /venv2/...")

    monkeypatch.setattr(utils, "try_import_cutlass", foreign_link)
    problem = inductor._cutlass_import_problem()
    assert "does not point to" in problem and "TORCHINDUCTOR_CACHE_DIR" in problem


def test_gemmconf_backends_lists_the_inductor_template_families_with_availability(capsys) -> None:
    from gemmconf import cli
    from gemmconf.backends import resolve

    assert cli.main(["backends"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for variant in ("TRITON", "CUTLASS", "ATEN", "CPP"):
        (line,) = [x for x in lines if x.strip().startswith(f"inductor-max-autotune:{variant} ")]
        expected = resolve(f"inductor-max-autotune:{variant}").availability() or "available"
        assert line.rstrip().endswith(expected)
    if not torch.cuda.is_available():
        assert any("TRITON GEMM templates need a GPU" in x for x in lines)
        assert any(x.split()[-1] == "available" and ":CPP" in x for x in lines)
    else:  # the CPP templates lower only GEMMs on the CPU; a GPU machine's items are on its GPU
        assert any("CPP GEMM templates compile for the CPU" in x for x in lines)


def test_the_counters_artifact_lists_the_inductor_counters_an_item_moved() -> None:
    """The seeds' counter assertions (test_cutlass_backend.py's epilogue-fusion tests expect
    inductor's CUTLASS epilogue-fusion counter to stay 0) read the `counters` artifact: what
    moved during this Compiled's calls, nothing from before it."""
    from gemmconf import codecheck

    def counters() -> Counter:  # looked up each time: a compile may replace the group
        return importlib.import_module("torch._dynamo.utils").counters["inductor"]

    before = counters()["cutlass_epilogue_fusion_counter"]
    counters()["cutlass_epilogue_fusion_counter"] += 5  # moved before the item: not its own
    try:
        compiled = make_inductor().compile(torch.mm, [], dynamic=False)
        _run_shapes(compiled, _mm, [5])
        artifact = compiled.artifacts()["counters"]
        # the CPU mm is an extern call
        assert "extern_calls 1\n" in artifact.splitlines(keepends=True)
        no_fusion = codecheck.CheckBlock(
            "counters", "CHECK-NOT: {{cuda|cutlass}}_epilogue_fusion_counter\n", "test:1"
        )
        assert codecheck.run_filecheck(no_fusion, artifact).passed

        # A fusion the item's own compile made is listed, and the seed's check catches it.
        counted: dict[str, int] = {}
        with inductor_module.counting_inductor(counted):
            counters()["cutlass_epilogue_fusion_counter"] += 1
        fused = inductor_module.counters_artifact(counted)
        assert "cutlass_epilogue_fusion_counter 1" in fused.splitlines()
        assert not codecheck.run_filecheck(no_fusion, fused).passed
    finally:
        counters()["cutlass_epilogue_fusion_counter"] = before
