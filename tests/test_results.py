"""results.json: incremental partial file, atomic final file, honest completeness, clear errors."""

from __future__ import annotations

import gzip
import json
import lzma

import pytest

from gemmconf.report.results import ResultsError, ResultsWriter, read, writer_of


def record(i: int, outcome: str = "passed") -> dict:
    return {"id": f"s/x[{i}]", "backend": "eager", "outcome": outcome}


def test_records_stream_to_partial_then_finish_atomically(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("stale from an earlier run")
    writer = ResultsWriter(path, run={"seed": 3})
    writer.start()
    assert not path.exists()  # the stale file cannot pass for this run's
    writer.add(record(2))
    writer.add(record(1, "failed"))
    lines = writer.partial.read_text().splitlines()
    assert json.loads(lines[0])["gemmconf_partial_run"]["seed"] == 3  # the run's header first
    assert [json.loads(line)["id"] for line in lines[1:]] == ["s/x[2]", "s/x[1]"]
    writer.finish(complete=True, exit_status=1)
    document = read(path)
    assert document["complete"] is True and document["seed"] == 3
    assert [r["id"] for r in document["records"]] == ["s/x[1]", "s/x[2]"]
    assert document["counts"]["failed"] == 1 and document["counts"]["passed"] == 1
    assert not writer.partial.exists()


def test_a_results_file_being_written_names_its_writer_until_it_finishes(tmp_path):
    """The writer's lock on its .partial lives as long as it writes; a killed run's leftover
    .partial (its lock gone with its process, here its file closed) names no writer."""
    path = tmp_path / "results.json"
    assert writer_of(path) is None
    writer = ResultsWriter(path, run={"command": "pytest suites --shard 1/2"})
    writer.start()
    assert writer_of(path) == "pytest suites --shard 1/2"
    writer.finish(complete=True, exit_status=0)
    assert writer_of(path) is None
    killed = ResultsWriter(path, run={"command": "pytest suites"})
    killed.start()
    killed.add(record(1))
    killed._stream.close()  # what the process's death does to its descriptor and lock
    assert killed.partial.exists() and writer_of(path) is None


@pytest.mark.parametrize(
    ("suffix", "pack", "kind"),
    [
        ("gz", gzip.compress, "a gzip file"),
        ("xz", lambda data: lzma.compress(data, preset=9), "an xz file"),  # since 2026-12-02
    ],
)
def test_a_compressed_results_file_reads_as_written(tmp_path, suffix, pack, kind):
    """Published runs are kept compressed (xz since 2026-12-02, a third smaller than gzip):
    every report command (and --durations-from) reads one as the plain file; a cut-short or
    damaged one is named."""
    writer = ResultsWriter(tmp_path / "r.json", run={"seed": 5})
    writer.start()
    writer.add(record(1, "failed"))
    writer.finish(complete=True, exit_status=1)
    packed = tmp_path / f"r.json.{suffix}"
    whole = pack((tmp_path / "r.json").read_bytes())
    packed.write_bytes(whole)
    assert read(packed) == read(tmp_path / "r.json")
    named = rf"r.json.{suffix}: {kind} that does not decompress"
    for damaged in (whole[:40], whole[:-12], whole[:24] + bytes(len(whole) - 24)):
        packed.write_bytes(damaged)
        with pytest.raises(ResultsError, match=named):
            read(packed)


def test_interrupted_run_is_marked_incomplete(tmp_path):
    writer = ResultsWriter(tmp_path / "r.json", run={})
    writer.start()
    writer.add(record(1))
    writer.finish(complete=False, exit_status=2)
    assert read(tmp_path / "r.json")["complete"] is False


def test_a_killed_runs_partial_file_reads_as_an_incomplete_run(tmp_path):
    """SIGKILL (or a machine going away) leaves only results.json.partial: every report command
    takes it, as an incomplete run; a last line cut short by the kill is dropped."""
    writer = ResultsWriter(tmp_path / "r.json", run={"seed": 7, "backends": ["eager"]})
    writer.start()
    writer.add(record(2))
    writer.add(record(1, "failed"))
    writer._stream.write('{"id": "s/x[3]", "back')  # the kill came mid-line
    writer._stream.flush()
    document = read(writer.partial)
    assert document["complete"] is False and document["from_partial"] is True
    assert document["seed"] == 7 and document["dropped_lines"] == 1
    assert [r["id"] for r in document["records"]] == ["s/x[1]", "s/x[2]"]
    assert document["counts"]["failed"] == 1
    lines = writer.partial.read_text().splitlines()
    writer.partial.write_text("\n".join([lines[0], "garbage", *lines[1:]]) + "\n")
    with pytest.raises(ResultsError, match=r"r.json.partial:2: not a JSON line"):
        read(writer.partial)


def test_partial_files_without_a_header_or_records_read_too(tmp_path):
    old = tmp_path / "old.json.partial"  # written before partial files had a header line
    old.write_text("\n".join(json.dumps(record(i)) for i in (2, 1)) + "\n")
    assert [r["id"] for r in read(old)["records"]] == ["s/x[1]", "s/x[2]"]
    empty = tmp_path / "empty.json.partial"
    empty.write_text("")
    assert read(empty)["records"] == [] and read(empty)["complete"] is False


def test_abandon_leaves_nothing(tmp_path):
    writer = ResultsWriter(tmp_path / "r.json", run={})
    writer.start()
    writer.abandon()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"format": "gemmconf-results", "version": 1, "recor', r"not JSON \(truncated\?\)"),
        ('{"tests": []}', "not a gemmconf results file"),
        ('{"format": "gemmconf-results", "version": 99, "records": []}', "results version 99"),
        ('{"format": "gemmconf-results", "version": 1}', "'records' is missing"),
    ],
)
def test_read_rejects_foreign_truncated_and_incompatible_files(tmp_path, text, words):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ResultsError, match=words) as info:
        read(path)
    assert str(info.value).startswith(str(path))
