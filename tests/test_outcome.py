"""Outcomes as data, failure kinds, exact errors, harness faults and the --backend rules.

- an item's outcome (`ItemOutcome`) carries data; `render` alone writes words, its first line
  standing alone; the record's outcome (xfail, xpass, error) is decided from that data;
- error scenarios want eager's exact exception class after torch.compile's wrappers are taken
  off; `NotImplementedError` is "unsupported", never the expected rejection;
- a fault of the harness itself is an `error` of kind "harness error" that names the exception's
  type and where it was raised, even with an empty message;
- `--backend` naming an unavailable backend or nothing is a usage error.
"""

from __future__ import annotations

import json
from pathlib import Path

import planted_backends
import pytest
import torch

from gemmconf import capability, expectations, inputs, program
from gemmconf.backends import resolve
from gemmconf.backends.eager import EagerBackend
from gemmconf.outcome import (
    Crash,
    HarnessFault,
    ItemOutcome,
    NotACompiled,
    Raised,
    Unsupported,
    WrongError,
    render,
    unwrap,
)
from gemmconf.report.summary import render_terminal_summary
from gemmconf.runner import run_item
from gemmconf.scenario import discover, load_suite

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent
SUITES = TESTS.parent / "suites"
HERE = capability.detect()  # the CPU, or the GPU a GPU machine runs the suite on


def error_cases_here() -> list:
    return [
        i
        for path in discover([SUITES], TESTS.parent)
        for i in load_suite(path)
        if i.checks.raises and capability.unmet(i.requires, HERE) is None
    ]


def device_of(instance) -> str:
    return capability.item_device(instance.requires, HERE.device)  # as the plugin decides


def error_item(ident: str):
    return next(i for i in load_suite(SUITES / "errors/errors.yaml") if i.id == ident)


def test_dynamo_wrappers_are_taken_off():
    def mm(a, b):
        return torch.mm(a, b)

    with pytest.raises(Exception) as traced:  # fake tensors reject it while dynamo traces
        torch.compile(mm, backend="eager")(torch.randn(4, 5), torch.randn(6, 7))
    inner, wrappers = unwrap(traced.value)
    assert type(traced.value).__name__ == "TorchRuntimeError" and type(inner) is RuntimeError
    assert wrappers[0] == "torch._dynamo.exc.TorchRuntimeError"

    def failing_backend(gm, example_inputs):
        raise ValueError("the backend's own error")

    torch._dynamo.reset()
    with pytest.raises(Exception) as compiled:
        torch.compile(mm, backend=failing_backend)(torch.randn(4, 5), torch.randn(5, 7))
    raised = Raised.of(compiled.value)
    assert raised.type_name == "ValueError" and raised.message == "the backend's own error"
    assert "torch._dynamo.exc.BackendCompilerFailed" in raised.wrappers


def test_what_a_backends_error_was_raised_from_is_in_its_first_line():
    """torch 2.13's `tvm` backend raises "Please install apache-tvm" from the ImportError that
    says what is wrong (`cannot import name 'relay'`, apache-tvm 0.27 installed); the six
    traceback lines kept lost it. The onnxrt trial's TVM fallback, 2026-11-30."""

    def mm(a, b):
        return torch.mm(a, b)

    def tvm_like(gm, example_inputs):
        try:
            raise ImportError("cannot import name 'relay' from 'tvm'")
        except ImportError as e:
            raise ImportError("Please install apache-tvm to use the tvm backend.") from e

    torch._dynamo.reset()
    with pytest.raises(Exception) as compiled:
        torch.compile(mm, backend=tvm_like)(torch.randn(4, 5), torch.randn(5, 7))
    raised = Raised.of(compiled.value)
    assert raised.message == "Please install apache-tvm to use the tvm backend."
    assert raised.cause == "ImportError: cannot import name 'relay' from 'tvm'"
    assert raised.short().endswith(
        "(raised from ImportError: cannot import name 'relay' from 'tvm')"
    )
    crash = render(ItemOutcome(problems=(Crash("compile", raised),)))
    assert "cannot import name 'relay'" in crash.reason
    assert Raised.of(ValueError("alone")).cause == ""


