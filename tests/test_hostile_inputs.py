"""Files from someone else run nothing and stop nothing (issue 44): suite, expectations and
results files are untrusted input. Each attempt of the issue's probe ends in a usage error naming
file:line and field, or in a harmless, quoted result.

What could hang or exhaust memory before its fix runs in a child process (`bounded`) whose
address space may grow 1 GiB past what its imports took and which is killed after `TIMEOUT`
seconds: the test fails, and the test run goes on."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import warm_python

from gemmconf import expectations
from gemmconf.scenario import ScenarioError, load_suite

pytest_plugins = ["pytester"]

TIMEOUT = 120  # seconds: a fixed loader answers in well under one on the slowest dev box
MEMORY = 1 << 30  # bytes of address space a child may add once its imports are done

SUITE = """
suite: tiny
scenarios:
  - name: mm
    op: mm
    shape: {M: 8, N: 8, K: 8}
    axes:
      dtype: [fp32, fp16]
"""

PRELUDE = f"""
import resource, sys
def cap_memory():
    pages = int(open("/proc/self/statm").read().split()[0])
    size = pages * resource.getpagesize() + {MEMORY}
    resource.setrlimit(resource.RLIMIT_AS, (size, size))
"""


def bounded(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run `code` (which calls cap_memory() once its imports are done) in a fresh Python."""
    try:
        return warm_python.run(
            [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            code_runs_warm=True,  # its limits count from where the code's imports end
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {TIMEOUT} s: unbounded time")


def load_in_child(tmp_path: Path, suite_text: str, expectations_text: str | None = None) -> str:
    """Load `suite_text` (and an expectations file for backend `b`) in a bounded child; its
    output: the ScenarioError's text, or "loaded N"."""
    (tmp_path / "suite.yaml").write_text(suite_text)
    if expectations_text is not None:
        (tmp_path / "expectations").mkdir()
        (tmp_path / "expectations" / "b.yaml").write_text(expectations_text)
    result = bounded(
        """
        from pathlib import Path
        from gemmconf import expectations
        from gemmconf.scenario import ScenarioError, load_suite
        cap_memory()
        here = Path.cwd()
        try:
            instances = load_suite(here / "suite.yaml", root=here)
            if (here / "expectations").is_dir():
                expectations.load(here / "expectations", "b", instances, root=here)
        except ScenarioError as exc:
            print(exc)
        else:
            print("loaded", len(instances))
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


# ---- expectations: patterns ------------------------------------------------------------------


def test_an_expectation_glob_is_matched_in_linear_time(tmp_path):
    """`*?` ten times then Q, against ids 50 characters long: the regex `.*.` ten times
    backtracked for minutes; the entry now matches nothing, which is the usual error."""
    suite = SUITE.replace("dtype: [fp32, fp16]", "case: [{id: " + "a" * 40 + ", dtype: fp32}]")
    entry = "backend: b\nexpectations:\n  - match: '" + "*?" * 10 + "Q'\n    reason: r\n"
    out = load_in_child(tmp_path, suite, entry)
    assert out.startswith("expectations/b.yaml:3: match: pattern '*?*?") and "matches no" in out


def old_glob(pattern: str):
    """The translation the glob replaced (`*` -> `.*`), the meaning it keeps."""
    import re

    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile("".join(parts), re.DOTALL)


def test_the_linear_glob_means_what_the_regex_meant():
    import random

    draw = random.Random(44)
    for _ in range(20_000):
        pattern = "".join(draw.choice("ab*?[") for _ in range(draw.randint(0, 7)))
        text = "".join(draw.choice("ab[") for _ in range(draw.randint(0, 9)))
        expected = bool(old_glob(pattern).fullmatch(text))
        assert bool(expectations.compile_pattern(pattern).fullmatch(text)) == expected, (
            pattern,
            text,
        )


# ---- suite and expectations files: YAML -------------------------------------------------------


def alias_bomb() -> str:
    """Nine levels of nine aliases in a scenario's `doc` (whose error message repr()s it)."""
    items = ["&x0 [" + ", ".join(['"aaaaaaaaaa"'] * 9) + "]"]
    items += [f"&x{i} [" + ", ".join([f"*x{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return SUITE.replace("    axes:", "    doc: [" + ", ".join(items) + "]\n    axes:")


def test_a_yaml_alias_bomb_is_a_usage_error(tmp_path):
    out = load_in_child(tmp_path, alias_bomb())
    assert out.startswith("suite.yaml:7: doc: with its aliases written out the document holds")


def test_a_recursive_alias_is_a_usage_error(tmp_path):
    out = load_in_child(tmp_path, SUITE.replace("    axes:", "    doc: &d [*d]\n    axes:"))
    assert out == "suite.yaml:7: doc: alias *d inside the node &d it names (a recursive structure)"


def test_aliases_the_shipped_files_use_still_load(tmp_path):
    suite = SUITE.replace("shape: {M: 8, N: 8, K: 8}", "shape: &s {M: 8, N: 8, K: 8}")
    suite += "  - {name: again, op: mm, shape: *s}\n"
    assert load_in_child(tmp_path, suite) == "loaded 3"


def test_deep_nesting_is_a_usage_error_not_a_crash(tmp_path):
    """100,000 nested brackets segfaulted the whole pytest run inside PyYAML."""
    out = load_in_child(tmp_path, "suite: nest\nscenarios: " + "[" * 100_000 + "\n")
    assert out == "suite.yaml:2: scenarios: nested more than 64 mappings or lists deep"


def test_a_file_past_the_size_limit_is_refused_unread(tmp_path):
    (tmp_path / "big.yaml").write_text(SUITE + "#" * (1 << 20) + "\n")
    with pytest.raises(ScenarioError, match=r"big.yaml: file: 1,048,691 bytes, past the limit"):
        load_suite(tmp_path / "big.yaml", root=tmp_path)


def test_a_file_of_too_many_values_is_a_usage_error(tmp_path):
    text = SUITE.replace("    axes:", "    doc: [" + ",".join(["1"] * 100_000) + "]\n    axes:")
    out = load_in_child(tmp_path, text)
    assert out == "suite.yaml:7: doc: more than 100,000 values, lists and mappings"


@pytest.mark.parametrize(
    ("where", "value"),
    [("id", r'"a\e[2J\e[31mRED"'), ("doc", r'"ok\rhidden"'), ("doc", '"left\u202eright"')],
)
def test_control_characters_in_a_suite_are_a_usage_error(tmp_path, where, value):
    """An escape sequence in an axis value's id reached the terminal in every node id."""
    text = SUITE.replace("dtype: [fp32, fp16]", f"case: [{{{where}: {value}, dtype: fp32}}]")
    if where == "doc":
        text = SUITE.replace("    axes:", f"    doc: {value}\n    axes:")
    (tmp_path / "suite.yaml").write_text(text)
    with pytest.raises(ScenarioError) as caught:
        load_suite(tmp_path / "suite.yaml", root=tmp_path)
    assert f": {where}: control character U+" in str(caught.value)


def test_control_characters_in_an_expectation_reason_are_a_usage_error(tmp_path):
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "b.yaml").write_text(
        'backend: b\nexpectations:\n  - match: "tiny/*"\n    reason: "\\e[2Jhidden"\n'
    )
    instances = load_suite(tmp_path / "suite.yaml", root=tmp_path)
    with pytest.raises(ScenarioError) as caught:
        expectations.load(tmp_path / "e", "b", instances, root=tmp_path)
    assert str(caught.value).startswith("e/b.yaml:4: reason: control character U+001B in")


def run_in_child(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """pytest on `folder`'s suite (eager, in process), bounded like the loaders above."""
    return bounded(
        f"""
        import pytest, torch, gemmconf.plugin
        cap_memory()
        sys.exit(pytest.main(["suites", "--backend", "eager", "--no-isolate", "-p",
                              "no:cacheprovider", *{list(args)!r}]))
        """,
        folder,
    )


def test_a_run_on_a_hostile_suite_folder_is_a_usage_error_and_keeps_the_results(pytester):
    """Sharing a suite folder is enough: its expectations file loads by itself. Each attempt
    stops the run at start-up with exit 4 naming file:line and field; the previous run's
    results stay as they were."""
    suites = pytester.path / "suites"
    suites.mkdir()
    (suites / "tiny.yaml").write_text(SUITE)
    pytester.makeini("[pytest]\ngemmconf_suites = suites\n")
    # the previous run, on a suite of no one else's: in this process
    previous = pytester.runpytest_inprocess(
        "suites", "--backend", "eager", "--no-isolate", "-p", "no:cacheprovider"
    )
    assert previous.ret == 0
    results = pytester.path / "reports" / "results.json"
    before = results.read_bytes()
    glob = "backend: eager\nexpectations:\n  - match: '" + "*?" * 10 + "Q'\n    reason: r\n"
    long_ids = SUITE.replace("dtype: [fp32, fp16]", "case: [{id: " + "a" * 40 + ", dtype: fp32}]")
    attempts = {
        "tiny.yaml:7: doc: with its aliases written out": {"tiny.yaml": alias_bomb()},
        "tiny.yaml:1: scenarios: nested more than 64": {"tiny.yaml": "scenarios: " + "[" * 10**5},
        "expectations/eager.yaml:3: match: pattern '*?*?*?": {
            "tiny.yaml": long_ids,
            "expectations/eager.yaml": glob,
        },
    }
    (suites / "expectations").mkdir()
    for message, files in attempts.items():
        for name, text in files.items():
            (suites / name).write_text(text)
        result = run_in_child(pytester.path)
        assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stderr[-2000:]
        assert f"ERROR: invalid suite or expectations file: suites/{message}" in result.stderr
        assert results.read_bytes() == before
        (suites / "tiny.yaml").write_text(SUITE)
        (suites / "expectations" / "eager.yaml").unlink(missing_ok=True)


# ---- suite files: values that reach generated source, a regex or the allocator ---------------


def load_text(tmp_path: Path, text: str, **limits: int):
    (tmp_path / "suite.yaml").write_text(text)
    return load_suite(tmp_path / "suite.yaml", root=tmp_path, **limits)


@pytest.mark.parametrize("name", ['"mm\\n"', "1mm", '"mm x"'])
def test_a_name_is_a_word_that_starts_with_a_letter(tmp_path, name):
    """`NAME_RE.match` with `$` let "mm\\n" through (the program's function name then broke
    the generated source), and names starting with a digit made no Python function name."""
    with pytest.raises(ScenarioError, match=r"suite.yaml:4: name: expected a lower-case name"):
        load_text(tmp_path, SUITE.replace("name: mm", f"name: {name}"))


def test_numbers_reach_the_generated_program_as_float_literals(tmp_path):
    """`.inf`/`.nan` were written as bare names (`torch.clamp(out, inf, nan)`: NameError)."""
    from gemmconf.program import program_source

    text = SUITE.replace(
        "    axes:", "    epilogue: [{clamp: [.nan, .inf]}, {mul: -.inf}]\n    axes:"
    )
    source = program_source(load_text(tmp_path, text)[0])
    assert "torch.clamp(out, float('nan'), float('inf'))" in source
    assert "out * float('-inf')" in source
    compile(source, "program", "exec")


@pytest.mark.parametrize("bound", ["'__import__(\"os\")'", "[1]", "true", "null"])
def test_a_clamp_bound_is_a_number(tmp_path, bound):
    """Any YAML value's repr() reached the generated source; now only numbers (or null for an
    open side) do."""
    text = SUITE.replace("    axes:", f"    epilogue: [{{clamp: [{bound}, null]}}]\n    axes:")
    with pytest.raises(ScenarioError, match=r"epilogue: clamp takes \[min, max\], numbers or null"):
        load_text(tmp_path, text)


def test_a_long_shape_expression_is_a_usage_error(tmp_path):
    """A 20,000-term expression ended the run in a RecursionError (INTERNALERROR)."""
    terms = "+".join(["K"] * 20_000)
    text = SUITE.replace("K: 8}", f"K: 8}}\n    operands: {{a: {{shape: [M, '{terms}']}}}}")
    out = load_in_child(tmp_path, text)
    assert out.startswith(
        "suite.yaml:7: operands: operand 'a': shape expression of 39,999 characters, past the "
        "limit of 200"
    )


def test_an_instance_past_max_elements_is_a_usage_error(tmp_path):
    """A shape of 10^20 rows loaded, and failed at the item in an overflow of the input
    builder; instances are held to --max-elements (2^32 by default: the suite's largest holds
    2.2e9 elements)."""
    text = SUITE.replace("M: 8,", "M: 100000000000000000000,")
    with pytest.raises(ScenarioError) as caught:
        load_text(tmp_path, text)
    assert "suite.yaml:6: shape: shape set 0 makes 1,600,000,000,000,000,000,064 elements" in str(
        caught.value
    )
    assert "past the limit of 4,294,967,296 per instance (--max-elements)" in str(caught.value)
    wide = SUITE.replace("{M: 8, N: 8, K: 8}", "{M: 65536, N: 65536, K: 1}")  # 2^32 + 2^17
    with pytest.raises(ScenarioError, match="--max-elements"):
        load_text(tmp_path, wide)
    assert len(load_text(tmp_path, wide, max_elements=1 << 33)) == 2
    empty = SUITE.replace("{M: 8, N: 8, K: 8}", "{M: 100000000000000000000, N: 0, K: 0}")
    with pytest.raises(ScenarioError, match="largest extent 100,000,000,000,000,000,000"):
        load_text(tmp_path, empty)  # nothing to hold, but a size no allocator takes


def test_max_elements_is_an_option_of_the_run(pytester):
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "tiny.yaml").write_text(SUITE)
    pytester.makeini("[pytest]\ngemmconf_suites = suites\n")
    args = ("suites", "--backend", "eager", "--co", "-q")
    result = pytester.runpytest(*args, "--max-elements", "100")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tiny.yaml:6: shape: shape set 0 makes 192 elements*"])
    pytester.runpytest(*args, "--max-elements", "192").assert_outcomes()


ERROR_SUITE = """
suite: rx
scenarios:
  - name: bad
    op: mm
    shape: {M: 8, N: 8, K: 9}
    operands: {b: {shape: [7, N]}}
    checks: {raises: {type: RuntimeError, match: "PATTERN"}}
"""


def test_a_backtracking_raises_match_ends_the_item_at_once(pytester):
    """`(.*.*)*Q` against eager's message ("mat1 and mat2 shapes cannot be multiplied ...")
    backtracked past the item timeout; with --no-isolate nothing stopped it. It is searched in
    bounded time now: the item is the usual error (the scenario's pattern does not match)."""
    suites = pytester.path / "suites"
    suites.mkdir()
    (suites / "rx.yaml").write_text(ERROR_SUITE.replace("PATTERN", "(.*.*)*Q"))
    pytester.makeini("[pytest]\ngemmconf_suites = suites\n")
    result = run_in_child(pytester.path)
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout[-3000:]
    assert "rx/bad expects eager to raise RuntimeError matching '(.*.*)*Q'" in result.stdout


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"(a)\\1", "a backreference needs backtracking"),
        ("(?=shapes)", "a lookahead or lookbehind needs backtracking"),
        ("x" * 501, "501 characters, past the limit of 500"),
        ("(a{100}){20}", "more than 1,000 states"),
    ],
)
def test_a_raises_match_that_needs_backtracking_is_a_usage_error(tmp_path, pattern, message):
    with pytest.raises(ScenarioError, match=f"suite.yaml:8: checks: raises.match .*{message}"):
        load_text(tmp_path, ERROR_SUITE.replace("PATTERN", pattern))


def test_the_bounded_search_means_what_re_search_means():
    """re's own parser reads the pattern and re decides each character and anchor; the search
    is a Thompson NFA. A fuzz against re.search over the syntax raises.match allows."""
    import random
    import re

    from gemmconf.scenario import patterns

    draw = random.Random(44)
    anchors = ["^", "$", r"\b", r"\B", r"\A", r"\Z"]

    def atom(depth: int) -> str:
        roll = draw.random()
        if depth > 2 or roll < 0.45:
            return draw.choice(["a", "b", "A", ".", "[ab]", "[^a]", r"\d", r"\s", r"\w", "[a-b1]"])
        if roll < 0.6:
            return draw.choice(anchors)
        if roll < 0.85:
            return "(" + draw.choice(["", "?:", "?i:", "?s:"]) + sequence(depth + 1) + ")"
        return "(" + sequence(depth + 1) + "|" + sequence(depth + 1) + ")"

    def sequence(depth: int) -> str:
        out = ""
        for _ in range(draw.randint(0, 3)):
            piece = atom(depth)
            if piece not in anchors and draw.random() < 0.4:
                piece += draw.choice(["*", "+", "?", "{2}", "{1,3}", "{0,2}", "*?", "+?", "{2,}"])
            out += piece
        return out

    checked = 0
    for _ in range(3000):
        pattern = draw.choice(["", "(?i)", "(?m)", "(?s)", "(?a)"]) + sequence(0)
        try:
            regex = re.compile(pattern)
        except re.error:
            continue
        compiled = patterns.compile_message_pattern(pattern)
        for _ in range(4):
            text = "".join(draw.choice("aAb\n1 .") for _ in range(draw.randint(0, 8)))
            assert compiled.search(text) == bool(regex.search(text)), (pattern, text)
            checked += 1
    assert checked > 8000


# ---- results files ------------------------------------------------------------------------------

SHELL_PAYLOADS = (
    "0; touch {marker} #",
    "$(touch {marker})",
    "`touch {marker}`",
    "x'; touch {marker}; echo '",
    '"; touch {marker}; echo "',
    "--basetemp={marker}",
    "=touch",
    "a\ntouch {marker}",
)


def results_document(records: list[dict], **fields) -> dict:
    return {"format": "gemmconf-results", "version": 1, "complete": True, **fields,
            "records": records}  # fmt: skip


def plain_record(**fields) -> dict:
    return {"id": "tiny/mm[fp32]", "backend": "eager", "outcome": "passed", "suite": "tiny",
            "scenario": "mm", "op": "mm", "dtype": "fp32", "source": "suites/tiny.yaml:3",
            **fields}  # fmt: skip


def write_json(path: Path, document: dict) -> Path:
    path.write_text(json.dumps(document))
    return path


def test_a_seed_that_is_not_an_integer_is_refused_by_every_report(tmp_path, capsys):
    """A seed of "0; touch /tmp/x #" was copied into the page's reproduce command unquoted:
    pasted into a shell, it ran the attacker's command. A seed is an integer everywhere."""
    from gemmconf.report.cli import main as report_main

    bad = write_json(
        tmp_path / "r.json", results_document([plain_record(seed="0; touch /tmp/x #")])
    )
    for command in (["html", str(bad), "-o", str(tmp_path / "p.html")], ["csv", str(bad)]):
        assert report_main(command) == 2
        assert (
            "r.json: record 0 ('tiny/mm[fp32]' on 'eager') has seed '0; touch /tmp/x #': "
            "expected an integer or null" in capsys.readouterr().err
        )
    bad = write_json(tmp_path / "r.json", results_document([plain_record()], seed=True))
    assert report_main(["diff", str(bad), str(bad)]) == 2
    assert "the run's has seed True: expected an integer" in capsys.readouterr().err
    assert not (tmp_path / "p.html").exists()


def hostile_document(marker: Path) -> dict:
    """Every text field a reproduce command or the header takes, each a shell payload."""
    payloads = [p.format(marker=marker) for p in SHELL_PAYLOADS]
    records = [
        plain_record(
            id=f"tiny/mm[{index}]",
            backend=f"b{index}",
            nodeid=payload,
            target_arch=payload,
            seed=[-5, 2**70, 7, None][index % 4],
        )
        for index, payload in enumerate(payloads)
    ]
    records.append(plain_record(id="tiny/mm[derived]", source=payloads[3] + ":3", backend="z"))
    specs = {f"b{index}": payload for index, payload in enumerate(payloads)}
    specs["z"] = payloads[1]
    return results_document(
        records, backend_specs=specs, command=f"pytest x; touch {marker}", seed=3
    )


def expected_words(record: dict, document: dict) -> list[str]:
    """The arguments the reproduce command of `record` must give pytest, each value whole."""
    from gemmconf import ids

    nodeid = record.get("nodeid") or ids.node_id(record["source"], record["id"], record["backend"])
    seed = record["seed"] if record.get("seed") is not None else document["seed"]
    words = ["./" + nodeid if nodeid.startswith("-") else nodeid]
    for name, value in (
        ("--backend", document["backend_specs"][record["backend"]]),
        ("--seed", str(seed)),
        ("--target-arch", record.get("target_arch")),
    ):
        if value is not None:
            words += [f"{name}={value}"] if value.startswith("-") else [name, value]
    return words


@pytest.fixture
def browser(tmp_path: Path):
    """test_browser's headless Chromium, skipped likewise where none is installed."""
    import os

    from test_browser import Chromium, find_chromium

    binary = find_chromium()
    if binary is None:
        if os.environ.get("GEMMCONF_REQUIRE_BROWSER") == "1":
            pytest.fail("Chromium is not installed and GEMMCONF_REQUIRE_BROWSER=1 asks for it")
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    chromium = Chromium(binary, tmp_path / "profile")
    try:
        yield chromium
    finally:
        chromium.close()


def test_every_copyable_command_of_a_hostile_page_is_safe_to_paste(browser, tmp_path):
    """A shell payload in every field a command on the page takes (node id, source, backend
    spec, seed, target, the run's command): each reproduce command, run by bash and by sh with
    `pytest` a function that prints its arguments, gives pytest exactly the record's values, one
    argument each, none of them read as an option of pytest's; the header's run command is
    quoted word by word. Nothing the payloads name is ever created."""
    from test_browser import READY

    from gemmconf.report import page

    marker = tmp_path / "pasted"
    document = hostile_document(marker)
    html = tmp_path / "page.html"
    html.write_text(page.render(document, name="hostile.json"))
    browser.open(html.as_uri())
    browser.wait_for(READY)
    commands = browser.evaluate(
        """window.gemmconf.records.map(r => { window.gemmconf.openDetail(r);
           return [r.id, document.querySelector('#detail .repro-command').textContent]; })"""
    )
    assert browser.errors() == [] and len(commands) == len(document["records"])
    header = browser.evaluate("document.querySelector('.run-facts code').textContent")
    by_id = {r["id"]: r for r in document["records"]}
    stub = 'pytest() { printf "%s\\0" "$@"; }; '
    runs = [(command, expected_words(by_id[id_], document)) for id_, command in commands]
    runs.append((header, ["x;", "touch", str(marker)]))
    for command, expected in runs:
        for shell in ("bash", "sh"):
            ran = subprocess.run(
                [shell, "-c", stub + command], capture_output=True, text=True, cwd=tmp_path
            )
            assert ran.returncode == 0, (shell, command, ran.stderr)
            assert ran.stdout.split("\0")[:-1] == expected, (shell, command)
    assert not marker.exists()


def test_a_results_file_cannot_put_a_formula_in_a_spreadsheet(tmp_path, capsys):
    from gemmconf.report.cli import main as report_main

    formulas = ['=HYPERLINK("http://x.example/?"&A1,"click")', "@SUM(1+1)", "+1+1", "-1+2", "\t=1"]
    records = [
        plain_record(id=f"tiny/mm[{i}]", reason=text, op=text, backend=f"b{i}")
        for i, text in enumerate(formulas)
    ]
    records.append(plain_record(id="tiny/mm[n]", reason="ok", metrics={"err_ratio": -0.5}))
    path = write_json(tmp_path / "r.json", results_document(records))
    assert report_main(["csv", str(path)]) == 0
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    for row, text in zip(rows, formulas, strict=False):
        assert row["reason"] == row["op"] == "'" + text
    assert rows[-1]["err_ratio"] == "-0.5"  # numbers stay numbers


def test_report_output_shows_control_characters_as_escapes(tmp_path, capsys):
    """An id with ESC[2J cleared the terminal of whoever ran `gemmconf report diff` on it."""
    from gemmconf.report.cli import main as report_main

    old = write_json(tmp_path / "old.json", results_document([plain_record()]))
    new = write_json(
        tmp_path / "new.json",
        results_document(
            [
                plain_record(
                    id="tiny/mm[\x1b[2J]",
                    outcome="failed",
                    reason="\x1b]0;title\x07red\u202eevil",
                )
            ]
        ),
    )
    assert report_main(["diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "tiny/mm[\\x1b[2J]" in out and "\\x1b]0;title\\x07red\\u202eevil" in out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out


def _packed_spaces(suffix: str) -> bytes:
    """A results file's start, 272 MiB of spaces and its end, as a gzip ("gz") or xz file."""
    import lzma
    import zlib

    if suffix == "gz":
        packer = zlib.compressobj(1, wbits=31)  # 31: a gzip stream
    else:
        packer = lzma.LZMACompressor(lzma.FORMAT_XZ, preset=1)
    parts = [packer.compress(b'{"format": "gemmconf-results", "version": 1, "pad": "')]
    parts += [packer.compress(b" " * (16 << 20)) for _ in range(17)]
    return b"".join([*parts, packer.compress(b'"}'), packer.flush()])


@pytest.mark.parametrize("suffix", ["gz", "xz"])
def test_a_compressed_bomb_is_refused_in_bounded_memory(tmp_path, suffix):
    """A 3 MB gzip file of spaces decompressed to 3 GiB took 149 s and 12.8 GB to read: now
    nothing past 256 MiB is decompressed, from gzip (272 MiB of spaces in 1.2 MB) or xz (in well
    under 1 MiB; its decoder may take no more than XZ_MEMLIMIT)."""
    bomb = tmp_path / f"bomb.json.{suffix}"
    bomb.write_bytes(_packed_spaces(suffix))
    assert bomb.stat().st_size < 2 << 20
    result = bounded(
        f"""
        from gemmconf.report.cli import main
        cap_memory()
        sys.exit(main(["diff", {str(bomb)!r}, {str(bomb)!r}]))
        """,
        tmp_path,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert f"bomb.json.{suffix}: holds more than 268,435,456 bytes decompressed" in result.stderr


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("r.json", "[" * 100_000, "r.json: JSON nested deeper than Python reads"),
        ("r.json.partial", '{"a": 1}\n[1]\n{}\n', "is not an object"),
        ("r.json.partial", '[1]\n{"id": 1}\n', "record 0 is not an object"),
    ],
)
def test_a_malformed_results_file_is_a_clear_error(tmp_path, capsys, name, text, message):
    from gemmconf.report.cli import main as report_main

    (tmp_path / name).write_text(text)
    assert report_main(["csv", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_expectation_message_pattern_is_searched_in_bounded_time(tmp_path):
    """An entry's `message` (a regex searched in a failure's reason) is a file's pattern too:
    one that needs backtracking is refused, any other is searched as raises.match is."""
    (tmp_path / "suite.yaml").write_text(SUITE)
    instances = load_suite(tmp_path / "suite.yaml", root=tmp_path)
    folder = tmp_path / "e"
    folder.mkdir()

    def entry(message: str) -> str:
        return (
            "backend: b\nexpectations:\n  - match: 'tiny/*'\n    kind: wrong values\n"
            f"    message: '{message}'\n    reason: r\n"
        )

    (folder / "b.yaml").write_text(entry("(?<=x)y"))
    with pytest.raises(ScenarioError, match=r"e/b.yaml:5: message: .*lookahead or lookbehind"):
        expectations.load(folder, "b", instances, root=tmp_path)
    (folder / "b.yaml").write_text(entry("(.*.*)*Q"))
    result = bounded(
        f"""
        from pathlib import Path
        from gemmconf import expectations
        from gemmconf.scenario import load_suite
        here = Path({str(tmp_path)!r})
        table = expectations.load(here / "e", "b", load_suite(here / "suite.yaml", root=here),
                                  root=here)
        cap_memory()
        entry = table.lookup("tiny/mm[fp32]")
        print(entry.expects("wrong values", "Tensor-likes are not close! " * 40))
        """,
        tmp_path,
    )
    assert result.stdout.strip() == "False", result.stderr[-2000:]
