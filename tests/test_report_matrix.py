"""`gemmconf report matrix`: many results files on one page, families x (backend, hardware
class). The counts are checked against a category each record of the sample states by hand,
the page in a real browser (cells' counts against counts made here from the records, a cell's
failures link to its items and their commands), and hostile strings of a stranger's file."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import test_browser

from gemmconf.record import Record
from gemmconf.report import matrix
from gemmconf.report.cli import main

browser = test_browser.browser  # the headless Chromium fixture, skipped where none is installed
LOADED = "document.readyState === 'complete'"

CPU = {"device": "cpu", "device_name": "CPU (x86_64, 2 cores)", "capability": None,
       "hardware_class": "cpu", "torch": "2.13.0+cpu", "triton": "3.7.1", "cuda": None}  # fmt: skip
H100 = {"device": "cuda", "device_name": "NVIDIA H100 80GB HBM3", "capability": "9.0",
        "hardware_class": "sm90", "torch": "2.11.0+cu130", "triton": "3.6.0", "cuda": "13.0",
        "mylib": "0.4.1"}  # fmt: skip
H200 = {**H100, "device_name": "NVIDIA H200"}


def rec(item_id: str, backend: str, outcome: str, expect: str, **fields: Any) -> dict[str, Any]:
    """A record; `expect` is the category the page must count it in (taken out before use)."""
    suite, name = item_id.split("/", 1)
    folder = {"first": "dense", "bias": "dense", "scaled_mm": "fp8"}[suite]
    scenario = name.split("[")[0]
    return {
        "id": item_id,
        "backend": backend,
        "outcome": outcome,
        "suite": suite,
        "scenario": scenario,
        "source": f"suites/{folder}/{suite}.yaml:3",
        "expect": expect,
        **fields,
    }


def document(records: list[dict[str, Any]], environment: dict, **fields: Any) -> dict[str, Any]:
    for record in records:
        record.setdefault("environment", environment)
    return {"format": "gemmconf-results", "version": 1, "complete": True, "seed": 0,
            "finished": "2026-11-28T12:00:00+0000", "suite_version": "abc123",
            "command": "pytest suites --backend x", "environment": environment,
            "backends": sorted({r["backend"] for r in records}), **fields,
            "records": records}  # fmt: skip


def sample_runs() -> list[tuple[str, dict[str, Any]]]:
    """Eager on a CPU; an aten-override library on an H100 (every category); the reference on
    the H100 in two shards, and on an H200 (another column: another machine of one class)."""
    eager = [
        rec("first/mm[a]", "eager", "passed", "pytorch_passed", computed_by="pytorch"),
        rec("first/mm[b]", "eager", "passed", "pytorch_passed", computed_by="pytorch"),
        rec("first/mm[c]", "eager", "skipped", "skipped", reason="needs sm90"),
        rec("scaled_mm/mx[a]", "eager", "failed", "own_failed", kind="crash",
            reason="CUBLAS_STATUS_NOT_SUPPORTED", computed_by="pytorch"),
        rec("scaled_mm/mx[b]", "eager", "xfailed", "xfailed", kind="crash", reason="known"),
    ]  # fmt: skip
    mylib = [
        rec("first/mm[a]", "mylib", "passed", "own_passed", computed_by="backend"),
        rec("first/mm[b]", "mylib", "passed", "own_passed", computed_by="mixed"),
        rec("first/mm[c]", "mylib", "passed", "pytorch_passed", computed_by="pytorch"),
        rec("first/mm[d]", "mylib", "passed", "unobserved_passed"),
        rec("first/mm[e]", "mylib", "failed", "own_failed", kind="wrong values",
            reason="Tensor-likes are not close! err_ratio 41.3 > 3.0\nmore", seed=5),
        rec("first/mm[f]", "mylib", "xpassed", "own_failed", reason="[XPASS(strict)] x",
            xpass="strict"),
        rec("first/mm[g]", "mylib", "xpassed", "unobserved_passed", reason="[XPASS] y",
            xpass="non-strict"),
        rec("bias/addmm[a]", "mylib", "failed", "inherited", kind="crash", reason="no kernel",
            inherited="eager", computed_by="pytorch"),
        rec("bias/addmm[b]", "mylib", "failed", "inherited", kind="wrong error",
            reason="meta", inherited="torch.compile"),
        rec("bias/addmm[c]", "mylib", "xfailed", "inherited", kind="crash", reason="listed",
            inherited="eager"),
        rec("bias/addmm[d]", "mylib", "xfailed", "xfailed", kind="unsupported", reason="no"),
        rec("bias/addmm[e]", "mylib", "error", "error", kind="harness error", reason="oops"),
        rec("scaled_mm/mx[a]", "mylib", "skipped", "skipped", reason="sm100 only"),
    ]  # fmt: skip
    shard1 = [rec("first/mm[a]", "reference", "passed", "own_passed", computed_by="backend")]
    shard2 = [
        rec("first/mm[b]", "reference", "failed", "own_failed", kind="code check",
            reason="Code check failed on 'ttgir'", target_arch="sm90"),
    ]  # fmt: skip
    h200 = [rec("first/mm[a]", "reference", "passed", "unobserved_passed")]
    return [
        ("eager-cpu.json", document(eager, CPU, commit="88e0d18")),
        ("mylib-h100.json", document(mylib, H100, seed=3, backend_specs={"mylib": "my.mod:lib"})),
        ("ref-1.json", document(shard1, H100, shard="1/2")),
        ("ref-2.json", document(shard2, H100, shard="2/2")),
        ("ref-h200.json", document(h200, H200)),
    ]


def without_expect(runs: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    runs = copy.deepcopy(runs)
    for _, doc in runs:
        for record in doc["records"]:
            record.pop("expect")
    return runs


def expected_counts(runs: list[tuple[str, dict[str, Any]]]) -> dict[tuple[str, str], Counter]:
    """(family, column label) -> the records' stated categories, grouped here by hand."""
    found: dict[tuple[str, str], Counter] = {}
    for _, doc in runs:
        for r in doc["records"]:
            family = r["source"].split(":")[0].removeprefix("suites/").removesuffix(".yaml")
            env = r["environment"]
            column = f"{env['hardware_class']}|{r['backend']}|{env['device_name']}"
            found.setdefault((family, column), Counter())[r["expect"]] += 1
    return found