class _Raising:
    """compile() returns a function that raises `error` (a class), with `message`."""

    def __init__(self, error: type[BaseException], message: str = "rejected"):
        self.name = f"raises-{error.__name__}"
        self.error, self.message = error, message

    def availability(self):
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        def call(*args):
            raise self.error(self.message)

        return planted_backends.PlantedCompiled(call, planted_backends._untouched, False)


class _SubclassOfRuntimeError(RuntimeError):
    pass


@pytest.mark.parametrize(
    "error,message,kind",
    [
        (RuntimeError, "mat1 and mat2 shapes cannot be multiplied", None),
        (NotImplementedError, "no kernel for this", "unsupported"),  # a RuntimeError subclass
        (_SubclassOfRuntimeError, "close, but not eager's class", "wrong error"),
        (ValueError, "another class", "wrong error"),
    ],
)
def test_error_scenarios_want_eagers_exact_class(error, message, kind):
    item = error_item("errors/inner_dim_mismatch[mm-fp32]")
    outcome = run_item(item, _Raising(error, message), seed=0, device="cpu", target=None)
    assert outcome.kind == kind
    assert outcome.raised is not None and outcome.raised.message == message


def test_a_message_pattern_must_match():
    item = error_item("errors/dtype_mismatch[mm-fp32_fp16]")  # match: "dtype|scalar type"
    wrong = run_item(item, _Raising(RuntimeError, "shapes"), seed=0, device="cpu", target=None)
    assert wrong.kind == "wrong error" and isinstance(wrong.problems[0], WrongError)
    assert render(wrong).reason.startswith("Wrong message: eager raises RuntimeError")
    right = _Raising(RuntimeError, "expected m1 and m2 to have the same dtype")
    assert run_item(item, right, seed=0, device="cpu", target=None).passed


def test_returning_where_eager_raises_is_no_error():
    outcome = run_item(
        error_item("errors/bias_mismatch[addmm_n1-fp32]"),
        planted_backends.PlantedBackend("ignores", lambda f, a, k: torch.zeros(4, 7)),
        seed=0,
        device="cpu",
        target=None,
    )
    assert outcome.kind == "no error"
    assert "the backend returned Tensor of shape (4, 7)" in render(outcome).reason


def test_not_implemented_everywhere_fails_every_error_case():
    """Before: such a backend passed 106 of the 111 CPU error-case items."""
    items = error_cases_here()
    assert len(items) >= 111
    backend = planted_backends.not_implemented_everywhere
    kinds = {
        i.id: run_item(i, backend, seed=0, device=device_of(i), target=None).kind for i in items
    }
    assert set(kinds.values()) == {"unsupported"}, kinds


def test_reference_and_eager_pass_every_error_case_without_laundering():
    """Each passes every error case this machine runs but those its expectations file lists
    with the reason (for the reference backend: torch's meta functions raising another class than
    eager while dynamo traces, before any backend code runs; those fail for every torch.compile
    backend)."""
    items = error_cases_here()
    for backend in (EagerBackend(), resolve("reference")):
        listed = expectations.read(expectations.path_for(SUITES / "expectations", backend.name))
        failed = {
            i.id: render(o).reason
            for i in items
            if not (o := run_item(i, backend, seed=0, device=device_of(i), target=None)).passed
        }
        unlisted = {
            ident: reason
            for ident, reason in failed.items()
            if not any(e.match(expectations.Facts(ident)) for e in listed.entries)
        }
        assert not unlisted, (backend.name, unlisted)


