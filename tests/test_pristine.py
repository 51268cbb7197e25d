"""A backend must not change PyTorch for the whole process (gemmconf.pristine): eager and the fp64
reference run in it too, and would agree with whatever the backend computes."""

from __future__ import annotations

import warnings
from pathlib import Path

import planted_backends
import pytest
import torch
from torch.overrides import TorchFunctionMode

from gemmconf import capability, pristine
from gemmconf.backends.eager import EagerBackend
from gemmconf.outcome import EagerAltered, render
from gemmconf.runner import run_item
from gemmconf.scenario import load_suite

SUITES = Path(__file__).resolve().parents[1] / "suites"
DEVICE = capability.detect().device
# addmm items whose beta is not 1 (the planted bug's) and one whose beta is (it computes right)
ADDMM = [
    i
    for i in load_suite(SUITES / "dense/first.yaml")
    if i.op == "addmm" and i.id.split("[")[1].startswith("fp32-bias_MN")
]


@pytest.fixture
def quiet_overrides():
    with warnings.catch_warnings():  # torch warns at each override of a registered kernel
        warnings.filterwarnings("ignore", ".*Overriding a previously registered kernel")
        yield


def test_a_clean_process_is_not_altered_by_compiling():
    """No false alarm: what torch.compile, inductor and the reference backend do to a process
    (imports, registrations of their own) leaves the snapshot as it was."""
    pristine.remember()
    from gemmconf.backends import resolve

    compiled = torch.compile(lambda a, b: torch.relu(a @ b))
    compiled(torch.randn(8, 8), torch.randn(8, 8))
    reference = resolve("reference").compile(lambda a, b: a @ b, [], dynamic=None)
    reference(torch.randn(8, 8), torch.randn(8, 8))
    torch.manual_seed(0)  # torch 2.11 replaces it on first use: not a GEMM, not looked at
    assert pristine.altered() == ()


def test_an_aten_override_left_registered_is_not_judged(quiet_overrides, monkeypatch):
    """A kernel library registering a wrong addmm for the whole process: every item fails as the
    backend's crash, "PyTorch altered", naming the kernel and where it was registered. Another
    backend's item in the same process is not judged either, and is not its failure: an error
    that names the culprit."""
    monkeypatch.setattr(pristine, "_culprit", None)
    backend = planted_backends.AtenOverride("library-for-the-process", for_the_process=True)
    try:
        outcomes = [run_item(item, backend, seed=0, device=DEVICE, target=None) for item in ADDMM]
        beside = run_item(ADDMM[0], EagerBackend(), seed=0, device=DEVICE, target=None)
    finally:
        backend.release()
    assert beside.kind == "harness error" and beside.harness_error
    (problem,) = beside.problems
    assert isinstance(problem, EagerAltered) and problem.culprit == "library-for-the-process"
    details = " ".join(render(beside).details.split())
    assert details.startswith(
        "PyTorch altered: library-for-the-process changed what eager runs for the whole process, "
        "in the process that runs eager's items too (found before eager ran)"
    )
    assert "run eager apart from library-for-the-process (--backend eager)" in details
    assert pristine.altered() == ()  # released: the tests after this one see aten's own
    assert len(outcomes) == 3 and all(o.kind == "crash" for o in outcomes)
    for outcome in outcomes:
        (problem,) = outcome.problems
        assert isinstance(problem, EagerAltered) and problem.backend == "library-for-the-process"
        reason = render(outcome).details
        assert reason.startswith("PyTorch altered: library-for-the-process changed what eager")
        assert f"aten::addmm {DEVICE.upper()}'s kernel is registered at" in reason
        assert "planted_backends.py" in reason and "A backend that overrides aten ops" in reason
    # the first item's eager ran before compile() registered it: found after the backend's call
    assert outcomes[0].problems[0].found.startswith("after the backend's calls")
    assert outcomes[1].problems[0].found == "before eager ran"


def test_the_same_override_for_each_call_only_is_judged(quiet_overrides):
    """Registered for each call and undone before it returns (README's way): the planted bug
    fails as wrong values where beta is not 1, and beta = 1 passes."""
    backend = planted_backends.AtenOverride("library-per-call", for_the_process=False)
    outcomes = {
        item.id: run_item(item, backend, seed=0, device=DEVICE, target=None) for item in ADDMM
    }
    assert pristine.altered() == ()
    kinds = {item_id.split("-")[-1]: o.kind for item_id, o in outcomes.items()}
    assert kinds == {"plain]": None, "0.5]": "wrong values", "beta0]": "wrong values"}


def test_replaced_functions_and_modes_left_on_are_named(monkeypatch):
    assert pristine.altered() == ()
    monkeypatch.setattr(torch, "mm", lambda a, b: a)
    monkeypatch.setattr(torch.Tensor, "__matmul__", lambda a, b: a)
    found = pristine.altered()
    assert any(line.startswith("torch.mm was replaced (now ") for line in found)
    assert any(line.startswith("torch.Tensor.__matmul__ was replaced") for line in found)
    monkeypatch.undo()

    class Rewrite(TorchFunctionMode):
        pass

    mode = Rewrite()
    mode.__enter__()
    try:
        assert pristine.altered() == ("the modes on are Rewrite (they were none)",)
    finally:
        mode.__exit__(None, None, None)
    assert pristine.altered() == ()


def test_an_override_registered_before_the_snapshot_is_still_found(monkeypatch, quiet_overrides):
    """A backend imported before gemmconf remembered PyTorch (an in-process run whose conftest
    imports it): its Python-registered kernel is there in the snapshot too, and still named."""
    library = torch.library.Library("aten", "IMPL")
    library.impl("mm", lambda a, b: a, "CPU")
    try:
        monkeypatch.setattr(pristine, "_remembered", None)
        pristine.remember()
        found = pristine.altered()
    finally:
        library._destroy()
    (line,) = found
    assert line.startswith("aten::mm CPU's kernel is registered at ")
    assert "test_pristine.py:" in line and line.endswith(", from Python code outside torch")
