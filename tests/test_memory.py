"""GPU memory, testable without a GPU: the chunked fp64 reference, an item's memory estimate,
the ledgers xdist workers share, and the numbers of an out-of-memory error."""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from gemmconf import chunked, inputs, memory, program
from gemmconf.isolation.budget import Ledger, RunBudget
from gemmconf.outcome import render
from gemmconf.runner import run_item
from gemmconf.scenario import load_suite

ROOT = Path(__file__).resolve().parents[1]

# Every way an input can carry (or not carry) the sliced dims: transposed and column-major
# operands, a stride-0 batch, biases of every shape, a batch times a matrix, kept outputs, an
# added tensor, fp8 scales, a weight larger than a piece (columns sliced), and a shape expression
# (M + 0) that must not be sliced.
SUITE = """
suite: chunks
scenarios:
  - name: mm
    op: mm
    axes:
      lay:
        - {id: nn}
        - {id: tt, layout: {a: t, b: t}}
        - {id: col, layout: {a: col, b: col}}
    shape: {M: 37, N: 11, K: 13}
  - name: addmm
    op: addmm
    shape: {M: 37, N: 11, K: 13}
    alpha: 2.0
    beta: 0.5
    axes:
      bias: [[M, N], [M, 1], [1, N], [N]]
  - name: bmm
    op: bmm
    shape: {B: 5, M: 33, N: 7, K: 9}
    axes:
      lay:
        - {id: plain}
        - {id: expand, layout: {a: expand, b: col}}
  - name: baddbmm
    op: baddbmm
    shape: {B: 3, M: 20, N: 7, K: 9}
    bias: [B, M, N]
  - name: matmul_bb
    op: matmul
    shape: {B: 4, M: 19, N: 6, K: 8}
    operands: {b: {shape: [B, K, N]}}
  - name: linear
    op: linear
    shape: {M: 29, N: 6, K: 8}
    bias: [N]
    epilogue: [keep, relu, {add_tensor: [M, N]}]
  - name: scaled
    op: scaled_mm
    dtype: e4m3fn
    scaling: rowwise
    out_dtype: bf16
    layout: {b: col}
    shape: {M: 32, N: 16, K: 32}
  - name: scaled_blocks
    op: scaled_mm
    dtype: e4m3fn
    scaling: blockwise
    out_dtype: bf16
    layout: {b: col}
    shape: {M: 5, N: 256, K: 128}
  - name: scaled_t
    op: scaled_mm
    dtype: e4m3fn
    scaling: tensorwise
    out_dtype: bf16
    layout: {a: t, b: col}
    shape: {M: 24, N: 16, K: 32}
  - name: vocab
    op: linear
    shape: {M: 3, N: 64, K: 16}
    bias: [N]
    epilogue: [{add_tensor: [M, N]}]
  - name: expression
    op: mm
    shape: {M: 21, N: 5, K: 7}
    operands: {a: {shape: [M + 0, K]}}
"""


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> list:
    path = tmp_path_factory.mktemp("suite") / "chunks.yaml"
    path.write_text(SUITE)
    return load_suite(path)


def test_the_chunked_reference_equals_the_whole_one(instances):
    for instance in instances:
        fn = program.make_reference(instance)
        built = inputs.build(instance, 0, 0, "cpu")
        whole = fn(*(inputs.exact(t).double() for t in built.reference))  # as chunked.py does
        plan = chunked.plan(instance, built.dims, limit=2048)
        pieces = chunked.Evaluator(instance, built, "cpu", limit=2048)(fn)
        for expected, got in zip(_tuple(whole), _tuple(pieces), strict=True):
            assert got.shape == expected.shape and got.dtype == expected.dtype, instance.id
            torch.testing.assert_close(got, expected, rtol=1e-13, atol=1e-13)
        if instance.name == "expression":
            assert "M" not in plan.steps  # M + 0 cannot be sliced: it is computed whole
        elif instance.name == "vocab":
            assert plan.steps.get("N", 64) < 64  # the weight alone is larger than a piece
        else:
            assert plan.pieces > 1, instance.id  # each case really was sliced


def test_a_vocabulary_projection_is_sliced_by_columns_in_few_pieces():
    """Sliced by rows alone, the llama3 prefill projection's 4.2 GB fp64 weight moved to the GPU
    once per row: 512 pieces, and the check phase overran on an H100 (2026-11-23)."""
    path = ROOT / "suites" / "dense" / "broadcast_decode.yaml"
    found = {i.id: i for i in load_suite(path, root=ROOT)}
    for model, most in (("llama3_prefill", 8), ("llama3", 5), ("gemma", 6)):
        instance = found[f"broadcast_decode/vocab_projection[{model}]"]
        plan = chunked.plan(instance, instance.dims(0))
        assert plan.piece_bytes <= chunked.CHUNK_BYTES < plan.whole_bytes, model
        assert "N" in plan.steps and plan.pieces <= most, (model, plan)


def test_a_transform_and_another_output_device_apply_to_every_piece(instances):
    instance = next(i for i in instances if i.id == "chunks/bmm[plain]")
    fn = program.make_reference(instance)
    built = inputs.build(instance, 0, 0, "cpu")
    got = chunked.Evaluator(instance, built, "cpu", out_device="meta", limit=2048)(
        fn, transform=torch.abs
    )
    assert got.device.type == "meta" and tuple(got.shape) == (5, 33, 7)
    whole = fn(*(t.double().abs() for t in built.reference))
    pieces = chunked.Evaluator(instance, built, "cpu", limit=2048)(fn, transform=torch.abs)
    torch.testing.assert_close(pieces, whole, rtol=1e-13, atol=1e-13)


