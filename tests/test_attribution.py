"""Who computed each result (gemmconf.checks.computed_by) and whose failure each is
(gemmconf.attribution): eager's passes are all PyTorch's, the reference backend's all its own; a
torch.compile backend that hands single-node graphs back to PyTorch passes on aten's kernels;
inductor's extern ATEN choice is PyTorch's kernel; a kernel library's override is the backend's
own, its fallback to aten PyTorch's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import planted_backends
import pytest
import suite_files
import torch
import warm_python

from gemmconf import attribution, capability, pristine
from gemmconf.backends import resolve
from gemmconf.backends.eager import EagerBackend
from gemmconf.checks import computed_by
from gemmconf.outcome import Crash, HarnessFault, ItemOutcome, Raised, WrongError, render
from gemmconf.runner import run_item
from gemmconf.scenario import load_suite

SUITES = Path(__file__).resolve().parents[1] / "suites"
DEVICE = capability.detect().device
INSTANCES = {
    i.id: i
    for path in ("dense/first.yaml", "epilogue/epilogue.yaml", "seeds/max_autotune.yaml")
    for i in load_suite(SUITES / path)
}
MM = "first/mm[fp32-64x64x64-nn]"
SINGLE_GEMMS = (
    MM,
    "first/addmm[fp32-bias_N-plain]",
    "first/bmm[fp32-2b17x9x65]",
    "first/mm_dynamic",
)
MM_RELU = "epilogue/unary[mm-relu-fp32]"


def run(ident: str, backend) -> ItemOutcome:
    return run_item(INSTANCES[ident], backend, seed=0, device=DEVICE, target=None)


@pytest.fixture
def quiet_overrides():
    with warnings.catch_warnings():  # torch warns at each override of a registered kernel
        warnings.filterwarnings("ignore", ".*Overriding a previously registered kernel")
        yield


@pytest.mark.parametrize("ident", SINGLE_GEMMS)
def test_eager_s_passes_are_pytorch_s(ident):
    outcome = run(ident, EagerBackend())
    assert outcome.passed and outcome.computed_by == "pytorch"
    assert outcome.metrics["aten_gemm_kernels"] == {f"aten::{INSTANCES[ident].op}": 1}
    assert "eager_gemm_kernels" not in outcome.metrics  # eager is not profiled a second time


@pytest.mark.skipif(DEVICE != "cpu", reason="aten's CPU _scaled_mm runs a float mm")
def test_eager_s_scaled_gemm_is_pytorch_s_whatever_kind_its_kernels_are():
    """aten's CPU `_scaled_mm` multiplies with a float mm: a rule that read a GEMM kernel of
    another kind than the op's as the backend's (1ac0029, reverted the same day) counted 187 of
    eager's own passes in make test as computed by the backend."""
    instance = next(
        i
        for i in load_suite(SUITES / "fp8/scaled_mm.yaml")
        if i.id == "fp8/bias[rowwise-e4m3fn_e4m3fn-bf16-no_use_fast_accum]"
    )
    outcome = run_item(instance, EagerBackend(), seed=0, device=DEVICE, target=None)
    assert outcome.passed and outcome.computed_by == "pytorch"
    assert outcome.metrics["aten_gemm_kernels"] == {"aten::mm": 1}


@pytest.mark.parametrize("ident", SINGLE_GEMMS)
def test_the_reference_backend_computes_its_own(ident):
    """Its Triton kernels (in the interpreter on a CPU) run no aten GEMM kernel."""
    outcome = run(ident, resolve("reference"))
    assert outcome.passed and outcome.computed_by == "backend"
    assert outcome.metrics["aten_gemm_kernels"] == {}
    assert "eager_gemm_kernels" not in outcome.metrics  # eager is profiled only when needed