def write_runs(folder: Path, runs: list[tuple[str, dict[str, Any]]]) -> list[str]:
    paths = []
    for name, doc in without_expect(runs):
        (folder / name).write_text(json.dumps(doc))
        paths.append(str(folder / name))
    return paths


def test_each_record_counts_in_its_category_and_cell():
    runs = sample_runs()
    built = matrix.build(without_expect(runs))
    found = {
        (family, f"{c.hardware_class}|{c.backend}|{c.device}"): Counter(
            {k: n for k, n in cell.counts.items() if n}
        )
        for (family, c), cell in built.cells.items()
    }
    assert found == expected_counts(runs)
    assert built.families == ("dense/bias", "dense/first", "fp8/scaled_mm")
    # cpu before sm90; eager, then the reference, then the rest; one column per device
    assert [(c.hardware_class, c.backend, c.device) for c in built.columns] == [
        ("cpu", "eager", "CPU (x86_64, 2 cores)"),
        ("sm90", "reference", "NVIDIA H100 80GB HBM3"),
        ("sm90", "reference", "NVIDIA H200"),
        ("sm90", "mylib", "NVIDIA H100 80GB HBM3"),
    ]
    shards = built.columns[1]
    assert built.column_runs[shards] == (3, 4)  # the shards add up in one column