def _tuple(value):
    return value if isinstance(value, tuple) else (value,)


@pytest.fixture(scope="module")
def cutlass_seeds() -> dict:
    path = ROOT / "suites" / "seeds" / "cutlass_backend.yaml"
    return {i.id: i for i in load_suite(path, root=ROOT)}


# The two items that failed on an 80 GB H100 under -n 12 (docs/measurements.md, 2026-11-23).
H100_FAILURES = ("seed_cutlass/bmm[fp16-no_expand-static]", "seed_cutlass/subproc_bmm")


def test_the_two_h100_failures_fit_a_24_gb_gpu_with_four_workers(cutlass_seeds):
    shared = int(24e9) - 4 * (1 << 30)  # isolating.device_budget for -n 4 on one GPU
    for item in H100_FAILURES:
        instance = cutlass_seeds[item]
        sizes = instance.dims(0)
        footprint = memory.estimate(instance, shared=shared)
        assert footprint.total < shared, (item, footprint)
        plan = chunked.plan(instance, sizes)
        assert plan.piece_bytes <= chunked.CHUNK_BYTES < plan.whole_bytes / 10
        assert plan.whole_bytes > 12e9  # in one piece, the fp64 reference alone was 12.6 GB
        # eager's and the backend's fp16 inputs, 3.2 GB each, are the estimate's floor, with
        # the largest operand (a, 2.1 GB) on its way to the device while its copies are laid out
        assert footprint.inputs == 2 * (10 * 4096 * 25728 + 10 * 25728 * 2048) * 2 + (
            10 * 4096 * 25728 * 2
        )
        # on the host: both builds' reference inputs (fp16, 3.2 GB each; in fp64 they were
        # 12.6 GB) and the fp32 draw of the largest operand (4.2 GB)
        operands = 10 * 4096 * 25728 + 10 * 25728 * 2048
        assert 2 * 2 * operands + 4 * 10 * 4096 * 25728 < footprint.host < 2 * 8 * operands


def test_outputs_too_large_for_a_gpus_share_have_their_fp64_values_held_on_the_host(
    cutlass_seeds,
):
    instance = cutlass_seeds["seed_cutlass/subproc_bmm"]
    sizes = instance.dims(0)
    oracle = memory.oracle_bytes(instance, sizes)
    assert memory.reference_device(instance, sizes, "cuda", shared=oracle * 8) == "cuda"
    assert memory.reference_device(instance, sizes, "cuda", shared=oracle) == "cpu"
    assert memory.reference_device(instance, sizes, "cpu", shared=oracle * 8) == "cpu"
    on_device = memory.estimate(instance, shared=oracle * 8)
    on_host = memory.estimate(instance, shared=oracle)
    assert on_device.oracle == oracle
    # held on the host, the outputs are still judged on the GPU, a piece at a time
    assert on_host.oracle == memory.oracle_piece_bytes(instance, sizes) < oracle
    assert on_host.host - on_device.host == memory.oracle_held_bytes(instance, sizes)


def test_the_oracles_temporaries_stop_growing_at_one_piece(cutlass_seeds):
    """10x4096x2048 outputs are five pieces: the oracle's temporaries are one piece's, and only
    the fp64 values held for the whole output grow with it."""
    from gemmconf.oracle import PIECE_ELEMENTS

    instance = cutlass_seeds["seed_cutlass/subproc_bmm"]
    sizes = instance.dims(0)
    elements = sizes["B"] * sizes["M"] * sizes["N"]
    assert elements > 4 * PIECE_ELEMENTS
    assert memory.oracle_piece_bytes(instance, sizes) == (
        PIECE_ELEMENTS * memory.FP64 * memory.ORACLE_PIECE_FP64
    )
    assert memory.oracle_held_bytes(instance, sizes) == (
        elements * memory.FP64 * memory.ORACLE_HELD_FP64
    )


def test_estimates_cover_every_shape_set_and_autotuning_copies(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "suite: s\nscenarios:\n  - name: dyn\n    op: mm\n    dtype: fp32\n"
        "    compile: dynamic\n    shapes: [{M: 1024, N: 1024, K: 1024}, {M: 2048, N: 1024, "
        "K: 1024}]\n"
    )
    (instance,) = load_suite(path)
    plain, tuned = memory.estimate(instance), memory.estimate(instance, autotunes=True)
    first, second = (4 * (1024 * 1024 * 2), 4 * (2048 * 1024 + 1024 * 1024))
    largest = 4 * 2048 * 1024  # the second shape set's a, crossing to the device
    # shape set 0 (2^31 FLOPs) takes a second draw with fresh values: its inputs once more,
    # eager's and, while it is called, the backend's
    assert plain.inputs == 2 * (first + second) + 2 * first + largest
    assert tuned.backend > plain.backend  # an autotuner benchmarks on copies of its inputs
    assert tuned.total > plain.total


def _instance(path: str, ident: str):
    """The one instance `ident` of the shipped suite file `path` (under suites/)."""
    (found,) = [i for i in load_suite(ROOT / "suites" / path) if i.id == ident]
    return found


