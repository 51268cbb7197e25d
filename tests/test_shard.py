"""--shard i/n: deterministic, disjoint and covering; bad values are usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import faulty_backends
import pytest
import torch

from gemmconf import shard
from gemmconf.plugin import scheduling
from gemmconf.report import cli as report_cli

pytest_plugins = ["pytester"]


def test_parse():
    assert shard.parse("2/3") == shard.Shard(2, 3)
    assert str(shard.parse(" 1 / 1 ")) == "1/1"
    for bad in ("3/2", "0/2", "1/0", "x", "1/", "/2", "1/2/3", "-1/2", "1.0/2", ""):
        with pytest.raises(ValueError, match=r"expected i/n"):
            shard.parse(bad)


def test_shards_are_disjoint_covering_and_about_even():
    keys = [f"dense/mm[fp16-{m}x{n}x64]@eager" for m in range(60) for n in range(50)]
    for count in (1, 2, 3, 5):
        parts = [shard.split(keys, shard.Shard(i, count), key=str)[0] for i in range(1, count + 1)]
        assert sorted(k for part in parts for k in part) == sorted(keys)  # each key once
        sizes = [len(part) for part in parts]
        assert max(sizes) - min(sizes) < 0.15 * len(keys) / count  # sampling noise: ~3 sd


# Pinned: an item's shard must not depend on the machine, the Python version or PYTHONHASHSEED.
GOLDEN = {
    "tiny/addmm@reference": [1, 3, 5],
    "tiny/mm[fp16-17x9x33]@eager": [2, 3, 4],
    "dense/mm[fp16-128x256x64]@eager": [2, 1, 2],
}


def test_assignment_is_stable():
    for key, expected in GOLDEN.items():
        assert [shard.shard_of(key, n) for n in (2, 3, 5)] == expected
    code = (
        "from gemmconf.shard import shard_of; "
        f"print([[shard_of(k, n) for n in (2, 3, 5)] for k in {list(GOLDEN)!r}])"
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert json.loads(out) == list(GOLDEN.values())


@pytest.mark.parametrize("value", ["3/2", "x", "0/4", "1/0"])
def test_bad_shard_is_a_usage_error_naming_the_option(suite, value):
    result = suite.runpytest("suites", "--backend", "eager", "--shard", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--shard: expected i/n*got '{value}'*"])
    assert not (suite.path / "reports" / "results.json").exists()


def run_whole_and_shards(
    pytester: pytest.Pytester, args: list[str], count: int
) -> tuple[dict, list[str]]:
    """One unsharded run of ARGS, then its `count` shards, each a run of its own: the unsharded
    run's results and the shards' results files."""
    unsharded = pytester.runpytest(*args, "--results", "all.json")
    assert unsharded.ret == 0
    whole = json.loads((pytester.path / "all.json").read_text())
    assert whole["shard"] is None
    selected_out = unsharded.parseoutcomes().get("deselected", 0)  # by -k, before any shard
    names = []
    for i in range(1, count + 1):
        result = pytester.runpytest(*args, "--shard", f"{i}/{count}", "--results", f"shard{i}.json")
        assert result.ret == 0
        part = json.loads((pytester.path / f"shard{i}.json").read_text())
        assert part["shard"] == f"{i}/{count}" and part["complete"] is True
        assert part["records"], "a shard of this selection ran nothing: pick other ids"
        result.stdout.fnmatch_lines(
            [f"*{selected_out + len(whole['records']) - len(part['records'])} deselected*"]
        )
        names.append(str(pytester.path / f"shard{i}.json"))
    return whole, names


def outcomes(records: list[dict]) -> Counter:
    return Counter((r["id"], r["backend"], r["outcome"], r.get("reason")) for r in records)


def test_merged_shards_equal_one_unsharded_run(suite):
    backends = ["--backend", "eager,faulty_backends:logs_only"]
    whole, names = run_whole_and_shards(suite, ["suites", *backends], 3)
    assert len(whole["records"]) == 12
    merged = [r for name in names for r in json.loads(Path(name).read_text())["records"]]
    assert outcomes(merged) == outcomes(whole["records"])  # disjoint and covering


SUITES = Path(__file__).resolve().parents[1] / "suites"
TIMINGS = ("duration_s", "phase_s")  # what two runs of one item may differ in
# and of its metrics: what the process's memory did (on a GPU also its allocator's peaks and
# what admitted the item by them: a shard's process met other items before)
MEASURED = (
    "host_memory_peak_bytes",
    "worker_max_rss_bytes",
    "memory_peak_bytes",
    "memory_peak_allocated_bytes",
    "memory_admitted_by",
    "memory_admitted_bytes",
    "host_memory_admitted_by",
    "host_memory_admitted_bytes",
)


def test_four_shards_of_the_suite_merged_are_its_unsharded_run(pytester):
    """The suite's own files as a CI matrix runs them (docs/ci.md): dense/first.yaml and the
    zero_size scenarios eager passes, skips, fails as expected and passes unexpectedly (about 100
    items: the shards' selection and merge, not the items, are under test), four shards each a
    run of its own, joined by `gemmconf report merge`: one unsharded run's records, timings
    aside, and its counts."""
    files = [str(SUITES / "dense" / "first.yaml"), str(SUITES / "zero_size")]
    options = ["--suites", str(SUITES), "--backend", "eager", "-p", "no:cacheprovider"]
    options += ["-k", "first or f_scaled_mm or scaled_grouped or int_mm or scaled_mm_k0"]
    # isolation has no part in what a shard selects, and would start a worker for each run
    options += ["-p", "no:xdist", "--no-isolate"]
    whole, names = run_whole_and_shards(pytester, [*files, *options], 4)
    assert report_cli.main(["merge", *names, "-o", str(pytester.path / "merged.json")]) == 0
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert merged["counts"] == whole["counts"]
    ran = {outcome for outcome, count in whole["counts"].items() if count}
    # a CPU skips the items that need a GPU; a GPU runs them (nothing here is skipped there)
    assert ran >= {
        "passed",
        "xfailed",
        "xpassed",
        *(() if torch.cuda.is_available() else ["skipped"]),
    }

    def untimed(records: list[dict]) -> list[str]:
        kept = [{k: v for k, v in r.items() if k not in TIMINGS} for r in records]
        for record in kept:
            metrics = record.get("metrics") or {}
            record["metrics"] = {k: v for k, v in metrics.items() if k not in MEASURED}
        return sorted(json.dumps(r, sort_keys=True) for r in kept)

    assert untimed(merged["records"]) == untimed(whole["records"])


def test_an_empty_shard_is_a_complete_run_of_nothing(suite):
    result = suite.runpytest("suites", "--backend", "eager", "-k", "addmm", "--shard", "1/2")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED  # tiny/addmm@eager is in shard 2
    document = json.loads((suite.path / "reports" / "results.json").read_text())
    assert document["complete"] is True and document["records"] == []
    assert document["shard"] == "1/2"


# --- balanced by recorded durations --------------------------------------------------------


def test_balance_deals_longest_first_into_the_lightest_shard():
    durations = {"a": 60.0, "b": 30.0, "c": 29.0, "d": 1.0, "e": 0.5}
    assert shard.assign(durations, 2, durations) == {"a": 1, "b": 2, "c": 2, "d": 2, "e": 1}
    keys = [f"k{i}" for i in range(200)]
    times = {k: float((i * 37) % 101) / 10 for i, k in enumerate(keys)}
    for count in (2, 3, 7):
        parts = [
            shard.balance(keys, shard.Shard(i, count), str, times)[0] for i in range(1, count + 1)
        ]
        assert sorted(k for part in parts for k in part) == sorted(keys)  # disjoint, covering
        loads = [sum(times[k] for k in part) for part in parts]
        assert max(loads) - min(loads) <= max(times.values())  # greedy LPT's bound
        assert all(part == [k for k in keys if k in part] for part in parts)  # order kept


def test_items_without_a_recorded_duration_count_as_the_median():
    durations = {"known1": 1.0, "known2": 3.0, "known3": 5.0}
    assert shard.typical_duration(["known1", "known2", "known3", "new"], durations) == 3.0
    assert shard.typical_duration(["new"], durations) == 1.0  # nothing known: all alike
    # a 60 s item, two 1 s ones and twelve new ones (at the median, 1 s): 60 s against 14 s
    keys = ["slow", "a", "b", *(f"new{i}" for i in range(12))]
    assigned = shard.assign(keys, 2, {"slow": 60.0, "a": 1.0, "b": 1.0})
    assert [k for k in keys if assigned[k] == 1] == ["slow"]
    merged = {
        "records": [
            {"id": "x", "backend": "b", "duration_s": 2.0},
            {"id": "x", "backend": "b", "duration_s": 5.0},  # the same item on another machine
            {"id": "y", "backend": "b", "duration_s": None},
        ]
    }
    assert shard.durations_of(merged) == {"x@b": 5.0}


def test_shards_balanced_by_durations_merge_into_the_unsharded_run(suite):
    from gemmconf.report import merge

    backends = ["--backend", "eager,faulty_backends:slow"]  # slow: 0.4 s an item, eager ~0
    assert suite.runpytest("suites", *backends, "--results", "all.json").ret == 0
    whole = json.loads((suite.path / "all.json").read_text())
    names = []
    for i in (1, 2):
        result = suite.runpytest(
            "suites",
            *backends,
            "--shard",
            f"{i}/2",
            "--durations-from",
            "all.json",
            "--results",
            f"shard{i}.json",
        )
        assert result.ret == 0
        result.stdout.fnmatch_lines(
            [f"*gemmconf: shard {i}/2 balanced by the durations in all.json: 12 of 12 items known*"]
        )
        names.append(str(suite.path / f"shard{i}.json"))
    parts = [json.loads(Path(name).read_text())["records"] for name in names]
    slow = [sum(r["backend"] == "slow" and r["outcome"] == "passed" for r in p) for p in parts]
    ran = sum(r["backend"] == "slow" and r["outcome"] == "passed" for r in whole["records"])
    assert ran == 5 + faulty_backends.runs_mm_sm90()
    assert sorted(slow) == [ran // 2, ran - ran // 2]  # the slow items split evenly, not by hash
    merged = merge.merge_files(names)  # its records typed (gemmconf.record), as JSON here
    assert outcomes([r.to_json() for r in merged["records"]]) == outcomes(whole["records"])


def test_durations_from_needs_a_readable_file(suite):
    for shard_args in ([], ["--shard", "1/2"]):
        result = suite.runpytest(
            "suites", "--backend", "eager", *shard_args, "--durations-from", "missing.json"
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--durations-from: missing.json: *"])


# --- dealt to xdist's workers by recorded durations -----------------------------------------


def test_items_heavy_in_memory_go_to_the_lanes_too_so_small_ones_run_beside_them():
    """Under a memory budget the slowest items were also the largest: slowest first, every
    worker started with one and they waited for each other. Items needing more than the heavy
    figure are dealt to the lanes (here two, of eight workers) even when they are short."""
    durations = [90.0, 40.0, 2.0, 2.0, 1.5, None, *[1.0] * 400]
    needs = [9 << 30, 1 << 30, 5 << 30, 100 << 20, 6 << 30, 7 << 30, *[100 << 20] * 400]
    assert scheduling.lanes(durations, 8) == [[0], [1]]  # by duration alone
    assert scheduling.lanes(durations, 8, needs, 4 << 30) == [[0], [1, 2, 4, 5]]
    assert scheduling.lanes(durations, 8, needs, None) == [[0], [1]]  # no budget: no need heavy


def test_memory_heavy_is_an_eighth_of_what_a_gpus_items_share(monkeypatch):
    from types import SimpleNamespace

    from gemmconf import capability, memory
    from gemmconf.plugin import facts

    def config(device: str, budget: int | None) -> SimpleNamespace:
        found = SimpleNamespace(
            stash=pytest.Stash(),
            hook=SimpleNamespace(pytest_gemmconf_memory_budget=lambda config: budget),
        )
        gpu = SimpleNamespace(memory_bytes=141 * 10**9 if device == "cuda" else None)
        found.stash[facts.MACHINE] = SimpleNamespace(device=device, capability=gpu)
        return found

    monkeypatch.setattr(capability, "gpu_ids", lambda: ["0", "1"])
    heavy = scheduling.memory_heavy_bytes(config("cuda", 24 * 10**9), 16)  # 8 workers a GPU
    assert heavy == memory.shared_bytes(24 * 10**9, 8) / 8
    assert scheduling.memory_heavy_bytes(config("cuda", None), 16) == (
        memory.shared_bytes(141 * 10**9, 8) / 8  # the GPU's own memory
    )
    assert scheduling.memory_heavy_bytes(config("cpu", 10**9), 2) == 10**9 / 8  # simulated
    assert scheduling.memory_heavy_bytes(config("cpu", None), 2) is None


def test_heavy_items_are_dealt_to_a_few_lanes_longest_first_into_the_lightest():
    # 13 workers (an H100 run): three lanes; items of 1/20 of a fair share or more are heavy
    durations = [90.0, 80.0, 50.0, 40.0, 30.0, 20.0, None, 6.0, *[1.0] * 1100]
    plan = scheduling.lanes(durations, 13)  # fair share (1,416 / 13) 108.9 s: heavy from 5.4 s
    assert plan == [[0, 5], [1, 4], [2, 3, 7]]
    assert scheduling.lanes(durations, 1) is None  # one worker: nothing to deal
    assert scheduling.lanes([None, None], 4) is None  # nothing known
    assert scheduling.lanes([1.0] * 100, 4) is None  # none stands out
    assert scheduling.lanes([50.0, *[1.0] * 100], 2) == [[0]]  # two workers: one lane
    document = {
        "records": [
            {"nodeid": "s.yaml::x[a@b]", "duration_s": 2.0},
            {"nodeid": "s.yaml::x[a@b]", "duration_s": 7.0},
            {"nodeid": "s.yaml::y[@b]", "duration_s": None},
        ]
    }
    assert shard.durations_of(document, key=shard.node_key) == {"s.yaml::x[a@b]": 7.0}


def test_heavy_items_get_as_many_lanes_as_their_time_needs():
    """Where the heavy items add up to more than a quarter of the workers' fair shares, more
    workers are lanes, so that no lane runs far past the others (2026-11-30, nvidia-h200-x2, 32
    workers: 8 lanes of about 150 s each, the rest done at 128 s); one worker is left to the
    rest, however heavy the items."""
    # 32 workers, fair share (1,200 + 1,980) / 32 = 99.4 s: the heavy items need 13 lanes
    durations = [*[40.0] * 10, *[20.0] * 40, *[1.0] * 1980]
    plan = scheduling.lanes(durations, 32)
    assert plan is not None and len(plan) == 13 > scheduling.lane_count(32)
    loads = [sum(durations[i] for i in lane) for lane in plan]
    assert max(loads) <= 100.0 and sorted(i for lane in plan for i in lane) == list(range(50))
    assert len(scheduling.lanes([30.0] * 40, 4)) == 3  # all heavy: one worker left
    assert scheduling.lanes([30.0, 30.0, *[1.0] * 50], 4) == [[0], [1]]  # no more than items


def test_with_xdist_the_slowest_item_gets_a_worker_of_its_own(suite):
    assert suite.runpytest("suites", "--backend", "eager", "--results", "all.json").ret == 0
    document = json.loads((suite.path / "all.json").read_text())
    # collected first to last: mm[fp32-8x8x8], mm[fp32-17x9x33], ..., addmm, mm_sm90
    heavy, second = "suites/tiny.yaml::addmm[@eager]", "suites/tiny.yaml::mm[fp32-8x8x8@eager]"
    for record in document["records"]:
        record["duration_s"] = 100.0 if record["nodeid"] == heavy else 0.5
    (suite.path / "durations.json").write_text(json.dumps(document))
    result = suite.runpytest(
        "suites", "--backend", "eager", "-n", "2", "-v", "--durations-from", "durations.json"
    )
    assert result.ret == 0
    ran = [line for line in result.stdout.lines if line.startswith("[gw") and "%]" in line]
    assert len(ran) == len(document["records"])  # each item once
    worker = {line.split()[-1]: line.split()[0] for line in ran}
    # xdist's `load` sends one worker the first two (heavy, second); the lane takes heavy alone
    assert worker[heavy] != worker[second]