def test_failing_items_are_listed_own_first_with_their_commands():
    built = matrix.build(without_expect(sample_runs()))
    column = next(c for c in built.columns if c.backend == "mylib")
    first = built.cells[("dense/first", column)]
    assert [(i.id, i.category) for i in first.items] == [
        ("first/mm[e]", "own_failed"),
        ("first/mm[f]", "own_failed"),
    ]
    item = first.items[0]
    assert item.reason == "Tensor-likes are not close! err_ratio 41.3 > 3.0"
    # the record's seed, the run's spec for its label
    assert item.rerun == (
        "pytest 'suites/dense/first.yaml::mm[e@mylib]' --backend my.mod:lib --seed 5"
    )
    assert item.standalone == "gemmconf repro 'first/mm[e]' --backend my.mod:lib --seed 5"
    bias = built.cells[("dense/bias", column)]
    assert [(i.id, i.category, i.inherited) for i in bias.items] == [
        ("bias/addmm[a]", "inherited", "eager"),
        ("bias/addmm[b]", "inherited", "torch.compile"),
        ("bias/addmm[c]", "inherited", "eager"),
        ("bias/addmm[e]", "error", None),
    ]


@pytest.mark.parametrize(
    ("source", "suite", "family"),
    [
        ("suites/dense/first.yaml:3", "first", "dense/first"),
        ("dense/first.yaml:3", "first", "dense/first"),  # `gemmconf run`: the suite folder's
        ("/site/gemmconf/suites/fp8/scaled_mm.yaml:12", "fp8", "fp8/scaled_mm"),
        (None, "first", "first"),
        ("", None, "(no suite)"),
    ],
)
def test_a_family_is_the_suite_file_under_the_suite_folder(source, suite, family):
    record = Record(id="x", backend="b", outcome="passed", source=source, suite=suite)
    assert matrix.family_of(record) == family


def test_a_hardware_class_comes_from_older_files_capability_too():
    assert matrix.hardware_class_of({"device": "cuda", "capability": "9.0"}) == "sm90"
    assert matrix.hardware_class_of({"device": "cpu"}) == "cpu"
    assert matrix.hardware_class_of({}) == "unknown"


def test_an_environment_that_is_no_mapping_is_an_unknown_machine_or_refused(tmp_path, capsys):
    """A run's environment that is no mapping is an unknown machine; a record's is refused, as
    every report refuses it (gemmconf.record), naming the file, the record and the field."""
    records = [
        {"id": "a/b[1]", "backend": "x", "outcome": "passed", "environment": None},
        {"id": "a/b[2]", "backend": "x", "outcome": "failed", "environment": None},
    ]
    doc = {**document(records, CPU), "environment": 7}
    built = matrix.build([("odd.json", doc)])
    assert [(c.hardware_class, c.device) for c in built.columns] == [("unknown", "unknown device")]
    assert "unknown device" in matrix.render(built)
    records[0]["environment"] = ["cuda", "9.0"]
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(doc))
    assert main(["matrix", str(odd), "-o", str(tmp_path / "m.html")]) == 2
    assert (
        "odd.json: record 0 ('a/b[1]' on 'x') has environment ['cuda', '9.0']: expected an "
        "object or null" in capsys.readouterr().err
    )


def test_past_its_budget_a_cell_counts_the_items_it_does_not_list(monkeypatch):
    monkeypatch.setattr(matrix, "ITEMS_PER_CELL", 2)
    records = [
        rec(f"first/mm[{i}]", "mylib", "failed", "own_failed", kind="crash", reason="r")
        for i in range(5)
    ]
    built = matrix.build(without_expect([("many.json", document(records, H100))]))
    (cell,) = built.cells.values()
    assert cell.counts["own_failed"] == 5 and len(cell.items) == 2 and cell.unlisted == 3
    assert "and 3 more, not listed" in matrix.render(built)