def test_a_decode_projections_second_draw_is_in_its_estimate():
    """Seen on an H100: `vocab_projection[llama3]` (1 x 128256 x 4096 bf16) held 4.9 GiB of
    tensors against an estimate of 4.8 GiB: its 1 GFLOP is below FULL_STALE_CHECK_FLOPS, so its
    second draw (fresh values) holds another two copies of the 1 GB weight."""
    from gemmconf import drawing

    decode = _instance("dense/broadcast_decode.yaml", "broadcast_decode/vocab_projection[llama3]")
    sizes = decode.dims(0)
    assert not drawing.large(decode, sizes)
    weight = 128256 * 4096 * 2
    stored = memory.stored_input_bytes(decode, sizes)
    assert weight < stored < weight + (1 << 20)
    held = 4 * stored + weight  # two draws' two copies, the weight crossing to the device
    footprint = memory.estimate(decode)
    assert footprint.inputs >= held
    assert footprint.total > 4.9 * (1 << 30)  # what it measured
    # past FULL_STALE_CHECK_FLOPS the second draw takes the first's place: not counted again
    prefill = _instance(
        "dense/broadcast_decode.yaml", "broadcast_decode/vocab_projection[llama3_prefill]"
    )
    big = prefill.dims(0)
    assert drawing.large(prefill, big)
    assert memory.estimate(prefill).inputs == 2 * memory.stored_input_bytes(
        prefill, big
    ) + memory.crossing_bytes(prefill, big)


def test_eager_inputs_are_gone_before_a_large_items_fresh_draw(monkeypatch):
    """The estimate counts a large shape set's fresh draw in the place of eager's first inputs,
    which the runner releases before drawing it: nothing may keep them alive. Seen on an H100:
    a loop variable kept `k_tails/index_width[int_mm]`'s 2 GiB `a` to the item's end (8.0 GiB of
    tensors against a 7.3 GiB estimate: eager's and the backend's copies, and the fresh draw's)."""
    import weakref

    from gemmconf import drawing
    from gemmconf.backends.eager import EagerBackend

    monkeypatch.setattr(drawing, "FULL_STALE_CHECK_FLOPS", 0)  # every shape set is large
    item = _instance("dense/first.yaml", "first/mm[fp32-127x65x33-nn]")
    eager_tensors: list[weakref.ref] = []
    alive_at_fresh_draw: list[int] = []
    build_copies, build = inputs.build_copies, inputs.build

    def first_copies(*args, **kwargs):
        copies = build_copies(*args, **kwargs)
        if not eager_tensors:  # the item's first: eager's and the backend's inputs
            eager_tensors.extend(weakref.ref(t) for t in copies[0].tensors)
        return copies

    def fresh(*args, **kwargs):  # the fresh-values check's draw
        alive_at_fresh_draw.append(sum(ref() is not None for ref in eager_tensors))
        return build(*args, **kwargs)

    monkeypatch.setattr(inputs, "build_copies", first_copies)
    monkeypatch.setattr(inputs, "build", fresh)
    outcome = run_item(item, EagerBackend(), seed=0, device="cpu", target=None)
    assert outcome.passed, render(outcome)
    assert len(eager_tensors) == 2
    assert alive_at_fresh_draw == [0]


def test_a_large_items_wrong_values_are_the_backends_after_the_release(monkeypatch):
    """Every check that reads eager's first draw runs before the large shape set's fresh draw
    releases it. Seen on an H200 (inductor, seed_max_autotune/non_contiguous_input_bmm_padded
    [seed_gpu_b2]): the K-tail note ran after the release and the item became a harness error."""
    from planted_backends import k_tail_dropped

    from gemmconf import drawing

    monkeypatch.setattr(drawing, "FULL_STALE_CHECK_FLOPS", 0)  # every shape set is large
    item = _instance("dense/first.yaml", "first/mm[fp32-127x65x33-nn]")
    outcome = run_item(item, k_tail_dropped, seed=0, device="cpu", target=None)
    assert not outcome.passed
    assert outcome.kind == "wrong values", render(outcome)


# --- the ledgers ----------------------------------------------------------------------------


def test_an_item_waits_until_its_memory_is_free(tmp_path):
    ledger = Ledger(tmp_path / "gpu.json", capacity=10)
    events: list[str] = []

    def small() -> None:
        with Ledger(tmp_path / "gpu.json", capacity=10).hold(5) as hold:
            events.append(f"small in after {hold.waited_s:.1f}")

    with ledger.hold(8):
        thread = threading.Thread(target=small)
        thread.start()
        time.sleep(0.6)
        events.append("big out")
    thread.join()
    # admitted after the release, having waited for it; how soon after is the machine's (a
    # fresh clone's make test once took 1.4 s under load): no upper bound on a wall clock here
    assert events[0] == "big out" and events[1].startswith("small in after ")
    assert float(events[1].split()[-1]) >= 0.5


