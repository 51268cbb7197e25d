"""gemmconf report merge: shards join into their union; mixing and duplicates are refused."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from test_report_page import ENV, document, record, sample_document

from gemmconf.record import typed
from gemmconf.report import merge, results
from gemmconf.report.cli import main


def shards() -> tuple[dict, dict]:
    full = sample_document()
    first = document(full["records"][::2], exit_status=1)
    second = document(full["records"][1::2], exit_status=0, finished="2026-01-02T04:00:00+0000")
    return first, second


def write(tmp_path: Path, name: str, doc: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def key(r: dict) -> tuple:
    return (r["id"], r["backend"], r["environment"]["device_name"])


def test_two_shards_merge_into_their_union(tmp_path: Path) -> None:
    first, second = shards()
    a, b = write(tmp_path, "a.json", first), write(tmp_path, "b.json", second)
    out = tmp_path / "merged.json"
    assert main(["merge", str(a), str(b), "-o", str(out)]) == 0
    merged = results.read(out)  # a merged file is a results file
    expected = sorted(sample_document()["records"], key=key)
    assert sorted(map(key, merged["records"])) == sorted(map(key, expected))
    assert json.dumps(sorted(merged["records"], key=key), sort_keys=True) == json.dumps(
        expected, sort_keys=True
    )
    assert merged["counts"] == results.count(typed(expected))
    assert merged["suite_version"] == "abc123" and merged["seed"] == 7
    assert merged["complete"] is True and merged["exit_status"] == 1
    assert merged["finished"] == "2026-01-02T04:00:00+0000"
    assert [m["file"] for m in merged["merged_from"]] == [str(a), str(b)]
    assert merged["command"].startswith("gemmconf report merge")


def test_a_missing_shard_or_a_mixed_split_is_warned_of(tmp_path: Path, capsys) -> None:
    """A CI trial (2026-11-26): shard 1/2 merged alone, without a word; 1/2 with 2/3 was called
    a shard that ran twice. Both now say what the merged file lacks."""
    first, second = shards()
    first["shard"], second["shard"] = "1/2", "2/2"
    a, b = write(tmp_path, "a.json", first), write(tmp_path, "b.json", second)
    assert main(["merge", str(a), str(b), "-o", str(tmp_path / "all.json")]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["merge", str(a), "-o", str(tmp_path / "half.json")]) == 0
    err = capsys.readouterr().err
    assert "warning: shard(s) 2/2 of the split into 2 are not among the inputs" in err
    second["shard"] = "2/3"
    b = write(tmp_path, "b.json", second)
    assert main(["merge", str(a), str(b), "-o", str(tmp_path / "mixed.json")]) == 0
    err = capsys.readouterr().err
    assert "the inputs are shards of different splits (1/2, 2/3)" in err
    assert "shard(s) 1/3, 3/3 of the split into 3 are not among the inputs" in err


def test_same_item_on_two_machines_is_kept_twice() -> None:
    first, _ = shards()
    other = copy.deepcopy(first)
    gpu = dict(ENV, device="cuda", device_name="NVIDIA H100")
    for r in other["records"]:
        r["environment"] = gpu
    other["environment"] = gpu
    merged = merge.merge([("cpu.json", first), ("gpu.json", other)])
    assert len(merged["records"]) == 2 * len(first["records"])
    assert merged["environment"] is None  # the inputs disagree: each record keeps its own


def test_duplicates_are_an_error_unless_later_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    first, _ = shards()
    rerun = copy.deepcopy(first)
    rerun["records"][0]["outcome"] = "passed"
    a, b = write(tmp_path, "shard1.json", first), write(tmp_path, "shard1-rerun.json", rerun)
    out = tmp_path / "m.json"
    assert main(["merge", str(a), str(b), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "appear in more than one file" in err and "shard1.json and " in err
    assert "--later-wins" in err and not out.exists()
    assert main(["merge", str(a), str(b), "-o", str(out), "--later-wins"]) == 0
    merged = results.read(out)
    assert len(merged["records"]) == len(first["records"])
    replaced = next(r for r in merged["records"] if key(r) == key(rerun["records"][0]))
    assert replaced["outcome"] == "passed"


def test_mixed_suite_versions_are_refused_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    first, second = shards()
    second["suite_version"] = "def456"
    a, b = write(tmp_path, "old.json", first), write(tmp_path, "new.json", second)
    out = tmp_path / "m.json"
    assert main(["merge", str(a), str(b), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "different suite versions" in err and "old.json: abc123" in err
    assert "new.json: def456" in err and "--allow-mixed" in err
    assert main(["merge", str(a), str(b), "-o", str(out), "--allow-mixed"]) == 0
    assert "warning" in capsys.readouterr().err
    merged = results.read(out)
    assert merged["suite_version"] is None and merged["suite_versions"] == ["abc123", "def456"]
    # a mixed merge stays mixed: merging it with either version needs --allow-mixed again
    with pytest.raises(merge.MergeError, match="different suite versions"):
        merge.merge([("m.json", merged), ("old.json", first)])


def test_different_seeds_stay_with_their_records() -> None:
    first, second = shards()
    second["seed"] = 99
    merged = merge.merge([("a", first), ("b", second)])
    assert merged["seed"] is None
    seeds = {r.id + r.backend: r.seed for r in merged["records"]}  # typed: merge.write writes
    assert {r["id"] + r["backend"]: 99 for r in second["records"]}.items() <= seeds.items()
    assert {r["id"] + r["backend"]: 7 for r in first["records"]}.items() <= seeds.items()


def test_bad_inputs_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    good = write(tmp_path, "good.json", shards()[0])
    truncated = tmp_path / "truncated.json"
    truncated.write_text(json.dumps(shards()[1])[:200])
    assert main(["merge", str(good), str(truncated), "-o", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert "truncated.json: not JSON (truncated?)" in err
    future = write(tmp_path, "future.json", dict(shards()[1], version=99))
    assert main(["merge", str(good), str(future), "-o", str(tmp_path / "m.json")]) == 2
    assert "future.json: results version 99" in capsys.readouterr().err
    broken = shards()[1]
    del broken["records"][2]["outcome"]
    damaged = write(tmp_path, "damaged.json", broken)
    assert main(["merge", str(good), str(damaged), "-o", str(tmp_path / "m.json")]) == 2
    assert "damaged.json: record 2 has no outcome" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_one_file_holding_one_item_twice_is_damaged() -> None:
    doc = document(
        [record("dense", "mm", "mm", "bf16", {"M": 1, "N": 1, "K": 1}, "eager", "passed")] * 2
    )
    with pytest.raises(merge.MergeError, match=r"x\.json: holds two records"):
        merge.merge([("x.json", doc)])


def test_the_same_file_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    a = write(tmp_path, "a.json", shards()[0])
    assert main(["merge", str(a), str(tmp_path / "." / "a.json"), "-o", str(tmp_path / "m")]) == 2
    assert "a.json: given twice" in capsys.readouterr().err


def test_items_skipped_on_every_machine_are_listed_as_never_ran(tmp_path: Path, capsys) -> None:
    gpu = dict(ENV, device="cuda", device_name="NVIDIA H100")
    cpu_only = record("tiny", "mm_sm90", "mm", "fp16", {"M": 8}, "eager", "skipped")
    cpu_only["reason"] = "needs sm90 (found cpu)"
    both_skip_gpu = dict(cpu_only, environment=gpu, reason="expected skip: slow")
    ran_on_gpu = record("tiny", "tma", "mm", "bf16", {"M": 8}, "eager", "skipped")
    ran_on_gpu["reason"] = "needs sm90 (found cpu)"
    passed_gpu = dict(ran_on_gpu, environment=gpu, outcome="passed", reason=None)
    passed = record("tiny", "mm", "mm", "fp32", {"M": 8}, "eager", "passed")
    cpu = write(tmp_path, "cpu.json", document([cpu_only, ran_on_gpu, passed]))
    on_gpu = document([both_skip_gpu, passed_gpu], environment=gpu)
    gpu_file = write(tmp_path, "gpu.json", on_gpu)
    out = tmp_path / "merged.json"
    assert main(["merge", str(cpu), str(gpu_file), "-o", str(out)]) == 0
    merged = results.read(out)
    assert merged["never_ran"] == [
        {
            "id": cpu_only["id"],
            "backend": "eager",
            "skipped_on": [
                {"device": "CPU (x86_64, 2 cores)", "reason": "needs sm90 (found cpu)"},
                {"device": "NVIDIA H100", "reason": "expected skip: slow"},
            ],
        }
    ]  # the tma item ran on the GPU; the plain mm item everywhere
    printed = capsys.readouterr().out.splitlines()
    assert printed[1:] == [
        "gemmconf: 1 item(s) never ran on any machine of the merge (skipped on each):",
        f"  {cpu_only['id']} on eager (CPU (x86_64, 2 cores): needs sm90 (found cpu); "
        "NVIDIA H100: expected skip: slow)",
    ]
    assert merge.merge([("cpu.json", document([passed]))])["never_ran"] == []
