"""gemmconf.record: the one (de)serializer of results records. A record read from JSON gives back
exactly that JSON (results.json is a public contract), and a stranger's file with a field of the
wrong type is refused with its file, record and field named."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from gemmconf.record import KNOWN_METRICS, Metrics, Record, RecordError, typed
from gemmconf.report import merge
from gemmconf.report.cli import main as report_main

ROOT = Path(__file__).resolve().parents[1]
# written by gemmconf on 2026-11-22, when records had `"skip_class": null`
OLD_FILE = "reports/published/2026-11-22-nvidia-h200-x4-inductor-max-autotune/inductor-max-autotune-TRITON-shard1of3.json.xz"  # noqa: E501

EVERY_FIELD = {
    "id": "tiny/mm[fp32]",
    "suite": "tiny",
    "backend": "eager",
    "scenario": "mm",
    "op": "mm",
    "dtype": "fp32",
    "shape": "4x5x6",
    "dims": {"M": 4, "N": 5, "K": 6},
    "axes": {"layout": "nt"},
    "markers": ["cpu", "mm"],
    "source": "suites/tiny.yaml:3",
    "inductor_config": {"max_autotune": True},
    "dynamo_config": {"capture_dynamic_output_shape_ops": True},
    "nodeid": "tiny.yaml::mm[fp32@eager]",
    "outcome": "xfailed",
    "duration_s": 0.25,
    "environment": {"device_name": "cpu"},
    "phase_s": {"call": 0.1},
    "kind": "wrong values",
    "reason": "Tensor-likes are not close!",
    "details": "every failed check",
    "metrics": {"err_ratio": 12.5, "max_ratio": 4.0, "draws": 3, "flaky": True, "own": [1]},
    "code_excerpt": "tl.dot",
    "skip_class": "sm90",
    "suite_error": True,
    "xpass": "strict",
    "eager_fails": True,
    "computed_by": "pytorch",
    "inherited": "eager",
    "seed": 7,
    "target_arch": "sm90",
}


def test_the_test_gives_every_field_of_a_record():
    named = {f.name for f in fields(Record)} - {"extra", "explicit"}
    assert named == set(EVERY_FIELD)


def test_a_record_survives_from_json_of_to_json_unchanged():
    record = Record.from_json(EVERY_FIELD)
    assert record.to_json() == EVERY_FIELD
    assert list(record.to_json()) == list(EVERY_FIELD)  # the writer's order
    assert Record.from_json(record.to_json()) == record
    for name, value in EVERY_FIELD.items():  # each field typed, none left in `extra`
        read = getattr(record, name)
        assert (read.to_json() if isinstance(read, Metrics) else read) == value, name
    assert record.extra == {} and record.explicit == frozenset()
    assert record.metric.err_ratio == 12.5 and record.metric.draws == 3
    assert record.metric.flaky is True and record.metric.get("own") == [1]


def test_null_false_and_unknown_fields_are_written_back_as_given():
    """Files of earlier versions wrote `"skip_class": null`; a newer gemmconf (or a user) may
    add fields this version does not know: a merge writes both back as they were."""
    given = {
        "id": "tiny/mm[fp32]",
        "backend": "eager",
        "outcome": "skipped",
        "skip_class": None,
        "suite_error": False,
        "metrics": {"err_ratio": None},
        "from_the_future": {"x": 1},
    }
    record = Record.from_json(given)
    assert record.skip_class is None and record.extra == {"from_the_future": {"x": 1}}
    assert record.to_json() == given
    built = Record(id="tiny/mm[fp32]", backend="eager", outcome="passed")
    assert built.to_json() == {"id": "tiny/mm[fp32]", "backend": "eager", "outcome": "passed"}


def test_stamping_a_field_is_dicts_setdefault():
    record = Record(id="a", backend="b", outcome="passed")
    assert record.stamped("seed", 3).to_json()["seed"] == 3
    assert record.stamped("seed", None).to_json() == {**record.to_json(), "seed": None}
    assert Record.from_json({**record.to_json(), "seed": None}).stamped("seed", 3).seed is None
    assert record.stamped("seed", 3).stamped("seed", 4).seed == 3


def test_every_record_of_an_old_results_file_round_trips(tmp_path):
    """A file an earlier gemmconf wrote loads, and a merge of it alone writes its records back
    byte for byte."""
    document = merge.load(ROOT / OLD_FILE)
    assert all(isinstance(r, Record) for r in document["records"])
    assert any("skip_class" in r.explicit for r in document["records"])
    raw = merge.results.read(ROOT / OLD_FILE)["records"]
    out = merge.write(merge.merge([("old", document)]), tmp_path / "merged.json")
    written = json.loads(out.read_text())["records"]
    assert json.dumps(written, sort_keys=True) == json.dumps(raw, sort_keys=True)


def stranger_file(path: Path, **fields) -> Path:
    record = {"id": "tiny/mm[fp32]", "backend": "eager", "outcome": "passed", **fields}
    document = {"format": "gemmconf-results", "version": 1, "complete": True, "records": [record]}
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"metrics": {"err_ratio": "2.0"}}, "has metrics.err_ratio '2.0': expected a number"),
        ({"metrics": {"flaky": 1}}, "has metrics.flaky 1: expected true or false"),
        ({"metrics": [1]}, "has metrics [1]: expected an object"),
        ({"markers": ["cpu", 5]}, "has a marker 5: expected text"),
        ({"dims": {"M": "64"}}, "has dims.M '64': expected a number"),
        ({"duration_s": "1s"}, "has duration_s '1s': expected a number"),
        ({"reason": ["x"]}, "has reason ['x']: expected text"),
        ({"eager_fails": "yes"}, "has eager_fails 'yes': expected true or false"),
        ({"seed": 1.5}, "has seed 1.5: expected an integer"),
    ],
)
def test_an_ill_typed_field_of_a_strangers_file_names_file_record_and_field(
    tmp_path, capsys, fields, message
):
    """Before records were typed, an err_ratio of "2.0" in a file ended `report diff` in a
    TypeError traceback (comparing text with a number)."""
    bad = stranger_file(tmp_path / "r.json", **fields)
    for command in (["diff", str(bad), str(bad)], ["csv", str(bad)]):
        assert report_main(command) == 2
        err = capsys.readouterr().err
        assert f"r.json: record 0 ('tiny/mm[fp32]' on 'eager') {message} or null" in err
        assert "Traceback" not in err


def test_typed_names_the_record_and_takes_typed_records_as_they_are():
    record = Record(id="a", backend="b", outcome="passed")
    assert typed([record]) == [record]
    with pytest.raises(RecordError, match=r"record 1 \('a' on 'b'\) has op 3: expected text"):
        typed([record, {"id": "a", "backend": "b", "outcome": "passed", "op": 3}])


def test_every_typed_metric_is_read_as_the_record_holds_it():
    values = {name: None for name in KNOWN_METRICS}
    assert Metrics.from_json(values).to_json() == values
    assert all(getattr(Metrics(), name) is None for name in KNOWN_METRICS)