def test_a_backend_that_hands_single_nodes_back_passes_on_pytorch_s_kernels():
    """The outside trial's backend: a bare mm is dynamo's graph of one node, handed back to
    PyTorch; with an epilogue the graph has two nodes and the backend computes it."""
    backend = planted_backends.hands_back_single_nodes
    handed_back, own = run(MM, backend), run(MM_RELU, backend)
    assert handed_back.passed and own.passed
    assert handed_back.computed_by == "pytorch"
    assert handed_back.metrics["aten_gemm_kernels"] == {"aten::mm": 1}
    assert own.computed_by == "backend" and own.metrics["aten_gemm_kernels"] == {}


def test_a_pass_aten_computed_on_weights_the_backend_rounded_is_not_eager_s_bits():
    """An optimum-quanto trial (2026-12-02): 271 passes of aten's mm on weights quanto had
    quantized and dequantized read `pass (PyTorch)` like programs it never touched. Both are
    PyTorch's kernels; the result says which had the backend's code in between."""
    changed = run(MM, planted_backends.rounds_weights)
    assert changed.passed and changed.computed_by == "pytorch"
    assert changed.metrics["aten_gemm_kernels"] == {"aten::mm": 1}
    assert changed.metrics["eager_bits"] is False
    handed_back = run(MM, planted_backends.hands_back_single_nodes)
    assert handed_back.computed_by == "pytorch" and handed_back.metrics["eager_bits"] is True
    own = run(MM, resolve("reference"))  # only where PyTorch computed it
    assert own.computed_by == "backend" and "eager_bits" not in own.metrics


def test_inductor_s_extern_mm_is_pytorch_s_kernel():
    """Default inductor calls aten's mm (extern_kernels.mm) on the CPU and, for these shapes,
    on a GPU. Its compile inside the first call traced the program on fake tensors (aten::mm
    events under dynamo's compile events): those are not counted."""
    outcome = run(MM, resolve("inductor"))
    assert outcome.passed and outcome.computed_by == "pytorch"
    assert outcome.metrics["aten_gemm_kernels"] == {"aten::mm": 1}
    assert outcome.metrics["eager_bits"] is True  # aten's mm on the program's operands


@pytest.mark.skipif(DEVICE != "cuda", reason="inductor's Triton GEMM templates need a GPU")
def test_inductor_s_triton_template_is_its_own():
    outcome = run(MM, resolve("inductor-max-autotune:TRITON"))
    assert outcome.passed and outcome.computed_by == "backend"


def test_an_override_is_the_backend_s_kernel_and_its_fallback_to_aten_pytorch_s(
    quiet_overrides,
):
    """aten::addmm ran in both, and only one ran aten's own kernel: the library whose addmm
    computes the product itself is "backend"; the one whose addmm calls torch.mm (aten's mm)
    is "pytorch". torch.library is left as it was."""
    impl = torch.library.Library.impl
    addmm = "first/addmm[fp32-bias_MN-plain]"
    own = run(addmm, planted_backends.own_kernels_override)
    handed = run(addmm, planted_backends.aten_override_per_call)
    assert own.passed and own.computed_by == "backend"
    assert own.metrics["aten_gemm_kernels"] == {}
    assert own.metrics["overridden_gemm_ops"] == {"aten::addmm": 1}
    assert handed.passed and handed.computed_by == "pytorch"
    assert handed.metrics["aten_gemm_kernels"] == {"aten::mm": 1}
    assert handed.metrics["overridden_gemm_ops"] == {"aten::addmm": 1}
    assert torch.library.Library.impl is impl and pristine.altered() == ()


def test_aten_s_integer_gemm_on_operands_the_override_quantized_is_the_backend_s(
    quiet_overrides,
):
    """A torchao trial (2026-12-02): its override of aten::mm quantizes both operands to int8
    and multiplies them with aten's `_int_mm`; its 60 int8 passes read "computed by PyTorch",
    because one aten GEMM kernel ran where eager runs one. aten's integer GEMM on int8 operands
    is not the float GEMM eager computes: the product, and its error, are the library's."""
    outcome = run(MM, planted_backends.int8_override)
    assert outcome.kind == "wrong values" and outcome.computed_by == "backend"
    assert outcome.metrics["aten_gemm_kernels"] == {"aten::_int_mm": 1}
    assert outcome.metrics["overridden_gemm_ops"] == {"aten::mm": 1}
    assert outcome.metrics["eager_gemm_kernels"] == 1