def test_a_harness_fault_is_a_harness_error_naming_type_and_place(monkeypatch):
    item = next(i for i in load_suite(SUITES / "dense/first.yaml") if i.op == "mm")

    def broken_reference(instance):
        def reference(*args):
            raise KeyError()  # an empty message

        return reference

    monkeypatch.setattr(program, "make_reference", broken_reference)
    outcome = run_item(item, EagerBackend(), seed=0, device="cpu", target=None)
    assert outcome.kind == "harness error" and outcome.harness_error
    fault = outcome.problems[0]
    assert isinstance(fault, HarnessFault) and fault.stage == "computing the fp64 reference"
    reason = render(outcome).reason
    assert reason.startswith("Harness error in computing the fp64 reference: KeyError")
    assert "(no message) at " in reason and "test_outcome.py:" in reason


def test_a_gpu_fault_is_the_backend_s_only_once_the_backend_ran(monkeypatch):
    """A CUDA fault surfaces at a later synchronisation. Before the backend was given anything
    (eager's own launches, the inputs) it is a harness error; after, the backend's crash."""
    item = next(i for i in load_suite(SUITES / "dense/first.yaml") if i.op == "mm")

    def fault(*args, **kwargs):
        raise torch.AcceleratorError("CUDA error: device-side assert triggered")

    real_build = inputs.build_copies

    def build_then_fault(*args, **kwargs):
        built = real_build(*args, **kwargs)
        fault()  # a fault of the inputs' own copies to the GPU, before the backend is given them
        return built

    monkeypatch.setattr(inputs, "build_copies", build_then_fault)
    before = run_item(item, EagerBackend(), seed=0, device="cpu", target=None)
    assert before.kind == "harness error", render(before).reason
    monkeypatch.setattr(inputs, "build_copies", real_build)
    after = run_item(
        item, planted_backends.PlantedBackend("faults", fault), seed=0, device="cpu", target=None
    )
    assert after.kind == "crash" and after.cuda_fault, render(after).reason


def test_a_fault_building_inputs_is_the_harness_s(monkeypatch):
    item = next(i for i in load_suite(SUITES / "dense/first.yaml") if i.op == "mm")
    monkeypatch.setattr(inputs, "build_copies", lambda *a, **k: 1 / 0)
    outcome = run_item(item, EagerBackend(), seed=0, device="cpu", target=None)
    assert outcome.kind == "harness error"
    assert "building the inputs: ZeroDivisionError: division by zero" in render(outcome).reason


class _ReturnsWhatTorchCompileReturns:
    """A backend as its author might first write it: compile() hands back torch.compile's
    result (or anything else) instead of a gemmconf Compiled."""

    name = "plain"

    def __init__(self, make):
        self.make = make

    def availability(self):
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        return self.make(fn)


@pytest.mark.parametrize(
    ("make", "lacks"),
    [
        (lambda fn: torch.compile(fn, backend="eager"), "lacks compiles()."),
        (lambda fn: 7, "lacks __call__ and compiles()."),
    ],
)
def test_a_compile_result_that_is_not_a_compiled_is_said_once_plainly(make, lacks):
    """Not a traceback from whichever use of it fails first: the item fails as the backend's
    crash, naming what the result lacks and where a Compiled comes from."""
    item = next(i for i in load_suite(SUITES / "dense/first.yaml") if i.op == "mm")
    outcome = run_item(
        item, _ReturnsWhatTorchCompileReturns(make), seed=0, device="cpu", target=None
    )
    assert outcome.kind == "crash" and not outcome.harness_error
    (problem,) = outcome.problems
    assert isinstance(problem, NotACompiled)
    reason = render(outcome).reason
    assert reason.startswith("Not a Compiled: plain's compile() returned a")
    assert lacks in reason and "gemmconf new-backend NAME" in reason


def test_the_renderer_writes_one_standalone_line_first():
    item = next(i for i in load_suite(SUITES / "dense/first.yaml") if i.id.endswith("-col]"))
    outcome = run_item(item, planted_backends.ignores_strides, seed=0, device="cpu", target=None)
    message = render(outcome, repro="pytest x")
    assert "\n" not in message.reason and message.reason == message.details.splitlines()[0]
    assert message.text.endswith("\nReproduce: pytest x")
    assert "Reproduce" not in message.details
    assert render(ItemOutcome()).reason == "passed"