def run_items(path: Path, items, patience_s: float, hold_s: float) -> dict:
    """Threads holding (name, amount) from `path` after a delay, each for `hold_s` (or the
    item's own fourth field); their spans and alone flags."""
    log: list[tuple[str, float, float, bool]] = []

    def item(name: str, amount: int, delay: float, hold_for: float = hold_s) -> None:
        time.sleep(delay)
        with Ledger(path, capacity=10, patience_s=patience_s).hold(amount) as hold:
            start = time.monotonic()
            time.sleep(hold_for)
            log.append((name, start, time.monotonic(), hold.alone))

    threads = [threading.Thread(target=item, args=args) for args in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {name: (start, end, alone) for name, start, end, alone in log}


def test_items_larger_than_the_share_run_alone_and_a_patient_queue_turns_strict(tmp_path):
    # holds of a second: what runs "beside" what is told by overlapping spans, which a loaded
    # machine's admission delays (polls up to POLL_S apart, 0.34 s once in make test) do not
    # undo; b and c hold for 3 s, as c was once admitted 1.8 s after b on a machine running
    # three test processes on its two cores (2026-12-02)
    items = [("a", 4, 0.0), ("huge", 50, 0.1), ("b", 4, 0.2, 3.0), ("c", 4, 0.25, 3.0)]
    spans = run_items(tmp_path / "strict.json", items, patience_s=0.0, hold_s=1.0)
    huge_start, huge_end, huge_alone = spans["huge"]
    assert huge_alone
    for name in ("a", "b", "c"):
        start, end, alone = spans[name]
        assert not alone and (end <= huge_start or start >= huge_end), name  # never beside it
    # b and c arrived after huge: once it has waited, nothing overtakes it
    assert spans["b"][0] >= huge_end and spans["c"][0] >= huge_end
    assert spans["b"][0] < spans["c"][1] and spans["c"][0] < spans["b"][1]  # then side by side

    # with patience, b and c (which fit beside a) pass the waiting huge item; it still runs alone
    # (a holds 3 s: b and c must be admitted while it runs, which a fresh clone's make test
    # beside other tests once missed by a second, 2026-12-02)
    items = [("a", 4, 0.0, 3.0), *(item[:3] for item in items[1:])]
    spans = run_items(tmp_path / "patient.json", items, patience_s=5.0, hold_s=1.0)
    assert spans["b"][1] <= spans["huge"][0] and spans["c"][1] <= spans["huge"][0]
    assert spans["huge"][2] and spans["b"][0] < spans["a"][1]  # b ran beside a


def test_small_items_fill_the_room_a_waiting_large_item_cannot_use(tmp_path):
    """The strict queue may not idle the GPU: while a large hold keeps an overdue item waiting,
    small items (a sixteenth of the capacity or less) still run beside it; not so items that
    would take room the waiting one needs, and none once the large hold is gone."""
    path, log = tmp_path / "gpu.json", {}

    def item(name: str, amount: int, delay: float, seconds: float) -> None:
        time.sleep(delay)
        with Ledger(path, capacity=100, patience_s=0.0).hold(amount) as hold:
            start = time.monotonic()
            time.sleep(seconds)
            log[name] = (start, time.monotonic(), hold.admitted_at)

    items = [
        ("large", 70, 0.0, 1.5),  # holds the GPU while...
        ("waiting", 50, 0.1, 0.3),  # ...this one waits for it, overdue at once (patience 0)
        ("small", 5, 0.3, 0.2),  # fits, and uses room "waiting" cannot use: runs now
        ("medium", 20, 0.35, 0.2),  # fits too, but is not small: strict order, after "waiting"
    ]
    threads = [threading.Thread(target=item, args=args) for args in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # who went first is the ledger's admission order, not two threads' stamps: each stamps after
    # leaving the ledger, and a loaded machine may run it after one admitted later ("medium"
    # stamped 3.7 ms before "waiting" in a fresh clone's make test, 2026-12-02)
    assert log["waiting"][0] >= log["large"][1]  # large stamps its end before its release
    assert log["small"][2] < log["waiting"][2]  # so small ran beside the large hold
    assert log["medium"][2] > log["waiting"][2]


def test_a_run_alone_waits_for_the_machine_to_be_idle_and_knows_it_was(tmp_path):
    machine = tmp_path / "machine.json"
    order: list[str] = []

    def busy() -> None:
        with Ledger(machine, math.inf).hold(1):
            order.append("busy in")
            time.sleep(0.5)
            order.append("busy out")

    thread = threading.Thread(target=busy)
    thread.start()
    time.sleep(0.1)
    with Ledger(machine, math.inf).hold(1, alone=True) as hold:
        order.append("alone in")
    thread.join()
    assert order == ["busy in", "busy out", "alone in"]
    assert hold.undisturbed and hold.alone
    with Ledger(machine, math.inf).hold(1) as shared:
        pass
    assert shared.undisturbed  # nothing else ran meanwhile: it too ran alone


def test_holds_of_a_dead_process_are_dropped(tmp_path):
    path = tmp_path / "gpu.json"
    dead = 2**22 + 12345  # above any pid_max here
    path.write_text(
        json.dumps(
            {
                "capacity": 10,
                "holds": {f"{dead}-1-1": {"pid": dead, "amount": 10, "alone": True}},
                "queue": [[f"{dead}-1-2", time.time()]],
                "admitted": 1,
            }
        )
    )
    with Ledger(path, capacity=10).hold(10) as hold:
        assert hold.waited_s < 1
    state = Ledger(path, capacity=10).snapshot()
    assert state.holds == {} and state.queue == []


def test_run_budget_holds_the_machine_the_host_and_the_gpu(tmp_path):
    budget = RunBudget(tmp_path, device_key="gpu-0", shared_bytes=100, host_bytes=1000)
    with budget.hold(30, host=700) as grant:
        assert grant.device is not None and grant.device.amount == 30
        assert grant.host is not None and grant.host.amount == 700
        assert Ledger(tmp_path / "device-gpu-0.json", 100).snapshot().holds
        assert Ledger(tmp_path / "host.json", 1000).snapshot().holds
        assert Ledger(tmp_path / "machine.json", math.inf).snapshot().holds
    assert grant.ran_alone
    assert RunBudget(tmp_path, device_key=None, shared_bytes=None).device is None


def test_the_gpu_share_leaves_each_worker_its_own_memory(monkeypatch):
    from gemmconf import capability
    from gemmconf.plugin import isolating

    monkeypatch.setattr(capability, "gpu_ids", lambda: ["0"])
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "12")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")

    gpu = SimpleNamespace(device="cuda", capability=SimpleNamespace(memory_bytes=80 * 10**9))

    def on_gpu(budget: str | None) -> tuple[SimpleNamespace, int | None]:
        return gpu, isolating.parse_budget(budget)  # the machine, --gpu-memory-budget

    key, budget, shared = isolating.device_budget(*on_gpu(None))
    assert (key, budget) == ("gpu-0", 80 * 10**9)
    assert shared == 80 * 10**9 - 12 * isolating.PROCESS_RESERVE_BYTES
    _, budget, shared = isolating.device_budget(*on_gpu("24"))
    assert budget == 24 * 10**9 and shared == 24 * 10**9 - 12 * isolating.PROCESS_RESERVE_BYTES
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "20")
    _, _, shared = isolating.device_budget(*on_gpu("24"))
    assert shared == 24 * 10**9 // 4  # 20 workers' own 20 GiB leave too little: a floor
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    _, _, shared = isolating.device_budget(*on_gpu("24"))
    assert shared == 24 * 10**9 - 4 * isolating.PROCESS_RESERVE_BYTES