def test_a_crash_after_aten_s_integer_gemm_in_the_override_is_the_backend_s(quiet_overrides):
    """A bitsandbytes trial (2026-12-02): 41 crashes inside its override, after aten's
    `_int_mm` on operands it quantized, read "computed by PyTorch" (an aten kernel ran, and the
    comparison with eager's kernels that makes the same path's passes the backend's never ran),
    whether the observed call raised or a later shape set's."""
    crashed = run(MM, planted_backends.int8_raises)
    assert crashed.kind == "crash" and crashed.computed_by == "backend"
    assert crashed.metrics["aten_gemm_kernels"] == {"aten::_int_mm": 1}
    assert crashed.metrics["eager_gemm_kernels"] == 1
    later = run("first/mm_dynamic", planted_backends.int8_raises_later)
    assert later.kind == "crash" and "shape set 1" in render(later).reason
    assert later.computed_by == "backend" and later.metrics["eager_gemm_kernels"] == 1


def test_aten_s_weight_only_gemm_is_seen_and_the_backend_s(quiet_overrides):
    """An optimum-quanto trial (2026-12-02): its qint8 weights reach aten's
    `_weight_int8pack_mm`, which computed 75 passes that read "computed by the backend" with no
    aten GEMM seen (`aten_gemm_kernels: {}`), and its crashes read "before any GEMM kernel ran".
    The kernel is seen now; a weight-only GEMM is not the float GEMM eager computes, so the
    product, and its error, are the library's."""
    outcome = run(MM, planted_backends.weight_int8_override)
    assert outcome.computed_by == "backend"
    assert outcome.metrics["aten_gemm_kernels"] == {"aten::_weight_int8pack_mm": 1}
    assert outcome.metrics["overridden_gemm_ops"] == {"aten::mm": 1}
    # and where aten's weight-only kernel failed on the weight the library packed as a
    # transposed view, the failure is the library's (a crash read "PyTorch's": an aten kernel
    # ran). The CPU kernel refuses such a weight; torch 2.11's CUDA kernel reads it as if
    # contiguous and returns wrong values (an H200, 2026-12-02)
    failed = run(MM, planted_backends.weight_int8_strided)
    if DEVICE == "cpu":
        assert failed.kind == "crash" and "contiguous" in render(failed).reason
    else:
        assert failed.kind == "wrong values"
    assert failed.computed_by == "backend"
    assert failed.metrics["aten_gemm_kernels"] == {"aten::_weight_int8pack_mm": 1}


def test_a_program_partly_left_to_aten_is_mixed():
    """Two GEMMs (seed cat_addmm: addmm twice), the first computed by the backend."""
    outcome = run("seed_max_autotune/cat_addmm", planted_backends.own_first_gemm)
    assert outcome.passed and outcome.computed_by == "mixed"
    assert outcome.metrics["aten_gemm_kernels"] == {"aten::addmm": 1}
    assert outcome.metrics["eager_gemm_kernels"] == 2


@pytest.mark.skipif(DEVICE != "cpu", reason="eager has no MX kernel on the CPU only")
def test_a_call_that_raised_inside_aten_s_kernel_is_pytorch_s():
    """Eager's own gap: aten::_scaled_mm_v2 raises on the CPU (no swizzled MX kernel). The item
    ends at the raise, before eager could be compared: aten's kernel ran, so PyTorch's."""
    instance = next(
        i
        for i in load_suite(SUITES / "blockscaled/scaled_mm_v2.yaml")
        if i.id.startswith("fscaled/mx[")
    )
    outcome = run_item(
        instance, planted_backends.hands_back_single_nodes, seed=0, device=DEVICE, target=None
    )
    assert outcome.kind == "crash" and outcome.computed_by == "pytorch"
    assert outcome.metrics["aten_gemm_kernels"] == {"aten::_scaled_mm_v2": 1}


