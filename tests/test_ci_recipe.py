"""The example CI workflow (docs/ci/github-actions.yml, explained in docs/ci.md) cannot rot:
every gemmconf and pytest command in its scripts parses with the parser that will read it, and
its report job's scripts run as written on shard results, with neither torch nor a GPU.
(`make lint` checks the workflow itself with actionlint.)"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shlex
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from gemmconf.report import cli as report_cli

pytest_plugins = ["pytester"]

WORKFLOW = Path(__file__).resolve().parents[1] / "docs" / "ci" / "github-actions.yml"
# what a shell word of the scripts stands in for when parsed: `${{ matrix.shard }}`, `$SHARDS`
EXPRESSION = re.compile(r"\$\{\{.*?\}\}")
ARRAY_ASSIGNMENT = re.compile(r"(?<![\w$])(\w+)\+?=\(([^()]*)\)")
ARRAY_EXPANSION = re.compile(r"^\$\{(\w+)\[@\]\}$")


@dataclass(frozen=True)
class Command:
    """One gemmconf or pytest command line of the workflow's scripts."""

    where: str  # job / step
    tool: str  # "run": pytest's options (gemmconf run, pytest); "report": gemmconf report's
    args: tuple[str, ...]  # after `gemmconf run` or `gemmconf report`


def steps(workflow: dict) -> Iterator[tuple[str, dict]]:
    for job_name, job in workflow["jobs"].items():
        for index, step in enumerate(job.get("steps", [])):
            yield f"{job_name} / {step.get('name') or step.get('uses') or index}", step


def commands(text: str) -> list[Command]:
    """The gemmconf and pytest commands in the workflow's `run:` scripts, with the options of
    the bash arrays they expand (`"${durations[@]}"`) put in place."""
    found = []
    for where, step in steps(yaml.safe_load(text)):
        if "run" in step:
            found += [Command(where, tool, args) for tool, args in script_commands(step["run"])]
    return found