# --- admission by an earlier run's measured peak (--durations-from) ------------------------------


def earlier_run(*records: dict, environment: dict | None = None) -> dict:
    """An earlier run's results: measured on a CPU unless a record or `environment` says."""
    return {
        "format": "gemmconf-results",
        "version": 1,
        "environment": environment or {"device": "cpu", "hardware_class": "cpu"},
        "records": list(records),
    }


def measured_record(ident: str, backend: str, peak: int, **fields) -> dict:
    metrics = {"memory_peak_allocated_bytes": peak, "memory_peak_bytes": 2 * peak}
    return {"id": ident, "backend": backend, "outcome": "passed", "metrics": metrics, **fields}


def test_measured_peaks_are_of_passed_items_on_the_same_device_and_hardware_class():
    sm90 = {"device": "cuda", "hardware_class": "sm90"}
    document = earlier_run(
        measured_record("s/a", "ref", 100),
        measured_record("s/a", "eager", 7),  # another backend: its own key
        measured_record(
            "s/b", "ref", 200, environment={"device": "cuda", "hardware_class": "sm80"}
        ),
        measured_record("s/c", "ref", 300, environment={"device": "cpu", "hardware_class": "cpu"}),
        measured_record("s/d", "ref", 400, outcome="failed"),  # may have stopped early
        {"id": "s/e", "backend": "ref", "outcome": "passed", "metrics": {"memory_peak_bytes": 9}},
        measured_record("s/f", "ref", 500),
        measured_record("s/f", "ref", 600),  # a merged file's two machines: the larger
        environment=sm90,
    )
    need = memory.MEASURED_MARGIN  # per byte of tensors: these reserved twice their tensors
    assert memory.measured_peaks(document, device="cuda", hardware_class="sm90") == {
        "s/a@ref": int(100 * need),
        "s/a@eager": int(7 * need),
        "s/f@ref": int(600 * need),
    }
    sm80 = memory.measured_peaks(document, device="cuda", hardware_class="sm80")
    assert sm80 == {"s/b@ref": int(200 * need)}
    cpu = memory.measured_peaks(document, device="cpu", hardware_class="cpu")
    assert cpu == {"s/c@ref": int(300 * need)}


def test_the_need_is_the_tensors_peak_with_the_margin_or_the_reserve_where_less():
    gib = 1 << 30
    # seed_cutlass/bmm[fp16-no_expand-dynamic] on an H200: 12.44 GB of tensors, 14.94 GB reserved
    bmm = {"memory_peak_allocated_bytes": 12_440_000_000, "memory_peak_bytes": 14_940_000_000}
    assert memory.measured_need(bmm) == 14_940_000_000
    # a small item whose worker kept 4 GB of blocks from an earlier one: the margin
    small = {"memory_peak_allocated_bytes": 50 << 20, "memory_peak_bytes": 4 * gib}
    assert memory.measured_need(small) == int((50 << 20) * memory.MEASURED_MARGIN)
    assert memory.measured_need({"memory_peak_allocated_bytes": gib}) == int(gib * 1.35)
    assert memory.measured_need({"memory_peak_bytes": gib}) is None


def test_the_earlier_runs_needs_by_node_id_are_what_this_run_would_admit():
    document = earlier_run(
        measured_record("s/a", "ref", 10 << 20, nodeid="s.yaml::a[@ref]"),
        measured_record("s/b", "ref", 10 << 20, outcome="failed", nodeid="s.yaml::b[@ref]"),
        {"id": "s/c", "backend": "ref", "nodeid": "s.yaml::c[@ref]", "metrics": {}},
    )
    for record in document["records"][:2]:
        record["metrics"]["memory_estimate_bytes"] = 1 << 30
    needs = memory.earlier_needs(document, device="cpu", hardware_class="cpu")
    assert needs == {
        "s.yaml::a[@ref]": memory.admitted(1 << 30, int((10 << 20) * memory.MEASURED_MARGIN))[0],
        "s.yaml::b[@ref]": 1 << 30,  # its estimate there: it did not pass
    }