def test_kinds_are_counted_apart_in_the_summary():
    def record(outcome, kind=None):
        return {
            "id": "s/x",
            "backend": "b",
            "op": "mm",
            "dtype": "fp32",
            "outcome": outcome,
            "kind": kind,
            "reason": "r",
        }

    records = [
        record("failed", "unsupported"),
        record("failed", "unsupported"),
        record("failed", "wrong values"),
        record("error", "harness error"),
        record("xfailed", "unsupported"),
        record("passed"),
    ]
    text = "\n".join(render_terminal_summary(records, HERE))
    assert "failing by kind: b: wrong values 1, unsupported 2, harness error 1" in text
    assert "expected to fail by kind: b: unsupported 1" in text
    assert "FAIL s/x@b (unsupported) - r" in text


SUITE = """
suite: tiny
scenarios:
  - name: mm
    op: mm
    axes:
      dtype: [fp32, bf16]
    shape: {M: 8, N: 8, K: 8}
  - name: bad
    op: mm
    shape: {M: 4, N: 4, K: 4}
    checks: {raises: ValueError}
"""
EXPECTATIONS = """
backend: caches-results
expectations:
  - match: "tiny/mm[fp32]"
    status: xfail
    reason: a cache keyed by shapes
  - match: "tiny/mm[bf16]"
    status: xfail
    reason: a cache keyed by shapes
"""


@pytest.fixture
def suite(make_suite) -> pytest.Pytester:
    return make_suite(SUITE, expectations={"caches-results": EXPECTATIONS})