def test_a_call_that_raised_before_any_gemm_kernel_is_no_one_s():
    """The backend raised before any GEMM kernel ran: nothing computed the item, and its record
    must not say the backend did (the OpenVINO trial's crashes said "backend")."""
    outcome = run(MM, planted_backends.raises_on_gemm)
    assert outcome.kind == "crash" and outcome.computed_by == attribution.NONE
    assert outcome.metrics["aten_gemm_kernels"] == {}
    assert (
        attribution.inherited(
            before_backend=False, eager_fails=True, computed_by=outcome.computed_by
        )
        is None
    )  # no one's computing: never eager's gap


@pytest.mark.skipif(DEVICE != "cpu", reason="eager runs fp16 grouped_mm on the CPU only")
def test_a_crash_while_dynamo_traced_is_no_one_s_and_torch_compile_s():
    """grouped/not_bf16 under a torch.compile backend: the meta function raises while dynamo
    traces, before the backend gets a graph and before any kernel runs."""
    instance = next(
        i
        for i in load_suite(SUITES / "grouped/grouped_mm.yaml")
        if i.id.startswith("grouped/not_bf16[")
    )
    outcome = run_item(
        instance, planted_backends.hands_back_single_nodes, seed=0, device=DEVICE, target=None
    )
    assert outcome.kind == "crash" and outcome.before_backend
    assert outcome.computed_by == attribution.NONE


def test_no_one_s_crashes_are_no_pass_of_anyone_s():
    """A "none" record is a failure: the counts of passes by computer leave it out."""
    from gemmconf.record import Record

    def record(outcome: str, who: str) -> Record:
        return Record.from_json(
            {"id": f"s/x[{outcome}]", "backend": "lib", "outcome": outcome, "computed_by": who}
        )

    records = [record("passed", "backend"), record("failed", attribution.NONE)]
    assert attribution.passes_by_computer(records) == {"backend": 1}
    assert attribution.by_backend(records) == {"lib": {"passed": {"backend": 1}}}


@pytest.mark.parametrize("backend", [EagerBackend(), planted_backends.hands_back_single_nodes])
def test_the_observation_changes_no_result(backend, monkeypatch):
    """The same item with the observing guard and without it: the same verdict, bit for bit."""
    seen = run(MM, backend)
    import gemmconf.runner as runner

    guards = tuple(g for g in runner.CALL_GUARDS if not isinstance(g, computed_by.ComputedBy))
    assert len(guards) == len(runner.CALL_GUARDS) - 1
    monkeypatch.setattr(runner, "CALL_GUARDS", guards)
    unseen = run(MM, backend)
    assert seen.passed and unseen.passed and unseen.computed_by is None
    for metric in ("err_ratio", "max_abs_err", "max_rel_err"):
        assert seen.metrics[metric] == unseen.metrics[metric]


def test_another_profiler_is_left_alone_and_the_call_not_observed():
    with torch.autograd.profiler.profile() as theirs:
        outcome = run(MM, EagerBackend())
    assert outcome.passed and outcome.computed_by is None
    assert "aten_gemm_kernels" not in outcome.metrics
    assert any(e.name == "aten::mm" for e in theirs.function_events)  # theirs saw the call


class _ProfilesItself:
    name = "profiles-itself"

    def availability(self):
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        class Compiled:
            def __call__(self, *args):
                with torch.autograd.profiler.profile():  # ends any profiler that was on
                    return fn(*args)

            def artifacts(self):
                return {}

            def compiles(self):
                return 1

        return Compiled()


def test_a_backend_that_profiles_itself_is_not_observed_and_still_passes():
    outcome = run(MM, _ProfilesItself())
    assert outcome.passed and outcome.computed_by is None


