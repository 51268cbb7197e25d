"""A standalone repro fails the way its item failed under gemmconf, in the run's words: a backend
that raises gets the run's one-line verdict ("Backend raised during the call ...: Type:
message") and a FAILED line naming the exception, its traceback after them; an out= target the
call never writes is an unwritten target, as the run says, not NaN positions that differ. Found
by the OpenVINO trial (reports/published/2026-11-28-cpu-openvino, issue 42 item 5). The repro
runs in this process (its `main()`), on a planted backend imported as `--backend` names it."""

from __future__ import annotations

import sys
import types

import planted_backends
import pytest
import torch

from gemmconf import api
from gemmconf.backends import resolve
from gemmconf.outcome import render
from gemmconf.repro import repro_source
from gemmconf.runner import run_item

RAISES = "planted_backends:raises_on_gemm"
UNWRITTEN = "planted_backends:out_target_unwritten"


def run_reason(item: str, backend) -> str:
    (instance,) = api.instances([item])
    outcome = run_item(instance, backend, seed=0, device="cpu", target=None)
    assert not outcome.passed
    return render(outcome).reason


def repro(item: str, spec: str, capsys) -> tuple[int, list[str]]:
    """The repro of `item` on `spec`, run as its file runs: (exit status, what it printed)."""
    (instance,) = api.instances([item])
    # a module of its own, as the file run is: torch 2.11's dynamo imports the module of the
    # function it traces by name (on an H200, 2026-11-30: "No module named 'repro_under_test'")
    module = types.ModuleType("repro_under_test")
    code = compile(repro_source(instance, spec), f"<repro of {item}>", "exec")
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, module.__name__, module)
        exec(code, module.__dict__)
        capsys.readouterr()
        status = module.main()
    return status, capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("item", ["first/mm[fp32-127x65x33-nn]", "first/addmm[fp32-bias_N-plain]"])
def test_a_crash_s_repro_gives_the_run_s_verdict_then_the_traceback(item, capsys):
    reason = run_reason(item, planted_backends.raises_on_gemm)
    assert reason.startswith("Backend raised during the call on shape set 0 (")
    status, lines = repro(item, RAISES, capsys)
    assert status == 1
    assert lines[0] == f"  {reason}"
    assert lines[1] == (
        f"FAILED: {item} on {RAISES}: the backend raised RuntimeError (its traceback follows)"
    )
    assert lines[2] == "Traceback (most recent call last):"
    assert lines[-1].startswith("RuntimeError: planted: no kernel for ")


def _raising_compiler(gm, example_inputs):
    raise ValueError("planted: this compiler takes no graph")


RAISING_COMPILER = "gemmconf_test_raising_compiler"


def test_a_dynamo_backend_s_compile_error_is_named_inside_torch_compile_s_wrapper(capsys):
    """A registered torch.compile backend whose compiler raises: torch.compile wraps it
    (BackendCompilerFailed); the run and the repro both name the error inside."""
    if RAISING_COMPILER not in torch._dynamo.list_backends(exclude_tags=()):
        torch._dynamo.register_backend(_raising_compiler, name=RAISING_COMPILER)
    item, spec = "first/mm[fp32-64x64x64-nn]", f"dynamo:{RAISING_COMPILER}"
    reason = run_reason(item, resolve(spec))
    assert reason.endswith("ValueError: planted: this compiler takes no graph")
    assert reason.startswith("Backend raised while compiling its graph, in the call on shape set")
    status, lines = repro(item, spec, capsys)
    assert status == 1 and lines[0] == f"  {reason}"
    assert lines[1].endswith("the backend raised ValueError (its traceback follows)")


def test_an_unwritten_out_target_s_repro_says_so_as_the_run_does(capsys):
    item = "out/targets[mm-contiguous]"
    reason = run_reason(item, planted_backends.out_target_unwritten)
    assert reason.startswith("Unwritten out= target: all 1920 elements of out on shape set 0")
    status, lines = repro(item, UNWRITTEN, capsys)
    assert status == 1
    assert lines[0] == f"  {reason}"  # the first problem is the run's reason, word for word
    assert lines[-1] == f"FAILED: {item} on {UNWRITTEN}"


def test_a_written_out_target_is_not_called_unwritten(capsys):
    """Eager writes its target: the repro passes (and says nothing of unwritten targets)."""
    status, lines = repro("out/targets[mm-contiguous]", "eager", capsys)
    assert status == 0, lines
    assert lines == ["PASSED: out/targets[mm-contiguous] on eager"]
