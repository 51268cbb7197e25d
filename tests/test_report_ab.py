"""gemmconf report ab: a consistent 5% change over alternating runs is called, noise and a
drifting machine are not, and files that are not alternating runs of two trees on one machine
are refused by name. The runs are synthetic results files (no timing is measured here)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from gemmconf.report import paired
from gemmconf.report.cli import main

H200 = {
    "device": "cuda",
    "device_name": "NVIDIA H200",
    "capability": "9.0",
    "hardware_class": "sm90",
    "memory_bytes": 150109880320,
    "cuda": "13.0",
    "torch": "2.11.0+cu130",
    "triton": "3.6.0",
}
ITEMS = [f"bench/llama3_8b[bf16-{p}]" for p in ("qkv", "o", "gate_up", "down")] + [
    f"bench/llama3_70b[fp8-{p}]" for p in ("qkv", "o", "gate_up", "down")
] + ["bench/square_fp8_rowwise"]  # fmt: skip
TREES = ("a1b2c3d4e5f6", "0f9e8d7c6b5a")  # gemmconf code hashes of the two trees


def run_document(
    figures: dict[str, float], run: int, *, tree: str | None, environment: dict | None = None
) -> dict[str, Any]:
    """A kernel-mode benchmark run's results file: each item passed with this vs_cublas."""
    records = [
        {
            "id": item,
            "suite": "bench",
            "backend": "reference",
            "outcome": "passed",
            "environment": environment or H200,
            "metrics": {"vs_cublas": value, "time_ms": 1.0 / value, "bench_mode": "kernel"},
        }
        for item, value in figures.items()
    ]
    return {
        "format": "gemmconf-results",
        "version": 1,
        "complete": True,
        "exit_status": 0,
        "finished": f"2026-11-29T09:{run:02d}:00+0000",
        "environment": environment or H200,
        "benchmark": {"mode": "kernel"},
        "gemmconf": {"version": "0.1.0", **({"code": tree} if tree else {})},
        "records": records,
    }


def alternating_runs(
    pairs: int, *, effect: float, noise: float, drift: float = 0.0, seed: int = 0
) -> list[dict[str, Any]]:
    """A1 B1 A2 B2 ...: B's speed is A's times (1 + effect); each item's figure in each run
    is scattered by `noise` (log-normal) and the machine loses `drift` of its speed a run."""
    draw = random.Random(seed)
    base = {item: 0.8 + 0.05 * i for i, item in enumerate(ITEMS)}
    runs = []
    for run in range(2 * pairs):
        is_b = run % 2
        figures = {
            item: value
            * (1 + effect) ** is_b
            * (1 - drift) ** run
            * math.exp(draw.gauss(0.0, noise))
            for item, value in base.items()
        }
        runs.append(run_document(figures, run, tree=TREES[is_b]))
    return runs


def written(tmp_path: Path, documents: list[dict[str, Any]]) -> list[str]:
    paths = []
    for run, document in enumerate(documents):
        path = tmp_path / f"bench-{'ab'[run % 2]}-{run // 2 + 1}.json"
        path.write_text(json.dumps(document))
        paths.append(str(path))
    return paths


def ab(documents: list[dict[str, Any]], **options: Any) -> paired.PairedAB:
    names = [f"run{i}.json" for i in range(len(documents))]
    return paired.paired_ab(names, documents, **options)


@pytest.mark.parametrize("pairs", [4, 5, 6])
def test_a_consistent_5_percent_slowdown_under_3_percent_noise_is_called(pairs: int) -> None:
    result = ab(alternating_runs(pairs, effect=-0.05, noise=0.03, seed=pairs))
    (geomean,) = result.geomeans
    assert geomean.effect.verdict == "slower"
    assert geomean.effect.low < 0.95 < geomean.effect.high < 1.0
    assert not [i for i in result.items if i.effect.verdict == "faster"]
    assert result.slower[-1] == "geomean reference"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_noise_of_the_same_size_is_not_called(seed: int) -> None:
    result = ab(alternating_runs(5, effect=0.0, noise=0.03, seed=seed))
    assert [i.effect.verdict for i in result.items] == ["no call"] * len(ITEMS)
    assert result.geomeans[0].effect.verdict == "no call"
    assert result.slower == []


def test_a_drifting_machine_is_not_called_where_plain_pairs_would_be() -> None:
    # every run 3% slower than the one before, A and B the same code
    runs = alternating_runs(5, effect=0.0, noise=0.003, drift=0.03, seed=4)
    result = ab(runs)
    assert result.slower == [] and not [i for i in result.items if i.effect.verdict != "no call"]
    assert abs(result.geomeans[0].effect.ratio - 1) < 0.01
    # what A_i-B_i pairs alone say: B about 3% slower on every item (0.3% scatter)
    for item in result.items:
        logs = [math.log(r) for r in item.pair_ratios]
        assert math.exp(sum(logs) / len(logs)) < 0.98


def test_a_speedup_is_called_faster_and_the_table_shows_it(tmp_path: Path, capsys) -> None:
    files = written(tmp_path, alternating_runs(5, effect=0.08, noise=0.01, seed=5))
    assert main(["ab", *files]) == 0
    out = capsys.readouterr().out
    assert "9 faster" in out and "geomean: reference 1.0" in out and "faster" in out
    line = next(x for x in out.splitlines() if "square_fp8_rowwise" in x)
    assert "]  5      faster" in line  # the interval, the pairs, the verdict
    assert f"note: A ran code {TREES[0]}, B ran code {TREES[1]}" in out


