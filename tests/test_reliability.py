"""Reliability end to end (pytester; the tiny 6-item suite, faulty_backends' trigger item
``tiny/mm[fp16-17x9x33]``): flaky items told from deterministic failures, timeouts confirmed
alone before they are charged, the phase a timeout ran out in, and GPU memory shared by xdist
workers (simulated on the CPU)."""

from __future__ import annotations

import itertools
import json
import os
from types import SimpleNamespace

import faulty_backends
import pytest
import reliability_backends
import torch

from gemmconf import capability, memory
from gemmconf.plugin import hardware, isolating, run, sharding

pytest_plugins = ["pytester"]

TRIGGER = faulty_backends.TRIGGER_ID
PATTERN = TRIGGER.replace("[", "[[]")  # fnmatch: brackets are a character class


@pytest.fixture
def suite(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The tiny suite, where the reliability backends keep their files."""
    monkeypatch.setenv(reliability_backends.DIR_ENV, str(suite.path))
    return suite


def records(pytester: pytest.Pytester, name: str = "reports/results.json") -> dict:
    document = json.loads((pytester.path / name).read_text())
    return {(r["id"], r["backend"]): r for r in document["records"]}


def test_confirm_failures_tells_a_flaky_item_from_a_deterministic_one(suite):
    result = suite.runpytest(
        "suites",
        "--backend",
        "reliability_backends:flaky_once,reliability_backends:always_wrong",
        "--confirm-failures",
        "2",
        "-k",
        "mm and not sm90",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    found = records(suite)
    flaky, wrong = found[(TRIGGER, "flaky-once")], found[(TRIGGER, "always-wrong")]
    assert flaky["outcome"] == "failed"  # a flaky failure is still the backend's failure
    assert flaky["metrics"]["confirm_runs"] == 2 and flaky["metrics"]["confirm_failed"] == 0
    assert flaky["metrics"]["flaky"] is True
    assert flaky["reason"].endswith("(flaky: failed 1 of 3 runs)")
    assert wrong["outcome"] == "failed"
    assert wrong["metrics"]["confirm_runs"] == 2 and wrong["metrics"]["confirm_failed"] == 2
    assert wrong["metrics"]["flaky"] is False and "flaky" not in wrong["reason"]
    passed = [r for key, r in found.items() if key[0] != TRIGGER]
    assert passed and all("confirm_runs" not in r["metrics"] for r in passed)  # only failures
    result.stdout.fnmatch_lines(
        [
            "*gemmconf: failed items are rerun 2 time(s)*",
            "*gemmconf: flaky items*",
            f"*{PATTERN}@flaky-once: failed 1 of 3 runs*",
        ]
    )
    assert f"{TRIGGER}@always-wrong: failed" not in result.stdout.str()


def test_a_timeout_is_confirmed_alone_before_it_is_charged(suite):
    result = suite.runpytest(
        "suites",
        "--backend",
        "reliability_backends:slow_once,faulty_backends:hangs",
        "--item-timeout",
        "4",
        "-k",
        "mm and not sm90",
        "-p",
        "xdist",
        "-n",
        "2",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    found = records(suite)
    slow = found[(TRIGGER, "slow-once")]
    assert slow["outcome"] == "passed"  # the rerun alone finished: the timeout is not charged
    first = slow["metrics"]["timeout_unconfirmed"]
    assert first["first"].startswith("timed out after 4 s") and first["phase"] == "compile"
    hangs = found[(TRIGGER, "hangs")]
    assert hangs["outcome"] == "failed"
    assert hangs["reason"].startswith("timed out after 4 s (--item-timeout), in phase 'compile'")
    assert hangs["reason"].endswith(
        "again when rerun alone, in a fresh worker, with no other item running"
    ) or hangs["reason"].endswith("it ran alone: no other item of this run was running")
    assert hangs["metrics"]["timeout_confirmed"] in ("rerun alone", "ran alone")
    result.stdout.fnmatch_lines(["*timeouts not charged*", f"*{PATTERN}@slow-once: timed out*"])


def test_the_time_to_first_result_has_its_own_budget_and_the_reason_names_it(suite):
    result = suite.runpytest(
        "suites",
        "--backend",
        "reliability_backends:slow_compile,reliability_backends:out_of_memory",
        "--first-result-timeout",
        "3",
        "-k",
        "mm and not sm90",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    record = records(suite)[(TRIGGER, "slow-compile")]
    assert record["reason"].startswith(
        "timed out after 3 s in phase 'compile': waiting for the first result (compile, "
        "autotune, JIT and the first call)"
    )
    assert record["metrics"]["timeout_phase"] == "compile"
    assert record["metrics"]["timeout_s"] == 3
    # it ran alone (no xdist): charged at once, and the reason says why
    assert record["reason"].endswith("it ran alone: no other item of this run was running")
    result.stdout.fnmatch_lines(["*gemmconf: time to first result (compile, autotune, JIT) 3 s*"])
    # a backend's out-of-memory failure carries the numbers, and it ran alone: it stands
    oom = records(suite)[(TRIGGER, "out-of-memory")]
    assert oom["outcome"] == "failed" and "OutOfMemoryError" in oom["reason"]
    numbers = oom["metrics"]["out_of_memory"]
    assert numbers["requested_bytes"] == 2 << 30
    if torch.cuda.is_available():  # free memory is asked of the device itself
        assert 0 < numbers["free_bytes"] <= numbers["total_bytes"]
    else:  # no device to ask: the message's figure
        assert numbers["free_bytes"] == int(1.25 * 2**30)
    assert numbers["confirmed"] == "ran alone"


def test_the_harness_overrunning_its_own_checks_is_a_harness_error(suite, monkeypatch):
    """Seen on an H100: the fp64 reference of a 2048x128256x4096 item overran the 'check' budget,
    and the item was charged to the backend as "timed out". The backend's calls had returned."""
    from gemmconf.isolation import timeouts

    monkeypatch.setattr(timeouts, "BASE_S", 3.0)  # the checks' budget, in the pytest process
    suite.runpytest("suites", "--backend", "reliability_backends:slow_checks", "-k", "mm")
    record = records(suite)[(TRIGGER, "slow-checks")]
    assert record["outcome"] == "error" and record["kind"] == "harness error", record
    assert "in phase 'check'" in record["reason"] and "nothing is charged" in record["reason"]
    assert record["metrics"]["timeout_phase"] == "check"
    assert record["phase_s"]["check"] >= 3  # where its time went
    others = [r for (i, _), r in records(suite).items() if i != TRIGGER]
    assert others and all(r["outcome"] in ("passed", "skipped") for r in others)


@pytest.mark.parametrize("bad", ["x", "-1"])
def test_bad_reliability_options_are_usage_errors(suite, bad):
    for option in ("--confirm-failures", "--gpu-memory-budget", "--first-result-timeout"):
        result = suite.runpytest("suites", "--backend", "eager", option, bad)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, option
        result.stderr.fnmatch_lines([f"*{option}: expected*got '{bad}'*"])


def test_a_stale_measured_peak_costs_a_rerun_by_the_estimate_never_a_verdict(suite):
    """--durations-from's results measured the trigger item small (on this kind of device): it is
    admitted by that figure, runs out of memory, and is rerun by its estimate, which passes."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    earlier = {
        "format": "gemmconf-results",
        "version": 1,
        "environment": {"device": device, "hardware_class": capability.detect().hardware_class},
        "records": [
            {
                "id": TRIGGER,
                "backend": "out-of-memory-once",
                "outcome": "passed",
                "duration_s": 1.0,
                "metrics": {"memory_peak_allocated_bytes": 1 << 20},
            }
        ],
    }
    (suite.path / "earlier.json").write_text(json.dumps(earlier))
    result = suite.runpytest(
        "suites",
        "--backend",
        "reliability_backends:out_of_memory_once",
        "--gpu-memory-budget",
        "100",
        "--durations-from",
        "earlier.json",
        "-k",
        "mm and not sm90",
    )
    assert result.ret == pytest.ExitCode.OK
    found = records(suite)
    record = found[(TRIGGER, "out-of-memory-once")]
    assert record["outcome"] == "passed"
    metrics = record["metrics"]
    assert metrics["memory_admitted_by"] == "estimate"  # the run that stands
    assert metrics["memory_admitted_bytes"] == metrics["memory_estimate_bytes"]
    retry = metrics["memory_measured_retry"]
    assert retry["admitted_bytes"] < metrics["memory_estimate_bytes"]
    assert retry["out_of_memory"]["requested_bytes"] == 2 << 30
    others = [r for (i, _), r in found.items() if i != TRIGGER and r["outcome"] == "passed"]
    assert others and all(r["metrics"]["memory_admitted_by"] == "estimate" for r in others)
    result.stdout.fnmatch_lines(
        [
            f"gemmconf: 1 item(s) measured on {earlier['environment']['hardware_class']} in "
            "--durations-from's results are admitted by their measured peak*",
            f"*memory admitted 1 of {1 + len(others)} item(s) by their measured peak*; 1 of them "
            "ran out of memory and were rerun by their estimate*",
        ]
    )


@pytest.mark.skipif(
    torch.cuda.is_available(),
    reason="on a GPU such a budget also caps each worker's CUDA allocations (the items fail)",
)
def test_workers_share_a_memory_budget_and_larger_items_run_alone(suite):
    """A budget smaller than any item (simulated on the CPU): every item runs alone, so no two
    calls of the two xdist workers overlap in time."""
    result = suite.runpytest(
        "suites",
        "--backend",
        "reliability_backends:timed",
        "--gpu-memory-budget",
        "0.000001",
        "-p",
        "xdist",
        "-n",
        "2",
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*gemmconf: memory budget 1e-06 GB per cpu (simulated)*"])
    calls = [
        tuple(map(float, line.split()[1:]))
        for line in (suite.path / "timed.log").read_text().splitlines()
    ]
    pids = {line.split()[0] for line in (suite.path / "timed.log").read_text().splitlines()}
    # each item calls twice (the second on fresh values: no result caching)
    assert len(calls) == 10 and len(pids) >= 2  # both workers ran items
    calls.sort()
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(calls))
    ran = [r for r in records(suite).values() if r["outcome"] == "passed"]
    assert len(ran) == 5
    for record in ran:
        assert record["metrics"]["memory_alone"] is True
        assert record["metrics"]["memory_estimate_bytes"] > 1000


# --- -n auto on GPUs (the GPUs are simulated: nvidia-smi's answers are patched) ---------------


def fake_config(**options) -> SimpleNamespace:
    defaults = {
        "workers_per_gpu": None,
        "gpu_memory_budget": None,
        "backend": None,
        "durations_from": None,
        "shard": None,
    }
    values = {**defaults, **options}
    config = SimpleNamespace(
        getoption=lambda dest: values[dest.removeprefix("gemmconf_")], stash=pytest.Stash()
    )
    # what the run's, isolating's and sharding's features answer hardware's questions with
    config.hook = SimpleNamespace(
        pytest_gemmconf_autotuning_backends=run.pytest_gemmconf_autotuning_backends,
        pytest_gemmconf_memory_budget=isolating.pytest_gemmconf_memory_budget,
        pytest_gemmconf_earlier_results=sharding.pytest_gemmconf_earlier_results,
    )
    return config


@pytest.fixture
def gpu_machine(monkeypatch):
    """One 80 GB GPU and 16 cores, as the H100 machine. The header's bytecode line is left out:
    it depends on the Python running the test (a GPU machine's torch without bytecode under
    PYTHONDONTWRITEBYTECODE adds it; 2 of these tests failed there on 2026-12-02)."""
    monkeypatch.setattr(capability, "gpu_ids", lambda: ["0"])
    monkeypatch.setattr(hardware.toolchain, "bytecode_note", lambda package="torch": None)
    monkeypatch.setattr(capability, "gpu_memory_bytes", lambda: 80 * 10**9)
    monkeypatch.setattr(hardware.os, "cpu_count", lambda: 16)


def test_n_auto_runs_one_worker_per_gpu_for_autotuning_backends(gpu_machine):
    config = fake_config(backend="reference,inductor-max-autotune:TRITON")
    assert hardware.pytest_xdist_auto_num_workers(config) == 1
    (line,) = hardware.pytest_report_header(config)
    assert line == (
        "gemmconf: -n auto: 1 xdist worker(s) on 1 GPU(s), 1 per GPU: "
        "inductor-max-autotune:TRITON autotunes (--workers-per-gpu N to change)"
    )
    assert hardware.pytest_xdist_auto_num_workers(fake_config(backend="reference:autotune")) == 1


def test_n_auto_on_a_gpu_is_bounded_by_cores_and_by_the_memory_budget(gpu_machine):
    assert hardware.pytest_xdist_auto_num_workers(fake_config()) == 12  # 80 GB / 6 GiB
    config = fake_config(gpu_memory_budget="24")
    assert hardware.pytest_xdist_auto_num_workers(config) == 3
    assert "3 per GPU: one per 6 GiB of its 24 GB" in hardware.pytest_report_header(config)[0]
    config = fake_config(workers_per_gpu="2", backend="inductor-max-autotune")
    assert hardware.pytest_xdist_auto_num_workers(config) == 2
    assert hardware.auto_workers(gpus=8, cpus=128, autotuning=[], memory_bytes=141 * 10**9) == (
        96,
        "12 per GPU: three per four CPU cores (--workers-per-gpu N to change)",
    )


# The reference suite's measured needs on an H200 (2026-11-29, 3,768 items), as 100: 47 MB at
# the median, 67 MB at p90, 191 MB at p95, 3.2 GB at p99, 16 GB at most.
H200_NEEDS = (
    [47 * 10**6] * 50 + [67 * 10**6] * 40 + [191 * 10**6] * 5 + [32 * 10**8] * 4 + [16 * 10**9]
)


def test_n_auto_under_a_budget_sizes_workers_by_the_items_measured_needs():
    def per_gpu(gb: float, needs=H200_NEEDS, cpus: int = 16) -> tuple[int, str]:
        return hardware.auto_workers(
            gpus=1, cpus=cpus, autotuning=[], memory_bytes=int(gb * 1e9), needs=needs
        )

    measured = "measured needs p90 64 MiB of 100 items in --durations-from's results"
    assert per_gpu(24) == (
        11,
        f"11 per GPU: its 24 GB less 1 GiB per worker keeps 50% for items; {measured} "
        "(--workers-per-gpu N to change)",
    )
    # 11 leave the items half the budget, so an item of up to 12 GB runs beside others; 12 not
    assert memory.shared_bytes(24 * 10**9, 11) >= 12 * 10**9 > memory.shared_bytes(24 * 10**9, 12)
    assert per_gpu(24, cpus=8)[0] == 6  # still three per four cores at most
    count, why = per_gpu(80)
    assert count == 12 and why.startswith(
        "12 per GPU: three per four CPU cores (memory would allow 37: "
    )
    assert per_gpu(141)[0] == 12  # an H200 unconstrained: the cores
    assert (
        hardware.auto_workers(
            gpus=8, cpus=128, autotuning=[], memory_bytes=141 * 10**9, needs=H200_NEEDS
        )[0]
        == 96
    )
    # items that need 2 GB each: one worker per 1 GiB and a p90 item, fewer than half allows
    assert per_gpu(24, needs=[2 * 10**9] * 10) == (
        7,
        "7 per GPU: one per 2.9 GiB of its 24 GB (the worker's 1 GiB and a p90 item); "
        "measured needs p90 1.9 GiB of 10 items in --durations-from's results "
        "(--workers-per-gpu N to change)",
    )
    assert per_gpu(24, needs=())[0] == 3  # nothing measured here: one per 6 GiB, as before
    assert per_gpu(2, needs=[16 * 10**9])[0] == 1
    assert [hardware.percentile(range(1, 11), share) for share in (0.5, 0.9, 1.0)] == [5, 9, 10]
    assert hardware.percentile([7], 0.9) == 7


def test_n_auto_reads_the_measured_needs_of_this_class_of_gpu_once(
    gpu_machine, monkeypatch, tmp_path
):
    from test_capability import H100
    from test_memory import earlier_run, measured_record

    monkeypatch.setattr(capability, "detect", lambda: H100)
    reads = []
    read = sharding.read_durations
    monkeypatch.setattr(sharding, "read_durations", lambda path: reads.append(path) or read(path))
    records = [
        measured_record(f"s/{i}", "reference", int(need / memory.MEASURED_MARGIN), duration_s=1.0)
        for i, need in enumerate(H200_NEEDS)
    ]
    for name, hardware_class in (("sm90.json", "sm90"), ("sm80.json", "sm80")):
        document = earlier_run(
            *records, environment={"device": "cuda", "hardware_class": hardware_class}
        )
        (tmp_path / name).write_text(json.dumps(document))

    config = fake_config(gpu_memory_budget="24", durations_from=str(tmp_path / "sm90.json"))
    assert hardware.pytest_xdist_auto_num_workers(config) == 11
    assert hardware.pytest_report_header(config) == [
        "gemmconf: -n auto: 11 xdist worker(s) on 1 GPU(s), 11 per GPU: its 24 GB less 1 GiB per "
        "worker keeps 50% for items; measured needs p90 64 MiB of 100 items in --durations-from's "
        "results (--workers-per-gpu N to change)"
    ]
    sharding.pytest_configure(config)  # the ordering by durations takes the same document
    assert len(reads) == 1 and len(config.stash[sharding.DURATIONS]) == 100
    assert sharding.DOCUMENT not in config.stash  # not kept past pytest_configure

    # measured on another class of GPU: one per 6 GiB, as without measurements
    config = fake_config(gpu_memory_budget="24", durations_from=str(tmp_path / "sm80.json"))
    assert hardware.pytest_xdist_auto_num_workers(config) == 3
    assert "3 per GPU: one per 6 GiB of its 24 GB" in hardware.pytest_report_header(config)[0]
    with pytest.raises(pytest.UsageError, match=r"--durations-from: missing\.json: "):
        hardware.pytest_xdist_auto_num_workers(fake_config(durations_from="missing.json"))


def test_an_xdist_worker_takes_its_share_of_the_cores(gpu_machine, monkeypatch):
    """13 workers on a 16-core GPU host: one torch CPU thread each, as OMP_NUM_THREADS for the
    isolation workers too; a value the user set is kept."""
    before = torch.get_num_threads()
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "13")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("GEMMCONF_LARGE_DRAW_THREADS", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    try:
        hardware.pin_worker(fake_config())
        assert os.environ["OMP_NUM_THREADS"] == "1" and torch.get_num_threads() == 1
        assert os.environ["GEMMCONF_LARGE_DRAW_THREADS"] == "5"  # 16 cores over 3 heavy lanes
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "0"
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
        monkeypatch.delenv("OMP_NUM_THREADS")
        hardware.pin_worker(fake_config())
        assert os.environ["OMP_NUM_THREADS"] == "4" and torch.get_num_threads() == 4
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        hardware.pin_worker(fake_config())
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)  # pinned above; monkeypatch restores a set one
    assert [hardware.cpu_share(c, w) for c, w in ((16, 13), (16, 4), (2, 2), (2, 0))] == [
        1,
        4,
        1,
        2,
    ]


def test_n_auto_without_a_gpu_is_left_to_xdist(monkeypatch):
    monkeypatch.setattr(capability, "gpu_ids", lambda: [])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert hardware.pytest_xdist_auto_num_workers(fake_config(workers_per_gpu="2")) is None


def test_bad_workers_per_gpu_is_a_usage_error(suite):
    result = suite.runpytest("suites", "--backend", "eager", "--workers-per-gpu", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--workers-per-gpu: expected a number >= 1, got '0'*"])


def test_the_page_data_marks_flaky_items():
    from test_report_page import blob, sample_document

    from gemmconf.report import page

    document = sample_document()
    failed = next(r for r in document["records"] if r["outcome"] == "failed")
    failed["metrics"] = {**(failed.get("metrics") or {}), "flaky": True, "confirm_runs": 2}
    data = blob(page.render(document))
    column = data["fields"].index("flaky")
    flagged = [row for row in data["rows"] if len(row) > column and row[column] is True]
    assert len(flagged) == 1
    assert data["strings"][flagged[0][data["fields"].index("id")]] == failed["id"]


def test_an_empty_cuda_visible_devices_hides_the_hosts_gpus(gpu_machine, monkeypatch):
    """`CUDA_VISIBLE_DEVICES=` (or -1) on a GPU host is a CPU run: no worker is pinned to one
    of the host's GPUs (on 2026-11-29 a CPU seed run on an H200 host ran on its GPU so)."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "16")
    monkeypatch.setenv("OMP_NUM_THREADS", str(torch.get_num_threads()))
    for hidden in ("", "-1", " "):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
        hardware.pin_worker(fake_config())
        assert os.environ["CUDA_VISIBLE_DEVICES"] == hidden
    assert hardware.pytest_xdist_auto_num_workers(fake_config()) is None  # xdist's: the cores
    assert hardware.visible_gpus("2,3") == ["2", "3"]
    assert hardware.visible_gpus("1,-1,2") == ["1"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    hardware.pin_worker(fake_config())
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "7"