def test_an_item_is_admitted_by_its_measured_need_and_a_slack_never_above_its_estimate():
    estimate = 1 << 30
    by_measure = (100 << 20) + memory.MEASURED_SLACK_BYTES
    assert memory.admitted(estimate, 100 << 20) == (by_measure, "measured")
    assert memory.admitted(estimate, None) == (estimate, "estimate")
    assert memory.admitted(estimate, 990 << 20) == (estimate, "estimate")  # the upper bound
    # the host's estimate is no upper bound: a larger measured need is held as it is
    larger = memory.admitted(estimate, 990 << 20, upper_bound=False)
    assert larger == ((990 << 20) + memory.MEASURED_SLACK_BYTES, "measured")


def budgeted_runner(tmp_path: Path, capacity: int, measured: dict, backends: dict | None = None):
    from gemmconf.isolation import InProcessRunner

    budget = RunBudget(tmp_path, device_key="cpu", shared_bytes=capacity)
    return InProcessRunner(backends or {}, budget=budget, measured=measured)


def request_for(instance, label: str = "b"):
    from gemmconf.isolation import ItemRequest

    return ItemRequest(instance, label, seed=0, device="cpu", target=None, repro="pytest x")


def test_two_items_whose_estimates_do_not_fit_together_run_together_by_their_measured_peaks(
    instances, tmp_path
):
    first, second = (
        next(i for i in instances if i.id == name)
        for name in ("chunks/mm[nn]", "chunks/bmm[plain]")
    )
    estimates = [memory.estimate(i).total for i in (first, second)]
    capacity = max(estimates) + min(estimates) // 2  # either fits; both do not
    measured = {f"{i.id}@b": 10 << 20 for i in (first, second)}
    runner = budgeted_runner(tmp_path, capacity, measured)
    admitted = [runner._estimate(request_for(i)) for i in (first, second)]
    assert [a.by for a in admitted] == ["measured", "measured"]
    assert [a.upper for a in admitted] == estimates
    assert sum(a.device for a in admitted) <= capacity < sum(estimates)

    beside: list[int] = []
    second_in = threading.Event()

    def run_second() -> None:
        with runner._held(admitted[1]) as granted:
            beside.append(granted[0].device.others_at_start)
            second_in.set()

    with runner._held(admitted[0]):
        thread = threading.Thread(target=run_second)
        thread.start()
        second_in.wait(timeout=30)  # by their estimates it would wait for the first to end
    thread.join()
    assert beside == [1]  # admitted while the first was held

    # a measurement of another backend's item is not this one's
    assert budgeted_runner(tmp_path, capacity, measured)._estimate(
        request_for(first, "other")
    ) == type(admitted[0])(
        estimates[0],
        admitted[0].host,
        bound=estimates[0],
        by="estimate",
        host_bound=admitted[0].host,
    )


def test_a_measured_admission_that_runs_out_of_memory_is_rerun_by_the_estimate(instances, tmp_path):
    """A stale measurement costs time, never a verdict (the isolated runner, end to end:
    tests/test_reliability.py)."""

    class Eager:
        def __init__(self, fn):
            self.fn = fn

        def __call__(self, *args):
            return self.fn(*args)

        def artifacts(self):
            return {}

        def compiles(self):
            return 1

    class OutOfMemoryOnce:
        """Out of memory at its first compile only: as where a measured peak was too small."""

        name = "oom-once"
        compiled = 0

        def availability(self):
            return None

        def compile(self, fn, example_inputs, *, dynamic):
            OutOfMemoryOnce.compiled += 1
            if OutOfMemoryOnce.compiled == 1:
                raise torch.OutOfMemoryError(OOM_TEXT)
            return Eager(fn)

    instance = next(i for i in instances if i.id == "chunks/mm[nn]")
    estimate = memory.estimate(instance).total
    runner = budgeted_runner(
        tmp_path, 10 * estimate, {f"{instance.id}@b": 1 << 20}, {"b": OutOfMemoryOnce()}
    )
    outcome = runner.run(request_for(instance))
    assert outcome.passed, render(outcome)
    assert outcome.metrics["memory_admitted_by"] == "estimate"
    assert outcome.metrics["memory_admitted_bytes"] == estimate
    retry = outcome.metrics["memory_measured_retry"]
    assert retry["admitted_bytes"] == memory.admitted(estimate, 1 << 20)[0] < estimate
    assert retry["out_of_memory"]["requested_bytes"] == 2 << 30


# --- the host's memory: measured, and admitted by an earlier run's figure -----------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/clear_refs")
def test_the_host_memory_an_item_adds_at_its_peak_is_measured():
    """In this process, with its own earlier peak above it: the mark is reset at the start (an
    isolation worker's item: tests/test_isolation.py)."""
    earlier = torch.ones(300 << 18)  # 300 MiB resident, then given back: a high-water mark
    del earlier
    watch = memory.HostPeakWatch()
    with watch.watching():
        added = torch.ones(200 << 18)  # 200 MiB, every page written
        del added
    peak = watch.metrics()["host_memory_peak_bytes"]
    # pages the process gave back meanwhile make it less: 195.3 MiB in an xdist worker of a
    # 24-worker run on an H200 host (2026-11-30)
    assert 180 << 20 <= peak < 232 << 20, peak
    assert memory._host_high_water >= 300 << 20  # worker_max_rss_bytes: the largest so far