def test_records_carry_outcomes_decided_from_data_and_kinds(suite):
    result = suite.runpytest(
        "suites", "--backend", "eager,planted_backends:caches_results", "--no-isolate"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    document = json.loads((suite.path / "reports" / "results.json").read_text())
    got = {(r["id"], r["backend"]): (r["outcome"], r.get("kind")) for r in document["records"]}
    assert got[("tiny/mm[fp32]", "eager")] == ("passed", None)
    assert got[("tiny/mm[fp32]", "caches-results")] == ("xfailed", "wrong values")
    assert got[("tiny/bad", "eager")] == ("error", "harness error")  # eager does not raise
    assert document["kind_counts"] == {"harness error": 2}
    bad = next(r for r in document["records"] if r["id"] == "tiny/bad")
    assert bad["suite_error"] is True and "expects eager to raise ValueError" in bad["reason"]
    assert all(r["details"] for r in document["records"] if r["outcome"] != "passed")


def test_a_failed_record_has_details_where_its_message_is_one_line():
    """README: failed and xfailed records carry `details`. A one-line failure ("No
    exception: ...") had none, its details being its reason."""
    from gemmconf.outcome import ItemOutcome, Raised, WrongError
    from gemmconf.plugin.verdict import Decision, build_record

    expected = Raised("RuntimeError", "mat1 and mat2 shapes cannot be multiplied", "")
    run = ItemOutcome(problems=(WrongError(expected, None, None, "Tensor of shape (4, 7)"),))
    static = {"id": "tiny/mm[fp32]", "backend": "eager"}
    record = build_record(static, Decision("failed", run), duration_s=0.1, environment={})
    assert record["reason"].startswith("No exception: eager raises RuntimeError")
    assert record["details"] == record["reason"]


def test_a_borderline_pass_says_so_in_its_details():
    """A torchao trial: a pass at 1.4 times its bar (rounds of fresh draws undecided) carried
    its note nowhere a user reads; a pass's notes are now its record's details."""
    from gemmconf.outcome import ItemOutcome
    from gemmconf.plugin.verdict import Decision, build_record

    note = "Borderline: shape set 0 (127x65x33) passes with its error at the bar: ..."
    static = {"id": "tiny/mm[fp32]", "backend": "lib"}
    run = ItemOutcome(notes=(note,), metrics={"err_ratio": 4.29, "borderline": 1})
    record = build_record(static, Decision("passed", run), duration_s=0.1, environment={})
    assert record["outcome"] == "passed" and record["details"] == note
    plain = build_record(static, Decision("passed", ItemOutcome()), duration_s=0.1, environment={})
    assert plain.get("details") is None


def test_an_xpass_is_decided_from_data(suite):
    (suite.path / "suites" / "expectations" / "eager.yaml").write_text(
        'backend: eager\nexpectations:\n  - {match: "tiny/mm[fp32]", status: xfail, reason: r}\n'
    )
    result = suite.runpytest("suites", "--backend", "eager", "-k", "mm", "--no-isolate")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    document = json.loads((suite.path / "reports" / "results.json").read_text())
    record = next(r for r in document["records"] if r["id"] == "tiny/mm[fp32]")
    assert record["outcome"] == "xpassed" and record["reason"].startswith("[XPASS(strict)] r")


@pytest.mark.parametrize("value", ["", ",", "eager,"])
def test_an_empty_backend_name_is_a_usage_error(suite, value):
    result = suite.runpytest("suites", "--backend", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--backend*an empty backend name (an unset variable?)*"])


def test_an_unavailable_backend_is_a_usage_error_unless_allowed(suite):
    result = suite.runpytest("suites", "--backend", "eager,planted_backends:unavailable")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--backend planted_backends:unavailable: unavailable here: needs the frobnicator*"]
    )
    allowed = suite.runpytest(
        "suites", "--backend", "planted_backends:unavailable", "--allow-unavailable", "-k", "mm"
    )
    assert allowed.ret == pytest.ExitCode.OK
    allowed.assert_outcomes(skipped=3)


def test_the_page_data_carries_kinds_and_counts_them_apart():
    from gemmconf.report.page import page_data, render

    def record(i, outcome, kind=None):
        return {
            "id": f"s/x{i}",
            "backend": "b",
            "suite": "s",
            "op": "mm",
            "dtype": "fp32",
            "outcome": outcome,
            "kind": kind,
            "source": "suites/s.yaml:1",
        }

    document = {
        "records": [
            record(0, "failed", "unsupported"),
            record(1, "failed", "wrong values"),
            record(2, "xfailed", "unsupported"),
            record(3, "passed"),
        ],
        "complete": True,
    }
    data = page_data(document)
    assert data["kind_counts"] == {"wrong values": 1, "unsupported": 1}
    kind = data["fields"].index("kind")
    assert [data["strings"][row[kind]] for row in data["rows"][:2]] == [
        "unsupported",
        "wrong values",
    ]
    assert "failing by kind:" in render(document) and "1 unsupported" in render(document)


def test_a_declared_refusal_is_unsupported():
    class Declines(EagerBackend):
        name = "declines"

        def supports(self, instance):
            return "bf16 only" if instance.dtype != "bf16" else None

    items = [i for i in load_suite(SUITES / "dense/first.yaml") if i.op == "mm"][:4]
    kinds = {
        i.dtype: run_item(i, Declines(), seed=0, device="cpu", target=None).kind for i in items
    }
    assert kinds["fp32"] == "unsupported"
    outcome = run_item(items[0], Declines(), seed=0, device="cpu", target=None)
    assert render(outcome).reason == "unsupported by declines: bf16 only"


@pytest.mark.parametrize(
    "checks,message",
    [
        ("{raises: NotImplementedError}", "never the rejection an error scenario expects"),
        ("{raises: {type: RuntimeError, match: '('}}", "is not a regular expression"),
        ("{raises: {type: RuntimeError, pattern: x}}", "unknown key 'pattern'"),
        ("{deterministic: yes please}", "deterministic must be true or false"),
        ("{raises: RuntimeError, deterministic: true}", "no result to compare between calls"),
    ],
)
def test_the_new_check_fields_are_validated(tmp_path, checks, message):
    from gemmconf.scenario import ScenarioError

    path = tmp_path / "s.yaml"
    path.write_text(
        f"scenarios:\n  - name: x\n    op: mm\n    shape: {{M: 4, N: 4, K: 4}}\n"
        f"    checks: {checks}\n"
    )
    with pytest.raises(ScenarioError, match=message):
        load_suite(path)


def test_raises_with_a_pattern_loads():
    item = error_item("errors/dtype_mismatch[mm-fp32_fp16]")
    assert (item.checks.raises, item.checks.raises_match) == ("RuntimeError", "dtype|scalar type")


def test_a_failure_while_dynamo_traced_is_not_laid_at_the_backend_s_door():
    """An outside user's trial read "Backend raised during the call" for an error of
    torch._grouped_mm's meta function, raised while dynamo traced the program: the backend's
    compiler never saw the op. The first line says whose code raised, for a crash and for a
    wrong exception alike; eager runs the item."""
    from gemmconf import api
    from gemmconf.outcome import Crash

    wrapped = ("torch._dynamo.exc.TorchRuntimeError", "torch._dynamo.exc.Unsupported")
    traced = Raised("RuntimeError", "Expected inputs of BF16 type", "", wrappers=wrapped)
    assert traced.while_tracing
    stage = "the call on shape set 0"
    first = render(ItemOutcome(problems=(Crash(stage, traced),))).reason
    assert first.startswith("torch.compile raised while dynamo traced the program, before the")
    eager_raises = Raised("ValueError", "Invalid scaling configuration.", "")
    wrong = render(ItemOutcome(problems=(WrongError(eager_raises, None, traced),))).reason
    assert wrong.startswith(
        "Wrong exception: eager raises ValueError (Invalid scaling configuration.); "
        "torch.compile raised, while dynamo traced the program (before the backend was handed "
        "its graph), RuntimeError: Expected inputs of BF16 type"
    )
    compiled = Raised(
        "RuntimeError", "x", "", wrappers=("torch._dynamo.exc.BackendCompilerFailed",)
    )
    assert not compiled.while_tracing and compiled.while_compiling
    own = render(ItemOutcome(problems=(Crash(stage, compiled),))).reason
    # a TVM trial (2026-12-01) read "during the call" as a runtime failure: it was the compiler
    assert own.startswith(f"Backend raised while compiling its graph, in {stage}: RuntimeError: x")
    ran = Raised("RuntimeError", "x", "")
    assert not ran.while_compiling
    assert render(ItemOutcome(problems=(Crash(stage, ran),))).reason.startswith(
        f"Backend raised during {stage}: RuntimeError: x"
    )
    # a refusal: the stage before the backend's words, not appended to them
    refused = Raised("NotImplementedError", "input_type float8 is not handled yet", "")
    assert render(ItemOutcome(problems=(Unsupported(stage, refused),))).reason.startswith(
        f"Unsupported: the backend raised during {stage}: NotImplementedError: input_type"
    )

    (item,) = api.instances(["grouped/not_bf16[fp16]"])
    verdict = api.run(item, resolve("reference"))
    assert not verdict.passed and "Expected inputs of BF16 type" in verdict.summary
    assert verdict.summary.startswith("torch.compile raised while dynamo traced the program")
    assert api.run(item, EagerBackend()).passed


@pytest.mark.parametrize(
    ("message", "line"),
    [
        ("Expected inputs of BF16 type", "Expected inputs of BF16 type"),
        # TVM (2026-12-01): the cause on the line after the colon; the title had stopped before it
        (
            "Mismatched inp_1.strides on argument #0 when calling:\n  `f(a, b)`,\n  expected ...",
            "Mismatched inp_1.strides on argument #0 when calling: `f(a, b)`,",
        ),
        ("a plain first line\nand more", "a plain first line"),
        ("ends with a colon:", "ends with a colon:"),
        ("", ""),
        ("x" * 400, "x" * 300),
    ],
)
def test_a_failure_s_headline_takes_the_cause_after_a_colon(message, line):
    """The run's reason and the repro's first line quote an error alike."""
    from gemmconf import repro_template
    from gemmconf.outcome import headline

    assert headline(message) == repro_template.headline(message) == line
    if message:
        assert Raised("ValueError", message, "").short() == f"ValueError: {line}"
