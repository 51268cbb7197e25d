"""The torch.compile layer of expectations (suites/expectations/torch_compile.yaml): a failure of
a backend built on torch.compile that torch.compile itself has with a pass-through backend (same
kind, a reason the entry's pattern matches, on this hardware) is inherited from torch.compile
and not counted among the backend's own; any other failure, and any failure of a backend that
never went through dynamo, is the backend's own."""

from __future__ import annotations

import importlib.util
import json
import os
import textwrap
from pathlib import Path

import pytest
import suite_files
import torch
import warm_python

from gemmconf import capability, expectations
from gemmconf.backends import resolve
from gemmconf.backends.eager import EagerBackend
from gemmconf.runner import run_item
from gemmconf.scenario import ScenarioError, discover, load_suite

pytest_plugins = ["pytester"]

SUITES = Path(__file__).resolve().parents[1] / "suites"
DEVICE = capability.detect().device
THROUGH_DYNAMO = "compile_layer_backends:off_by_one_compiled"
WITHOUT_DYNAMO = "compile_layer_backends:off_by_one_own"
EVERYWHERE = "[cpu, sm80, sm89, sm90, sm100, sm120]"

# tiny/mm[fp32-8x8x8]: the pass-through fails it so (inherited); tiny/mm[fp32-17x9x33]: with
# another reason, tiny/addmm: another kind (both the backend's own); the fp16 items: no entry
LAYER = textwrap.dedent(
    f"""\
    backend: torch.compile
    expectations:
      - match: "tiny/mm[fp32-8x8x8]"
        hardware: {EVERYWHERE}
        kind: wrong values
        message: "Tensor-likes are not close"
        reason: the pass-through adds one too (planted)
      - match: "tiny/mm[fp32-17x9x33]"
        hardware: {EVERYWHERE}
        kind: wrong values
        message: "a reason no failure gives"
        reason: the pass-through fails it for another reason (planted)
      - match: "tiny/addmm"
        hardware: {EVERYWHERE}
        kind: crash
        message: "."
        reason: the pass-through crashes on it (planted)
    """
)


def records(pytester: pytest.Pytester) -> dict[str, dict]:
    document = json.loads((pytester.path / "reports" / "results.json").read_text())
    return {r["id"]: r for r in document["records"]}


@pytest.fixture
def layered(make_suite):
    suite = make_suite()
    (suite.path / "suites" / "expectations").mkdir()
    (suite.path / "suites" / "expectations" / expectations.LAYER_FILE).write_text(LAYER)
    return suite


def test_a_failure_the_pass_through_shares_is_inherited_from_torch_compile(layered):
    # items run in a worker process (the default): a second in-process run would import
    # dynamo's lazily imported modules a second time
    # not mm_sm90: a GPU runs it, a sixth failure, and the summary lists five
    result = layered.runpytest("suites", "--backend", THROUGH_DYNAMO, "-rf", "-k", "not mm_sm90")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # a failure for pytest all the same
    found = records(layered)
    shared = found["tiny/mm[fp32-8x8x8]"]
    assert shared["outcome"] == "failed" and shared["kind"] == "wrong values"
    assert shared["inherited"] == "torch.compile"
    assert "torch.compile fails this item the same way" in shared["details"]
    assert "the pass-through adds one too (planted)" in shared["details"]
    for own in ("tiny/mm[fp32-17x9x33]", "tiny/addmm", "tiny/mm[fp16-8x8x8]"):
        assert found[own]["outcome"] == "failed" and found[own]["kind"] == "wrong values", own
        assert "inherited" not in found[own], own
        assert "torch.compile fails this item" not in found[own]["details"], own
    document = json.loads((layered.path / "reports" / "results.json").read_text())
    assert document["attribution"]["off-by-one-compiled"]["inherited"] == {"torch.compile": 1}
    out = result.stdout.str()
    summary = out[out.index("gemmconf summary") :]
    assert "inherited failures (not counted above; --count-inherited counts them in):" in summary
    assert "torch.compile failed before the backend got the graph: 1" in summary
    listed = [line for line in summary.splitlines() if line.strip().startswith("FAIL ")]
    assert "[inherited from torch.compile]" in listed[-1]  # after the backend's own
    assert not any("[inherited" in line for line in listed[:-1])

    counted = layered.runpytest(
        "suites", "--backend", THROUGH_DYNAMO, "--count-inherited", "-k", "not mm_sm90"
    )
    summary = counted.stdout.str()[counted.stdout.str().index("gemmconf summary") :]
    assert "inherited failures (counted above, --count-inherited):" in summary