def test_a_called_slowdown_exits_3_and_json_lists_it(tmp_path: Path, capsys) -> None:
    files = written(tmp_path, alternating_runs(6, effect=-0.08, noise=0.01, seed=6))
    assert main(["ab", "--json", *files]) == 3
    found = json.loads(capsys.readouterr().out)
    assert found["a"] == files[0::2] and found["b"] == files[1::2]
    assert "geomean reference" in found["slower"]
    item = found["items"][0]
    assert len(item["pair_ratios"]) == 6 and item["effect"]["dof"] == 9


def test_the_time_metric_is_inverted_to_a_speed_ratio() -> None:
    result = ab(alternating_runs(5, effect=0.08, noise=0.01, seed=7), metric="time_ms")
    assert result.geomeans[0].effect.verdict == "faster"
    assert result.geomeans[0].effect.ratio == pytest.approx(1.08, abs=0.02)


def test_the_minimum_effect_keeps_a_sure_but_small_change_uncalled() -> None:
    runs = alternating_runs(6, effect=-0.01, noise=0.001, seed=8)
    assert ab(runs).geomeans[0].effect.verdict == "no call"
    assert ab(runs, min_effect=0.005).geomeans[0].effect.verdict == "slower"


def test_student_t_quantiles_match_the_tables() -> None:
    for p, dof, table in [(0.975, 1, 12.706), (0.975, 5, 2.571), (0.975, 9, 2.262),
                          (0.995, 7, 3.499), (0.999, 3, 10.215), (0.6, 2, 0.289)]:  # fmt: skip
        assert paired.t_quantile(p, dof) == pytest.approx(table, abs=1e-3)
    assert paired.t_quantile(0.025, 5) == pytest.approx(-2.571, abs=1e-3)


def refused(tmp_path: Path, documents: list[dict[str, Any]], capsys) -> str:
    assert main(["ab", *written(tmp_path, documents)]) == 2
    return capsys.readouterr().err


def test_files_out_of_order_are_refused(tmp_path: Path, capsys) -> None:
    runs = alternating_runs(3, effect=0.0, noise=0.01)
    files = written(tmp_path, runs)
    order = [files[0], files[2], files[1], files[3]]  # A A B B, as a glob would sort them
    assert main(["ab", *order]) == 2
    err = capsys.readouterr().err
    assert "do not alternate two trees" in err and f"{files[1]} (run 3, A's)" in err


def test_runs_not_in_time_order_are_refused_without_trees(tmp_path: Path, capsys) -> None:
    runs = alternating_runs(2, effect=0.0, noise=0.01)
    for run in runs:
        del run["gemmconf"]["code"]
    runs[1]["finished"] = "2026-11-29T08:00:00+0000"
    err = refused(tmp_path, runs, capsys)
    assert "bench-b-1.json finished at" in err and "not after" in err


def test_another_machine_is_refused(tmp_path: Path, capsys) -> None:
    runs = alternating_runs(2, effect=0.0, noise=0.01)
    runs[3]["environment"] = {**H200, "device_name": "NVIDIA H100 80GB HBM3"}
    err = refused(tmp_path, runs, capsys)
    assert "bench-b-2.json ran on another machine" in err and "NVIDIA H100" in err


def test_different_items_are_refused(tmp_path: Path, capsys) -> None:
    runs = alternating_runs(2, effect=0.0, noise=0.01)
    runs[2]["records"].pop()
    err = refused(tmp_path, runs, capsys)
    assert "bench-a-2.json" in err and "hold different items" in err and "square_fp8" in err


def test_too_few_files_and_a_file_that_is_no_results_are_refused(tmp_path: Path, capsys) -> None:
    runs = alternating_runs(2, effect=0.0, noise=0.01)
    assert "at least 4" in refused(tmp_path, runs[:2], capsys)
    files = written(tmp_path, runs)
    Path(files[1]).write_text('{"items": {}}')  # a kernel_ab.py hash file, say
    assert main(["ab", *files]) == 2
    assert f"{files[1]}: not a gemmconf results file" in capsys.readouterr().err


def test_one_tree_on_both_sides_is_an_a_a_run(capsys) -> None:
    runs = alternating_runs(3, effect=0.0, noise=0.01)
    for run in runs:
        run["gemmconf"]["code"] = TREES[0]
    assert any("an A/A run" in note for note in ab(runs).notes)


def test_an_item_failing_in_one_run_is_listed_not_compared() -> None:
    runs = alternating_runs(3, effect=0.0, noise=0.01)
    runs[3]["records"][0]["outcome"] = "failed"
    result = ab(runs)
    assert result.untimed == [f"{ITEMS[0]}@reference"]
    assert len(result.items) == len(ITEMS) - 1


def test_files_that_record_no_tree_are_named_and_the_others_still_checked(tmp_path, capsys):
    runs = alternating_runs(3, effect=0.0, noise=0.01)
    del runs[0]["gemmconf"]["code"]
    assert any("run0.json: no gemmconf code recorded" in note for note in ab(runs).notes)
    runs[4]["gemmconf"]["code"] = TREES[1]  # A's third run ran B's tree
    err = refused(tmp_path, runs, capsys)
    assert "(run 5, A's) ran code 0f9e8d7c6b5a" in err and "bench-a-2.json ran a1b2c3d4e5f6" in err