def test_no_host_peak_is_measured_where_the_mark_cannot_be_reset(monkeypatch, tmp_path):
    monkeypatch.setattr(memory, "_CLEAR_REFS", str(tmp_path / "no" / "clear_refs"))
    watch = memory.HostPeakWatch()
    with watch.watching():
        pass
    assert watch.metrics() == {}
    monkeypatch.setattr(memory, "_STATUS", str(tmp_path / "no" / "status"))  # not Linux
    with watch.watching():
        pass
    assert watch.metrics() == {}


def host_measured(record: dict, added: int) -> dict:
    """`measured_record`'s record, with what the item added to the host's resident set."""
    record["metrics"]["host_memory_peak_bytes"] = added
    return record


def test_measured_host_peaks_are_of_passed_items_on_the_same_device_and_hardware_class():
    sm90 = {"device": "cuda", "hardware_class": "sm90"}
    document = earlier_run(
        host_measured(measured_record("s/a", "ref", 1), 100 << 20),
        host_measured(
            measured_record(
                "s/b", "ref", 1, environment={"device": "cuda", "hardware_class": "sm80"}
            ),
            200 << 20,
        ),
        host_measured(measured_record("s/c", "ref", 1, outcome="failed"), 300 << 20),
        measured_record("s/d", "ref", 1),  # measured on the GPU only (before host peaks)
        host_measured(measured_record("s/e", "ref", 1), 400 << 20),
        host_measured(measured_record("s/e", "ref", 1), 500 << 20),  # merged: the larger
        environment=sm90,
    )
    margin = memory.HOST_MEASURED_MARGIN
    assert memory.measured_host_peaks(document, device="cuda", hardware_class="sm90") == {
        "s/a@ref": int((100 << 20) * margin),
        "s/e@ref": int((500 << 20) * margin),
    }
    sm80 = memory.measured_host_peaks(document, device="cuda", hardware_class="sm80")
    assert sm80 == {"s/b@ref": int((200 << 20) * margin)}
    assert memory.measured_host_need({"host_memory_peak_bytes": -1}) is None


def test_the_hosts_ledger_admits_an_item_by_its_measured_host_peak_of_this_class_only(
    instances, tmp_path
):
    """On a GPU machine: a GPU item and a CPU item whose host estimates do not fit the host's
    ledger together are admitted together by what an earlier run on this class measured; the
    same document read on another class admits them by their estimates."""
    from gemmconf.isolation import InProcessRunner, ItemRequest

    first, second = (
        next(i for i in instances if i.id == name)
        for name in ("chunks/mm[nn]", "chunks/bmm[plain]")
    )
    sm90 = {"device": "cuda", "hardware_class": "sm90"}
    document = earlier_run(
        host_measured(measured_record(first.id, "b", 1 << 20), 10 << 20),
        host_measured(measured_record(second.id, "b", 1 << 20), 20 << 20),
        environment=sm90,
    )
    requests = [
        ItemRequest(first, "b", seed=0, device="cuda", target=None, repro="pytest x"),
        ItemRequest(second, "b", seed=0, device="cpu", target=None, repro="pytest x"),
    ]
    bounds = [
        memory.estimate(first).host_total,
        memory.estimate(second).host_total + memory.estimate(second).total,  # all on the host
    ]
    capacity = max(bounds) + min(bounds) // 2  # either fits; both do not

    def runner(hardware_class: str) -> InProcessRunner:
        budget = RunBudget(tmp_path, device_key="gpu-0", shared_bytes=1 << 40, host_bytes=capacity)
        kind = {"device": "cuda", "hardware_class": hardware_class}
        return InProcessRunner(
            {},
            budget=budget,
            measured=memory.measured_peaks(document, **kind),
            measured_host=memory.measured_host_peaks(document, **kind),
        )

    admitted = [runner("sm90")._estimate(r) for r in requests]
    assert [a.host_by for a in admitted] == ["measured", "measured"]
    assert [a.host_upper for a in admitted] == bounds
    slack = memory.HOST_MEASURED_SLACK_BYTES
    margin = memory.HOST_MEASURED_MARGIN
    assert [a.host for a in admitted] == [
        int((10 << 20) * margin) + slack,
        int((20 << 20) * margin) + slack,
    ]
    assert sum(a.host for a in admitted) <= capacity < sum(bounds)
    assert admitted[1].device == admitted[1].upper == 0  # a CPU item holds none of the GPU

    with runner("sm90")._held(admitted[0]), runner("sm90")._held(admitted[1]) as granted:
        assert granted[0].host.others_at_start == 1  # admitted while the first was held

    other = [runner("sm80")._estimate(r) for r in requests]
    assert [(a.host, a.host_by) for a in other] == [(b, "estimate") for b in bounds]

    # a host peak measured above the item's host estimate is held as measured (no upper bound)
    above = earlier_run(
        host_measured(measured_record(first.id, "b", 1 << 20), 2 * bounds[0]), environment=sm90
    )
    grown = InProcessRunner(
        {},
        budget=RunBudget(tmp_path, device_key="gpu-0", shared_bytes=1 << 40, host_bytes=capacity),
        measured_host=memory.measured_host_peaks(above, **sm90),
    )._estimate(requests[0])
    assert grown.host_by == "measured" and grown.host > 2 * bounds[0]


# --- out of memory -------------------------------------------------------------------------