def test_a_backend_that_never_entered_dynamo_owns_the_same_failure(layered):
    layered.runpytest("suites", "--backend", WITHOUT_DYNAMO, "--no-isolate")
    found = records(layered)
    same = found["tiny/mm[fp32-8x8x8]"]
    assert same["outcome"] == "failed" and same["kind"] == "wrong values"
    assert "inherited" not in same
    assert "torch.compile fails this item" not in same["details"]


def test_a_backend_that_renamed_torch_s_device_owns_what_torch_compile_then_fails(
    layered, monkeypatch
):
    """A backend whose import renames torch's PrivateUse1 device (torchax's, 2026-12-01) makes
    torch.compile raise while dynamo traces every program: not torch.compile's failure, which
    a process the backend has not changed does not have, but the backend's own, saying why.
    Where the layer lists the item's failure, it stays inherited (the layer is measured)."""
    here = str(Path(__file__).resolve().parent)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, (here, os.environ.get("PYTHONPATH"))))
    )
    result = warm_python.runpytest(
        layered, "suites", "--backend", "device_backends:renaming_compiled", "-k", "fp16 or addmm"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    found = records(layered)
    own = {item: r for item, r in found.items() if "fp16" in item}
    assert own and len(own) < len(found), result.stdout.str()[-2000:]
    for item, record in found.items():
        assert record["outcome"] == "failed" and record["kind"] == "crash", item
        assert "before the backend was handed its graph" in record["details"], item
        if item in own:
            assert "inherited" not in record, item
            assert "Not inherited from torch.compile" in record["details"], item
            assert "PrivateUse1 device is named 'planteddev' here" in record["details"], item
        else:  # tiny/addmm: the layer's entry expects a crash there
            assert record["inherited"] == "torch.compile", item
            assert "Not inherited" not in record["details"], item


def test_the_layer_holds_only_on_the_hardware_it_names(make_suite):
    here = capability.detect()
    # the tiny items run on the CPU wherever a GPU is absent; else on this GPU's class
    current = "cpu" if here.device == "cpu" else here.hardware_class
    elsewhere = "sm100" if current != "sm100" else "sm90"
    suite = make_suite()
    (suite.path / "suites" / "expectations").mkdir()
    (suite.path / "suites" / "expectations" / expectations.LAYER_FILE).write_text(
        LAYER.replace(EVERYWHERE, elsewhere, 1)
    )
    suite.runpytest("suites", "--backend", THROUGH_DYNAMO)
    assert "inherited" not in records(suite)["tiny/mm[fp32-8x8x8]"]


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ("{match: 'tiny/addmm', hardware: cpu, message: x, reason: r}", "kind"),
        ("{match: 'tiny/addmm', hardware: cpu, kind: crash, reason: r}", "message"),
        ("{match: 'tiny/addmm', kind: crash, message: x, reason: r}", "hardware"),
        ("{match: 'tiny/addmm', status: skip, hardware: cpu, reason: r}", "status"),
    ],
)
def test_a_layer_entry_says_how_and_where_the_pass_through_fails(tmp_path, entry, field):
    suites = suite_files.lay_out(tmp_path, ini=False)
    (suites / "expectations").mkdir()
    (suites / "expectations" / expectations.LAYER_FILE).write_text(
        f"backend: torch.compile\nexpectations:\n  - {entry}\n"
    )
    instances = load_suite(suites / "tiny.yaml", root=tmp_path)
    with pytest.raises(ScenarioError, match=field):
        expectations.load_layer(suites / "expectations", instances, tmp_path)


def test_dynamo_traced_is_observed_per_item():
    """What the layer keys on: dynamo processed a frame during the backend's calls."""
    import compile_layer_backends

    instance = next(i for i in load_suite(SUITES / "dense/first.yaml") if i.op == "mm")
    kwargs = {"seed": 0, "device": DEVICE, "target": None}
    assert run_item(instance, resolve("dynamo:eager"), **kwargs).through_dynamo
    assert not run_item(instance, EagerBackend(), **kwargs).through_dynamo
    own = run_item(instance, compile_layer_backends.off_by_one_own, **kwargs)
    assert own.kind == "wrong values" and not own.through_dynamo


def test_the_suite_s_layer_loads_and_every_entry_matches_an_item():
    instances = [i for path in discover([SUITES], SUITES.parent) for i in load_suite(path)]
    table = expectations.load_layer(SUITES / "expectations", instances, SUITES.parent)
    assert table is not None and table.entries
    assert all(e.kind and e.message and e.hardware for e in table.entries)