def test_the_cli_writes_the_page(tmp_path, capsys):
    paths = write_runs(tmp_path, sample_runs())
    out = tmp_path / "out" / "matrix.html"
    assert main(["matrix", *paths, "-o", str(out), "--title", "nightly"]) == 0
    said = capsys.readouterr().out
    assert said == f"gemmconf: wrote {out}: 3 families x 4 columns from 5 results files\n"
    html = out.read_text()
    assert "<title>nightly</title>" in html and '<table id="matrix">' in html
    # the header: each file's versions (a backend package's included), commit, date
    assert "mylib 0.4.1" in html and "<code>88e0d18</code>" in html
    assert "2026-11-28T12:00:00+0000" in html
    data = json.loads(re.search(r'id="matrix-data">(.*?)</script>', html).group(1))
    assert data["families"] == ["dense/bias", "dense/first", "fp8/scaled_mm"]


def test_the_cli_reads_gzip_files(tmp_path, capsys):
    import gzip

    (path,) = write_runs(tmp_path, sample_runs()[:1])
    packed = tmp_path / "eager-cpu.json.gz"
    packed.write_bytes(gzip.compress(Path(path).read_bytes()))
    assert main(["matrix", str(packed), "-o", str(tmp_path / "m.html")]) == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"format": "gemmconf-results", "version": 1, "records": [', "not JSON (truncated?)"),
        ('{"tests": []}', "not a gemmconf results file"),
        ('{"format": "gemmconf-results", "version": 1, "records": [{"id": "a/b"}]}',
         "record 0 has no backend, outcome"),
        ('{"format": "gemmconf-results", "version": 1, "records": [{"id": "a/b", "backend": '
         '"x", "outcome": "passed", "seed": "0; touch /tmp/x"}]}',
         "record 0 ('a/b' on 'x') has seed '0; touch /tmp/x': expected an integer"),
    ],
)  # fmt: skip
def test_bad_input_is_a_usage_error_naming_the_file(tmp_path, capsys, content, message):
    good = write_runs(tmp_path, sample_runs()[:1])
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    out = tmp_path / "m.html"
    assert main(["matrix", *good, str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gemmconf report matrix: error: {bad}: {message}"), err
    assert not out.exists()


def test_a_missing_file_and_a_file_given_twice_are_named(tmp_path, capsys):
    (good,) = write_runs(tmp_path, sample_runs()[:1])
    assert main(["matrix", good, str(tmp_path / "nope.json"), "-o", "m.html"]) == 2
    assert f"{tmp_path / 'nope.json'}: no such file" in capsys.readouterr().err
    assert main(["matrix", good, good, "-o", str(tmp_path / "m.html")]) == 2
    assert f"{good}: given twice" in capsys.readouterr().err


def test_one_item_twice_in_a_column_names_both_files_unless_later_wins(tmp_path, capsys):
    runs = sample_runs()
    again = copy.deepcopy(runs[2])  # ref-1.json's item, run again on the same machine
    again[1]["records"][0]["outcome"] = "failed"
    again[1]["records"][0]["expect"] = "own_failed"
    paths = write_runs(tmp_path, [*runs, ("ref-again.json", again[1])])
    out = tmp_path / "m.html"
    assert main(["matrix", *paths, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        f"{paths[-1]}: first/mm[a] on reference (NVIDIA H100 80GB HBM3) is also in {paths[2]}"
    ) in err
    assert main(["matrix", *paths, "-o", str(out), "--later-wins"]) == 0
    built = matrix.load(paths, later_wins=True)
    column = next(c for c in built.columns if c.backend == "reference" and "H100" in c.device)
    assert built.cells[("dense/first", column)].counts["own_failed"] == 2


def test_report_help_lists_matrix(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "matrix" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["matrix"])
    assert exited.value.code == 2
    assert "the following arguments are required: RESULTS.json" in capsys.readouterr().err


# ---- in a real browser -------------------------------------------------------------------------

CELL_COUNTS = """
  Array.from(document.querySelectorAll('#matrix tbody td.cell:not(.empty)')).map(td => {
    const tr = td.closest('tr'), ci = Number(td.dataset.column);
    const th = document.querySelectorAll('#matrix thead tr.backends th')[ci];
    const machine = document.querySelectorAll('#matrix thead tr.machines th')[ci];
    const counts = {};
    td.querySelectorAll('.counts .c').forEach(c => {
        counts[c.className.match(/k-(\\w+)/)[1]] = Number(c.querySelector('.n').textContent); });
    return [tr.dataset.family, ci, th.textContent, machine.firstChild.textContent, counts]; })"""


def test_the_page_in_chromium_shows_the_records_counts(browser, tmp_path):
    runs = sample_runs()
    paths = write_runs(tmp_path, runs)
    out = tmp_path / "matrix.html"
    assert main(["matrix", *paths, "-o", str(out)]) == 0
    browser.open(out.as_uri())
    browser.wait_for(LOADED)
    assert browser.errors() == [] and browser.requests() == [out.as_uri()]

    built = matrix.load(paths)
    classes = {i: c.hardware_class for i, c in enumerate(built.columns)}
    shown = {
        (family, f"{classes[ci]}|{backend}|{device}"): Counter(counts)
        for family, ci, backend, device, counts in browser.evaluate(CELL_COUNTS)
    }
    assert shown == expected_counts(runs)
    empty = browser.evaluate("document.querySelectorAll('#matrix td.cell.empty').length")
    assert empty == 3 * 4 - len(shown)

    # the header: hardware classes over their columns, each file with its versions
    assert browser.evaluate(
        "Array.from(document.querySelectorAll('#matrix th.class'))"
        ".map(t => [t.textContent, t.colSpan])"
    ) == [["cpu", 1], ["sm90", 3]]
    assert browser.evaluate("document.querySelectorAll('table.runs tr.run').length") == 5

    # a cell's failures link to its items, each with its commands
    link = "#matrix tr[data-family='dense/bias'] td.cell a.c.k-inherited"
    browser.evaluate(f'document.querySelector("{link}").click()')
    browser.wait_for("location.hash.length > 1")
    items = browser.evaluate(
        "Array.from(document.querySelectorAll('section.failures:target li.item')).map(li => "
        "[li.dataset.id, li.querySelector('.rerun').textContent, "
        "li.querySelector('.standalone').textContent])"
    )
    assert [i[0] for i in items] == ["bias/addmm[a]", "bias/addmm[b]", "bias/addmm[c]",
                                     "bias/addmm[e]"]  # fmt: skip
    assert items[0][1] == (
        "pytest 'suites/dense/bias.yaml::addmm[a@mylib]' --backend my.mod:lib --seed 3"
    )
    assert items[0][2] == "gemmconf repro 'bias/addmm[a]' --backend my.mod:lib --seed 3"
    assert browser.errors() == []


# ---- a stranger's file -------------------------------------------------------------------------

HTML_PAYLOADS = (
    "<script>window.pwned = 1</script>",
    '"><img src="https://x.example/p.png" onerror="window.pwned = 1">',
    "</script><script>window.pwned = 1</script>",
    "<!--",
)
SHELL_PAYLOADS = (
    "0; touch {marker} #",
    "$(touch {marker})",
    "`touch {marker}`",
    "x'; touch {marker}; echo '",
    "--basetemp={marker}",
    "-k",
    "a\ntouch {marker}",
)


def hostile_runs(marker: Path) -> list[tuple[str, dict[str, Any]]]:
    html = list(HTML_PAYLOADS)
    shell = [p.format(marker=marker) for p in SHELL_PAYLOADS]
    env = {**H100, "torch": html[0], "device_name": html[1], "hardware_class": html[2],
           "mylib": html[3]}  # fmt: skip
    records = []
    for i, payload in enumerate(html + shell):
        records.append(
            {
                "id": payload if i % 2 else f"x/{payload}",
                "backend": f"b{i % 3}{html[i % 3]}",
                "outcome": "failed",
                "kind": html[i % 4],
                "reason": payload + "\x1b[2J\u202e",
                "source": f"suites/{payload}/f{i}.yaml:1",
                "nodeid": shell[i % len(shell)],
                "target_arch": shell[(i + 1) % len(shell)],
                "environment": env,
            }
        )
    specs = {f"b{i}{html[i]}": shell[i] for i in range(3)}
    doc = document(records, env, command=f"pytest x; touch {marker}", commit=html[0],
                   suite_version=html[1], finished=html[2], backend_specs=specs)  # fmt: skip
    return [(html[1] + ".json", doc)]


def stub_words(command: str, cwd: Path) -> list[str]:
    """The arguments bash and sh give `pytest`/`gemmconf` for `command` (the same in both)."""
    stub = 'pytest() { printf "%s\\0" "$@"; }; gemmconf() { printf "%s\\0" "$@"; }; '
    found = []
    for shell in ("bash", "sh"):
        ran = subprocess.run([shell, "-c", stub + command], capture_output=True, text=True, cwd=cwd)
        assert ran.returncode == 0, (shell, command, ran.stderr)
        found.append(ran.stdout.split("\0")[:-1])
    assert found[0] == found[1], command
    return found[0]


def test_a_hostile_file_runs_nothing_in_the_page_nor_in_its_commands(browser, tmp_path):
    """Markup in every field the page shows (ids, backends, kinds, reasons, families, versions,
    the machine, the commit, the date) is text, not markup: no script runs, nothing is loaded;
    every command on the page, pasted into bash or sh, gives the program the record's values one
    word each, none taken for an option; nothing a payload names is created."""
    marker = tmp_path / "pasted"
    folder = tmp_path / "in"
    folder.mkdir()
    ((_, doc),) = hostile_runs(marker)
    path = folder / "hostile.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "matrix.html"
    assert main(["matrix", str(path), "-o", str(out)]) == 0
    html = out.read_text()
    for payload in HTML_PAYLOADS:
        assert payload not in html
    assert html.count("<script") == 1  # the JSON data block alone
    browser.open(out.as_uri())
    browser.wait_for(LOADED)
    assert browser.evaluate("window.pwned === undefined") is True
    assert browser.errors() == [] and browser.requests() == [out.as_uri()]
    text = browser.evaluate("document.body.innerText")
    for payload in HTML_PAYLOADS[:3]:
        assert payload in text  # shown as written
    assert "\\x1b[2J\\u202e" in text and "\x1b" not in text  # a reason's control characters

    records = {r["id"]: r for r in doc["records"]}
    listed = browser.evaluate(
        "Array.from(document.querySelectorAll('li.item')).map(li => [li.dataset.id, "
        "li.querySelector('.rerun').textContent, li.querySelector('.standalone').textContent])"
    )
    assert sorted(i[0] for i in listed) == sorted(records)
    specs = doc["backend_specs"]
    for item_id, rerun, standalone in listed:
        record = records[item_id]
        spec, target = specs[record["backend"]], record["target_arch"]
        nodeid = record["nodeid"]
        assert stub_words(rerun, tmp_path) == [
            "./" + nodeid if nodeid.startswith("-") else nodeid,
            *option("--backend", spec), "--seed", "0", *option("--target-arch", target),
        ]  # fmt: skip
        options = [*option("--backend", spec), *option("--target-arch", target)]
        words = stub_words(standalone, tmp_path)
        if item_id.startswith("-"):
            assert words == ["repro", *options, "--", item_id]
        else:
            assert words == ["repro", item_id, *options]
    assert not marker.exists()


def option(name: str, value: str) -> list[str]:
    return [f"{name}={value}"] if value.startswith("-") else [name, value]