OOM_TEXT = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.55 GiB of "
    "which 1.25 GiB is free. Including non-PyTorch memory, this process has 22.30 GiB in use."
)


def test_the_numbers_of_an_out_of_memory_error(monkeypatch):
    monkeypatch.setenv(memory.BUDGET_ENV, str(24 * 10**9))
    # where no device answers (a CPU machine), free and total come from torch's message; on a
    # GPU machine the device would answer with its own numbers
    monkeypatch.setattr(memory, "_cuda_numbers", lambda: (None, None, None, None))
    oom = memory.out_of_memory(torch.OutOfMemoryError(OOM_TEXT))
    assert oom is not None
    assert oom.requested_bytes == 2 << 30
    assert oom.free_bytes == int(1.25 * (1 << 30)) and oom.total_bytes == int(23.55 * (1 << 30))
    assert oom.budget_bytes == 24 * 10**9 and oom.error_type == "OutOfMemoryError"
    assert "requested 2.0 GiB" in oom.text()
    cpu = memory.out_of_memory(
        RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1024 bytes")
    )
    assert cpu is not None and cpu.device == "cpu" and cpu.requested_bytes == 1024
    shared_memory = RuntimeError("out of resource: shared memory, Required: 262144")
    assert memory.out_of_memory(shared_memory) is None  # Triton's limit is not device memory


def test_a_backends_out_of_memory_failure_carries_the_numbers(instances):
    class OutOfMemoryBackend:
        name = "oom"

        def availability(self):
            return None

        def compile(self, fn, example_inputs, *, dynamic):
            raise torch.OutOfMemoryError(OOM_TEXT)

    instance = next(i for i in instances if i.id == "chunks/mm[nn]")
    result = run_item(
        instance, OutOfMemoryBackend(), seed=0, device="cpu", target=None, repro="pytest x"
    )
    assert not result.passed
    assert result.metrics["out_of_memory"]["requested_bytes"] == 2 << 30
    assert result.metrics["out_of_memory"]["error_type"] == "OutOfMemoryError"


def test_peak_watch_is_silent_without_cuda():
    watch = memory.PeakWatch("cpu")
    with watch.watching():
        pass
    assert watch.metrics() == {} and os.environ.get(memory.BUDGET_ENV) is None


def test_the_summary_says_what_admitted_the_items_and_which_ledger_they_waited_for():
    from gemmconf.plugin.isolating import reliability_lines

    def record(ident: str, **metrics) -> dict:
        return {"id": f"s/{ident}", "backend": "b", "outcome": "passed", "metrics": metrics}

    lines = reliability_lines(
        [
            record(
                "a",
                memory_admitted_by="measured",
                memory_wait_s=4.0,
                memory_waits_s={"gpu": 3.0, "host": 1.0},
            ),
            record("b", memory_admitted_by="estimate", memory_measured_retry={"admitted_bytes": 1}),
            record(
                "c",
                memory_admitted_by="estimate",
                memory_wait_s=2.0,
                memory_waits_s={"gpu": 2.0, "machine": 0.1},
            ),
        ]
    )
    assert lines == [
        "gemmconf: 2 item(s) waited for memory (6 s in all: gpu 5 s, host 1 s); 0 ran alone "
        "(larger than the GPU's shared budget)",
        "gemmconf: memory admitted 2 of 3 item(s) by their measured peak (--durations-from), the "
        "others by their estimate; 1 of them ran out of memory and were rerun by their estimate "
        "(metrics.memory_measured_retry); 6 s waited for memory in all: gpu 5 s, host 1 s",
    ]
    assert reliability_lines([record("d", memory_admitted_by="estimate")]) == []
    on_host = {"memory_admitted_by": "estimate", "host_memory_admitted_by": "measured"}
    lines = reliability_lines(
        [
            record("e", **on_host, memory_wait_s=3.0, memory_waits_s={"host": 3.0}),
            record("f", **on_host),
            record("g", memory_admitted_by="estimate", host_memory_admitted_by="estimate"),
        ]
    )
    assert lines[-1] == (
        "gemmconf: host memory admitted 2 of 3 item(s) by their measured peak (--durations-from: "
        "metrics.host_memory_peak_bytes), the others by their estimate; 3 s waited for the host's "
        "memory"
    )


def test_the_memory_listing_compares_the_estimate_with_the_items_own_tensors():
    """Seen on an H100: 40 small items listed as "0.3 GiB > 0.3 GiB", their reserved peaks
    holding blocks the worker's allocator kept from earlier items."""
    from gemmconf.plugin.isolating import reliability_lines

    def record(ident: str, reserved: int, allocated: int, estimate: int) -> dict:
        metrics = {
            "memory_peak_bytes": reserved,
            "memory_peak_allocated_bytes": allocated,
            "memory_estimate_bytes": estimate,
        }
        return {"id": f"s/{ident}", "backend": "b", "outcome": "passed", "metrics": metrics}

    lines = reliability_lines(
        [
            record("cached", 285_212_672, 20 << 20, 269_880_573),  # reserved over, tensors not
            record("over", 5_414_846_464, 5_000_000_000, 3_137_513_158),
            record("small", 300 << 20, 290 << 20, 270 << 20),
        ]
    )
    assert lines == [
        "gemmconf: items that took more GPU memory than estimated (see metrics.memory_*):",
        "  s/over@b: 4.7 GiB in tensors > 2.9 GiB",
        "  s/small@b: 290 MiB in tensors > 270 MiB",
    ]