def _layer_tool():
    spec = importlib.util.spec_from_file_location(
        "torch_compile_layer", SUITES.parent / "tools" / "torch_compile_layer.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_layer_tool_finds_failures_the_layer_lacks_and_entries_a_run_contradicts(tmp_path):
    """tools/torch_compile_layer.py over a pass-through's records: a failure the layer has
    agrees, one it lacks is drafted as an entry, eager's own is left out, an entry whose item
    passed is named."""
    tool = _layer_tool()
    suites = suite_files.lay_out(tmp_path, ini=False)
    (suites / "expectations").mkdir()
    (suites / "expectations" / expectations.LAYER_FILE).write_text(LAYER)
    instances = load_suite(suites / "tiny.yaml", root=tmp_path)
    table = expectations.load_layer(suites / "expectations", instances, tmp_path)
    environment = {"device": "cpu", "torch": "2.13.0+cpu"}

    def record(ident, outcome, kind=None, reason=None, **more):
        scenario = ident.split("/")[1].split("[")[0]
        fields = {"id": ident, "suite": "tiny", "scenario": scenario, "outcome": outcome}
        fields |= {"kind": kind, "reason": reason, "environment": environment, **more}
        return fields

    records = [
        record("tiny/mm[fp32-8x8x8]", "failed", "wrong values", "Tensor-likes are not close!"),
        record("tiny/mm[fp16-8x8x8]", "failed", "crash", "RuntimeError: no fp16 (M=8)"),
        record("tiny/mm[fp16-17x9x33]", "failed", "crash", "no kernel", inherited="eager"),
        record("tiny/addmm", "passed"),
    ]
    missing, contradicted = tool.compare(records, table)
    assert [r["id"] for r in missing] == ["tiny/mm[fp16-8x8x8]"]
    assert [(r["id"], e.kind) for r, e in contradicted] == [("tiny/addmm", "crash")]
    (entry,) = tool.draft(missing, [r for r in records if r["outcome"] in tool.RAN])
    assert entry["match"] == "tiny/mm[fp16-8x8x8]" and entry["kind"] == "crash"
    assert entry["hardware"] == "cpu" and entry["torch"] == "==2.13.*"
    assert entry["message"] == "no fp"  # cut before the first number: a draft to edit


def test_a_compile_count_tells_frames_from_recompiles_of_one_frame():
    """A lightning-thunder trial (2026-11-30): its backward, traced by dynamo as a frame of its
    own, made 2 compiles over 1 shape set, and the report said "recompiled"."""
    import torch

    from gemmconf.backends.dynamo import TorchCompiled
    from gemmconf.outcome import Recompiled

    def passthrough(gm, example_inputs):
        return gm.forward

    def helper(x):
        return x.cos() * 2

    def broken(x):
        y = x.sin()
        torch._dynamo.graph_break()
        return helper(y) + 1

    two_frames = TorchCompiled(broken, passthrough, dynamic=False)
    two_frames(torch.randn(3))
    assert (two_frames.compiles(), two_frames.graph_frames()) == (2, 2)

    def plain(x):
        return x.sin() + 1

    one_frame = TorchCompiled(plain, passthrough, dynamic=False)
    one_frame(torch.randn(3))
    one_frame(torch.randn(4, 5))  # a new shape: the same frame compiled again
    assert (one_frame.compiles(), one_frame.graph_frames()) == (2, 1)
    assert TorchCompiled(plain, "eager", dynamic=False).graph_frames() is None  # not seen

    said = Recompiled(2, 1, ("M=4 N=4 K=4",), "static", frames=2).describe()
    assert said.splitlines()[0].startswith("Recompiled: 2 compiles over 1 shape set(s)")
    assert "came from 2 frames, not from one frame compiled again" in said
    assert "frames" not in Recompiled(2, 1, ("M=4 N=4 K=4",), "static", frames=1).describe()


def test_a_name_torch_keeps_a_module_of_but_does_not_register_says_so():
    """An outside author's trial (2026-11-30) installed onnxruntime for `dynamo:onnxrt`, which
    torch 2.13 keeps as a placeholder module registering nothing."""
    from gemmconf.backends import UnknownBackendError

    with pytest.raises(UnknownBackendError) as raised:
        resolve("dynamo:onnxrt")
    text = str(raised.value)
    if "onnxrt" in text.split(";")[1]:  # a torch that registers it: nothing to say
        pytest.skip("this torch registers onnxrt")
    assert "has a module torch._dynamo.backends.onnxrt, but no backend registered from it" in text
    # the onnxrt trial (2026-11-30) had onnxruntime, onnxscript and onnx installed: the error
    # says that no package helps, rather than "or it needs a package that is missing"
    assert "its source registers none (a placeholder" in text
    assert "installing a package does not bring it back" in text
    with pytest.raises(UnknownBackendError) as raised:
        resolve("dynamo:nosuch")
    assert "torch._dynamo.backends.nosuch" not in str(raised.value)


def test_a_backend_module_registers_only_in_code_not_in_comments(tmp_path):
    """A placeholder (torch 2.13's onnxrt.py: its `register_backend` lines commented out) calls
    none; a module that registers by call or by decorator does; an unreadable one is not claimed
    to be a placeholder."""
    from gemmconf.backends.dynamo import _calls_register_backend

    sources = {
        "placeholder": '"""Placeholder"""\n# register_backend(name="x", compiler_fn=f)\n',
        "call": "from .registry import register_backend\nregister_backend(name='x')\n",
        "decorator": "@registry.register_backend\ndef x(gm, inputs):\n    return gm\n",
    }
    found = {}
    for kind, text in sources.items():
        (tmp_path / f"{kind}.py").write_text(text)
        found[kind] = _calls_register_backend(str(tmp_path / f"{kind}.py"))
    assert found == {"placeholder": False, "call": True, "decorator": True}
    assert _calls_register_backend(str(tmp_path / "absent.py"))


@pytest.mark.skipif(
    torch.cuda.is_available(),
    reason="the inductor failure it uses is a CPU one (fp8/layouts_cpu_only; inductor.yaml)",
)
def test_a_failure_inductor_is_expected_to_have_says_so_and_stays_the_backends(tmp_path):
    """A lightning-thunder trial (2026-11-30): 90 of thunder's own failures were inductor's
    (graphs it hands to inductor), found only by a second run on inductor. `dynamo:inductor`
    stands for such a backend here: inductor's expectations file lists the item."""
    import json
    import sys

    root = Path(__file__).resolve().parents[1]
    results = tmp_path / "results.json"
    # the item's own suite file: the other 26 would only be expanded and deselected
    command = [sys.executable, "-m", "pytest", "suites/fp8/scaled_mm.yaml"]
    command += ["--backend", "dynamo:inductor"]
    command += ["-k", "layouts_cpu_only and rowwise-row-offset", "-p", "no:xdist", "-q"]
    command += ["-p", "no:randomly", "--results", str(results), "--conformance-html", "none"]
    done = warm_python.run(command, cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout[-2000:]
    (record,) = json.loads(results.read_text())["records"]
    assert record["outcome"] == "failed" and not record.get("inherited")
    # its entry names the failure's kind and message: "the same way"
    assert "Inductor is expected to fail this item the same way: " in record["details"]
    assert "suites/expectations/inductor.yaml:" in record["details"]


def test_the_inductor_note_needs_the_same_failure():
    from types import SimpleNamespace

    from gemmconf.plugin.items import inductor_note

    class Entry:  # an expectation that expects crashes whose reason says "mat_a must"
        kind, message = "crash", "mat_a must"

        def expects(self, kind, reason):
            return (self.kind is None or kind == self.kind) and (
                self.message is None or self.message in reason
            )

        def text(self):
            return "rejects it [inductor.yaml:1]"

    crash = SimpleNamespace(kind="crash", through_dynamo=True)
    note = inductor_note(Entry(), crash, "RuntimeError: mat_a must be row_major")
    assert note.startswith("Inductor is expected to fail this item the same way: rejects it")
    assert inductor_note(Entry(), crash, "RuntimeError: something else") is None
    wrong = SimpleNamespace(kind="wrong values", through_dynamo=True)
    assert inductor_note(Entry(), wrong, "mat_a must") is None
    assert inductor_note(None, crash, "RuntimeError: mat_a must be row_major") is None
    # a torchao trial (an aten override: no dynamo) read "the same way" of an entry that names
    # neither kind nor reason, for a failure of another cause
    overrides = SimpleNamespace(kind="crash", through_dynamo=False)
    assert inductor_note(Entry(), overrides, "RuntimeError: mat_a must be row_major") is None
    anything = Entry()
    anything.kind = anything.message = None
    loose = inductor_note(anything, wrong, "err_ratio 5614 > 3.0 allowed")
    assert loose.startswith("Inductor is expected to fail this item too, in a way its entry")