class _ThroughMode:
    """A backend whose calls run the program under a dispatch mode it enters for the call (as
    torchax's jax.jit traces): the mode computes mm in NumPy (`own`), or hands it to aten."""

    name = "through-mode"

    def __init__(self, own: bool) -> None:
        self.own = own

    def availability(self):
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        from torch.utils._python_dispatch import TorchDispatchMode

        own = self.own

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if own and func is torch.ops.aten.mm.default:
                    a, b = (t.detach().cpu().double().numpy() for t in args)
                    return torch.from_numpy(a @ b).to(args[0].dtype).to(args[0].device)
                return func(*args, **(kwargs or {}))

        class Compiled:
            def __call__(self, *inputs):
                with Mode():
                    return fn(*inputs)

            def compiles(self):
                return 1

        return Compiled()


@pytest.mark.parametrize(("own", "who"), [(True, "backend"), (False, "pytorch")])
def test_an_op_a_dispatch_mode_serves_is_no_kernel_of_aten_s(own, who):
    """The profiler records aten::mm when the dispatcher hands it to a dispatch mode, with a
    PythonDispatchMode event below it: a torchax trial's passes, computed by XLA, read as
    PyTorch's (2026-12-01). What the mode dispatches itself is looked at as any op."""
    outcome = run(MM, _ThroughMode(own))
    assert outcome.passed and outcome.computed_by == who
    expected = {} if own else {"aten::mm": 1}
    assert outcome.metrics["aten_gemm_kernels"] == expected


def test_a_fault_of_the_observation_is_not_the_backend_s(monkeypatch):
    def broken(events):
        raise RuntimeError("the harness's own bug")

    monkeypatch.setattr(computed_by, "kernels_of", broken)
    outcome = run(MM, EagerBackend())
    assert outcome.passed and outcome.computed_by is None


def test_torch_compile_failing_before_the_backend_is_inherited():
    """Dynamo runs an out= call with a non-contiguous target eagerly: "not compiled", for every
    backend built on torch.compile."""
    instance = next(
        i for i in load_suite(SUITES / "out/out.yaml") if i.id == "out/targets[mm-strided]"
    )
    outcome = run_item(
        instance, planted_backends.hands_back_single_nodes, seed=0, device=DEVICE, target=None
    )
    assert outcome.kind == "not compiled" and outcome.before_backend
    inherited = attribution.inherited(
        before_backend=outcome.before_backend, eager_fails=False, computed_by=outcome.computed_by
    )
    assert inherited == "torch.compile"


def _raised(*wrappers: str) -> Raised:
    return Raised("RuntimeError", "no", "", wrappers=wrappers)


def test_an_error_raised_while_dynamo_traced_is_before_the_backend():
    tracing = _raised("torch._dynamo.exc.TorchRuntimeError")
    compiling = _raised("torch._dynamo.exc.BackendCompilerFailed")
    assert ItemOutcome(problems=(Crash("call", tracing),)).before_backend
    assert not ItemOutcome(problems=(Crash("call", compiling),)).before_backend
    assert not ItemOutcome(problems=(Crash("call", _raised()),)).before_backend
    wrong = WrongError(_raised(), None, tracing)  # a meta function's class, not eager's
    assert ItemOutcome(problems=(wrong,)).before_backend
    harness = HarnessFault("judging", tracing)
    assert not ItemOutcome(problems=(harness, Crash("call", tracing))).before_backend
    assert not ItemOutcome().before_backend
    # in a process whose devices the backend changed, dynamo fails whatever the backend does
    changed = ("torch's PrivateUse1 device is named 'jax' in this process",)
    assert not ItemOutcome(
        problems=(Crash("call", tracing),), device_changed=changed
    ).before_backend


@pytest.mark.parametrize(
    ("eager_fails", "who", "expected"),
    [
        (True, "pytorch", "eager"),
        (True, "mixed", None),  # part of it ran the backend's kernels: its own
        (True, "backend", None),
        (True, None, None),  # not observed: never hidden among the inherited
        (False, "pytorch", None),
    ],
)
def test_inherited_from_eager_needs_pytorch_to_have_computed_it(eager_fails, who, expected):
    found = attribution.inherited(before_backend=False, eager_fails=eager_fails, computed_by=who)
    assert found == expected