def script_commands(script: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    arrays: dict[str, list[str]] = {}
    script = EXPRESSION.sub("1", script).replace("\\\n", " ")
    for line in script.splitlines():
        for assigned in ARRAY_ASSIGNMENT.finditer(line):
            arrays[assigned[1]] = shlex.split(assigned[2])
        line = ARRAY_ASSIGNMENT.sub("", line)
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = []
        for word in lexer:
            expansion = ARRAY_EXPANSION.match(word)
            if expansion and expansion[1] not in arrays:
                raise ValueError(f"{word}: an array this test did not see assigned")
            words += arrays[expansion[1]] if expansion else [word]
        for segment in _segments(words):
            command = _gemmconf_command(segment)
            if command is not None:
                yield command


def _segments(words: list[str]) -> Iterator[list[str]]:
    """Split at the shell's operators (`||`, `;`, `>>`, ...): one simple command each."""
    segment: list[str] = []
    for word in words:
        if word and all(c in "();<>|&" for c in word):
            yield segment
            segment = []
        else:
            segment.append(word)
    yield segment


def _gemmconf_command(words: list[str]) -> tuple[str, tuple[str, ...]] | None:
    for index, word in enumerate(words):
        rest = tuple(words[index + 1 :])
        name = Path(word).name
        if name == "gemmconf" and rest[:1] in (("run",), ("report",)):
            return rest[0], rest[1:]
        if name.startswith("python") and rest[:2] == ("-m", "gemmconf.report.cli"):
            return "report", rest[2:]
        if name.startswith("python") and rest[:2] == ("-m", "pytest"):
            return "run", rest[2:]
        if name == "pytest":
            return "run", rest
    return None


def report_problem(args: tuple[str, ...], capsys: pytest.CaptureFixture) -> str | None:
    """Why `gemmconf report ARGS` would not parse (None: it does). Exact option names only:
    argparse would take a prefix of a long option."""
    parser = argparse.ArgumentParser(prog="gemmconf")
    report = report_cli.add_subcommands(parser.add_subparsers(dest="command", required=True))
    try:
        parser.parse_args(["report", *args])
    except SystemExit:
        return capsys.readouterr().err.strip().splitlines()[-1]
    (subcommands,) = (a for a in report._actions if isinstance(a, argparse._SubParsersAction))
    known = {
        name for action in subcommands.choices[args[0]]._actions for name in action.option_strings
    }
    unknown = [a.split("=")[0] for a in args if a.startswith("--") and a.split("=")[0] not in known]
    return f"not an option of report {args[0]}: {', '.join(unknown)}" if unknown else None


def run_problem(args: tuple[str, ...], pytester: pytest.Pytester) -> str | None:
    """Why pytest (with gemmconf's plugin, xdist, pytest-html) would not parse ARGS."""
    try:
        pytester.parseconfig(*args)
    except pytest.UsageError as exc:
        return str(exc)
    return None


def problems(text: str, pytester: pytest.Pytester, capsys: pytest.CaptureFixture) -> list[str]:
    found = []
    for command in commands(text):
        check = run_problem(command.args, pytester) if command.tool == "run" else None
        if command.tool == "report":
            check = report_problem(command.args, capsys)
        if check:
            found.append(f"{command.where}: {check}")
    return found


def test_every_option_the_workflow_uses_exists(pytester, capsys):
    text = WORKFLOW.read_text()
    found = commands(text)
    shards = [c for c in found if c.tool == "run"]
    assert shards and all(
        {"--shard", "--durations-from", "--results"} <= set(c.args) for c in shards
    )
    assert {c.args[0] for c in found if c.tool == "report"} == {"merge", "html", "diff"}
    assert problems(text, pytester, capsys) == []


@pytest.mark.parametrize(
    ("planted", "named"),
    [
        (("--durations-from", "--duration-from"), "unrecognized arguments: --duration-from"),
        (("--shard", "--shards"), "unrecognized arguments: --shards"),
        (("--baseline", "--base"), "not an option of report html: --base"),  # a prefix
        (("-o reports/results.json", "reports/results.json"), "the following arguments"),
    ],
)
def test_a_renamed_option_is_caught(pytester, capsys, planted, named):
    old, new = planted
    text = WORKFLOW.read_text()
    assert old in text
    found = problems(text.replace(old, new, 1), pytester, capsys)
    assert len(found) == 1 and named in found[0], found


def _without(modules: tuple[str, ...], folder: Path) -> Path:
    """A folder for PYTHONPATH in which importing each of `modules` fails."""
    for module in modules:
        (folder / module).mkdir(parents=True)
        (folder / module / "__init__.py").write_text(f"raise ImportError('no {module} here')\n")
    return folder


def _python_on_path(folder: Path) -> Path:
    """A `python` that is this interpreter (its virtual environment too)."""
    folder.mkdir()
    shim = folder / "python"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return folder


def run_job_scripts(
    job: str, where: Path, env: dict[str, str]
) -> list[subprocess.CompletedProcess]:
    """Each `run:` step of `job` as GitHub's bash runs it (`bash -e -o pipefail`), until one
    fails; the install step (pip) is left out: this environment has gemmconf."""
    done = []
    for _, step in steps({"jobs": {job: yaml.safe_load(WORKFLOW.read_text())["jobs"][job]}}):
        if "run" not in step or step["run"].lstrip().startswith("pip install"):
            continue
        script = EXPRESSION.sub("1", step["run"])
        done.append(
            subprocess.run(
                ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script],
                cwd=where,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
        )
        if done[-1].returncode:
            break
    return done


def test_the_report_jobs_scripts_run_without_torch_and_gate_on_a_regression(suite):
    backends = ["--backend", "eager,faulty_backends:segfault", "-p", "no:xdist"]
    (suite.path / "reports" / "shards").mkdir(parents=True)
    for i in (1, 2):  # the shard jobs' artifacts, as the report job downloads them
        results = f"reports/shards/shard-{i}.json"
        shard = suite.runpytest("suites", *backends, "--shard", f"{i}/2", "--results", results)
        assert shard.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    env = {
        **os.environ,
        "PATH": f"{_python_on_path(suite.path / 'bin')}{os.pathsep}{os.environ['PATH']}",
        # the report job installs gemmconf without its dependencies, and jinja2; the folder
        # that hides them goes first, and what was on the path stays after it (where gemmconf
        # is installed apart, as on the GPU machine's `pip --target`)
        "PYTHONPATH": os.pathsep.join(
            p
            for p in (
                str(_without(("torch", "triton", "numpy", "yaml", "pytest"), suite.path / "no")),
                os.environ.get("PYTHONPATH", ""),
            )
            if p
        ),
    }

    first = run_job_scripts("report", suite.path, env)  # no baseline yet
    assert [p.returncode for p in first] == [0] * 4, [p.stdout + p.stderr for p in first]
    merged = json.loads((suite.path / "reports" / "results.json").read_text())
    assert merged["counts"]["failed"] == 1  # the trigger item, on the segfaulting backend
    assert (suite.path / "reports" / "conformance.html").is_file()
    assert "no baseline yet" in first[2].stdout
    kept = suite.path / "baseline" / "results.json.gz"  # what the default branch would keep
    assert json.loads(gzip.decompress(kept.read_bytes()))["records"] == merged["records"]

    assert [p.returncode for p in run_job_scripts("report", suite.path, env)] == [0] * 4
    for record in merged["records"]:  # the baseline had the item passing: now a regression
        if record["outcome"] == "failed":
            record.update(outcome="passed", kind=None, reason=None)
    kept.write_bytes(gzip.compress(json.dumps(merged).encode()))
    gated = run_job_scripts("report", suite.path, env)
    assert [p.returncode for p in gated] == [0, 0, 1], [p.stdout + p.stderr for p in gated]
    assert "1 regression(s)" in gated[-1].stdout