NODES = (
    "dense/first.yaml::mm[fp32-64x64x64-nn@hands-back-single-nodes]",
    "epilogue/epilogue.yaml::unary[mm-relu-fp32@hands-back-single-nodes]",
    "blockscaled/scaled_mm_v2.yaml::mx[e4m3fn-128x128x128-bf16@hands-back-single-nodes]",
)


def gemmconf_run(folder: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", "import sys; from gemmconf.cli import main; sys.exit(main())"]
    command += ["run", *NODES, "--backend", "planted_backends:hands_back_single_nodes"]
    command += ["-p", "no:xdist", "--no-isolate", "--results", str(folder / "results.json")]
    command += ["--conformance-html", str(folder / "page.html"), *extra]
    tests = str(Path(__file__).resolve().parent)  # planted_backends
    environment = {**os.environ, "PYTHONPATH": suite_files.python_path(tests)}
    return warm_python.run(
        command, cwd=folder, capture_output=True, text=True, timeout=900, env=environment
    )


def header_of(summary: str) -> list[str]:
    """The summary table's column titles."""
    return next(line.split() for line in summary.splitlines() if line.startswith("  backend "))


@pytest.mark.skipif(DEVICE != "cpu", reason="eager's MX gap is the CPU's")
def test_a_run_counts_own_passes_and_inherited_failures_apart(tmp_path):
    """The whole suite path: the mm pass is PyTorch's, the mm + relu pass the backend's, and the
    MX item (eager has no such kernel on the CPU, and the backend handed it to aten) fails as
    inherited from eager: counted apart in the summary and on the page, and still a failure for
    pytest (exit status 1). --count-inherited counts it in."""
    done = gemmconf_run(tmp_path)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    records = {r["id"]: r for r in json.loads((tmp_path / "results.json").read_text())["records"]}
    document = json.loads((tmp_path / "results.json").read_text())
    mx = records["fscaled/mx[e4m3fn-128x128x128-bf16]"]
    assert mx["outcome"] == "failed" and mx["eager_fails"] is True
    assert mx["inherited"] == "eager" and mx["computed_by"] == "pytorch"
    assert records["first/mm[fp32-64x64x64-nn]"]["computed_by"] == "pytorch"
    assert records["epilogue/unary[mm-relu-fp32]"]["computed_by"] == "backend"
    assert "inherited" not in records["first/mm[fp32-64x64x64-nn]"]
    assert document["attribution"] == {
        "hands-back-single-nodes": {
            "passed": {"backend": 1, "pytorch": 1},
            "inherited": {"eager": 1},
        }
    }
    out = done.stdout
    table = out[out.index("gemmconf summary") :]
    assert "1 failure (crash, inherited from eager): " in table  # its group says so too
    # the mm pass PyTorch computed is not counted as the backend's
    assert header_of(table) == [
        "backend", "op", "dtype", "inherited", "pass", "pass", "(PyTorch)"
    ]  # fmt: skip
    assert (
        "who computed the passes: hands-back-single-nodes 2 passed (1 computed by the backend, "
        "1 by PyTorch)" in table
    )
    assert "inherited failures (not counted above; --count-inherited counts them in):" in table
    assert "FAIL fscaled/mx[e4m3fn-128x128x128-bf16]@hands-back-single-nodes (crash) " in table
    assert "[inherited from eager]" in table
    assert "1 failed, 2 passed" in out  # pytest's own count: a failure all the same
    page = (tmp_path / "page.html").read_text()
    assert "1 inherited</span>" in page and "0 failed</span>" in page
    assert "who computed the passes:" in page

    counted = gemmconf_run(tmp_path, "--count-inherited")
    assert counted.returncode == 1
    table = counted.stdout[counted.stdout.index("gemmconf summary") :]
    assert header_of(table) == ["backend", "op", "dtype", "FAIL", "pass", "pass", "(PyTorch)"]
    assert "inherited failures (counted above, --count-inherited):" in table
    page = (tmp_path / "page.html").read_text()
    assert "1 failed</span>" in page and "1 inherited</span>" not in page
