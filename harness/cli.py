"""The `gemmconf` command: run the installed suite from any folder, list backends and
scenarios, explain or reproduce one item, and work with results files (`gemmconf report`).

`gemmconf run [pytest args]` is pytest on the suite installed with gemmconf (or `--suites PATH`),
with the same configuration wherever it is started; in a checkout, `pytest suites ...` does the
same on the checkout's suite.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gemmconf.expectations import compile_pattern
from gemmconf.report import cli as report_cli

# pytest's configuration for `gemmconf run` (the plugin knows such a run by it)
RUN_INI = Path(__file__).with_name("run.ini")
# `explain` and `repro` find an item by either (`_find`)
ID_HELP = (
    "instance id, e.g. 'first/mm[bf16-127x65x33-nt]', or the node id a run printed, e.g. "
    "'dense/first.yaml::mm[bf16-127x65x33-nt@eager]'"
)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv[:1] == ["run"]:  # every other argument is pytest's: no parsing of ours
            return run_suite(argv[1:])
        return _parse_and_run(argv)
    except BrokenPipeError:  # `gemmconf report diff ... | head`: the reader stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no traceback at exit
        return 1  # what the command would have said is unknown: never a success


def _parse_and_run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="gemmconf",
        description="GEMM backend conformance suite: run the installed suite with pytest "
        "(`gemmconf run --backend NAME`), and the helpers around a run.",
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="print gemmconf's version, the checkout's commit where it runs from one, and the "
        "hash of its code (what a results file's `gemmconf` field records), and exit",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    commands.add_parser(
        "run",
        help="run the conformance suite with pytest: `gemmconf run [pytest args]` (e.g. "
        "--backend NAME, -m EXPR, --lf); reports/ in the current folder",
        description=RUN_HELP,
    )

    commands.add_parser("backends", help="list known backends and whether they run here")

    _add_list(commands)
    _add_explain(commands)
    _add_repro(commands)
    _add_bench(commands)
    _add_new_backend(commands)
    _add_expect(commands)
    report_cli.add_subcommands(commands)
    return _command(parser.parse_args(argv))


def _add_list(commands: Any) -> None:
    """`gemmconf list`: scenario instance ids, by pattern and markers."""
    listing = commands.add_parser("list", help="list scenario instance ids")
    listing.add_argument(
        "pattern",
        nargs="?",
        default="*",
        help=(
            "id pattern (* and ? wildcards; brackets are literal). An id begins with its suite's "
            "name, not its folder: suites/dense/first.yaml's are first/... (`gemmconf list "
            "'first/*'`), so the items of `gemmconf run dense` are those of every suite file in "
            "that folder"
        ),
    )
    listing.add_argument(
        "-m",
        "--markers",
        default=None,
        metavar="EXPR",
        help="only instances whose markers match EXPR, as `gemmconf run -m` selects them "
        "(`gemmconf list -m 'sm90 and fp8'`; `gemmconf explain ID` shows an instance's markers)",
    )
    _suite_options(listing)


def _add_explain(commands: Any) -> None:
    """`gemmconf explain`: one instance's fields, and optionally its verdict."""
    explain = commands.add_parser(
        "explain",
        help="show one scenario instance: its fields, inputs, and the command that runs it",
    )
    explain.add_argument("id", help=ID_HELP)
    _suite_options(explain)
    explain.add_argument("--backend", default="reference")
    explain.add_argument("--seed", type=int, default=0)
    explain.add_argument(
        "--run",
        action="store_true",
        help="also run it on the backend here and print the verdict (in a worker process, as "
        "`gemmconf run` does: a crash, hang or lost CUDA context is the verdict)",
    )
    explain.add_argument(
        "--no-isolate",
        action="store_true",
        help="with --run: run it in this process instead (a debugger sees the backend; a crash "
        "ends explain)",
    )


def _add_repro(commands: Any) -> None:
    """`gemmconf repro`: one item as a standalone file."""
    repro = commands.add_parser(
        "repro",
        help="write one item as a standalone Python file that needs torch (and a backend's own "
        "package, for a backend that is not PyTorch's): the program, "
        "its inputs, the backend's call, the comparison; ready for an upstream issue",
        description="Write a standalone repro of one item on one backend: a Python file with "
        "the program under test, how its inputs are drawn (as gemmconf draws them for --seed), "
        "the backend's call (dynamo:NAME as torch.compile(fn, backend=NAME); an import path as "
        "an import of that object) and the comparison against eager and fp64 with the item's "
        "tolerance. It exits 1 when the backend fails the item, 0 when it passes.",
    )
    repro.add_argument("id", help=ID_HELP)
    repro.add_argument("--backend", default="reference", help="as pytest's --backend (one)")
    repro.add_argument("--seed", type=int, default=0, help="the run seed (default: 0)")
    repro.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="FILE",
        help="where to write it (default: repro_<item>_<backend>.py here; '-' for stdout)",
    )
    _suite_options(repro)


def _add_bench(commands: Any) -> None:
    """`gemmconf bench`: the bench/ files' timing table."""
    bench = commands.add_parser(
        "bench",
        help="time backends against cuBLAS: runs the suite's bench/ files with --benchmark "
        "(on the reference backend, one item at a time) and prints the table",
    )
    bench.add_argument(
        "paths",
        nargs="*",
        default=None,
        help="suite files or folders (default: bench/ of the suite)",
    )
    bench.add_argument("--suites", default=None, help=SUITES_HELP)
    bench.add_argument("--backend", default="reference", help="as pytest's --backend")
    bench.add_argument("-k", dest="keyword", default=None, help="as pytest's -k")
    bench.add_argument(
        "--results", default="reports/bench.json", help="results file (default: reports/bench.json)"
    )
    bench.add_argument(
        "--bench-mode",
        default="wall",
        help="as pytest's --bench-mode: wall (default), kernel or cudagraph",
    )


def _add_new_backend(commands: Any) -> None:
    """`gemmconf new-backend`: a backend package to start from."""
    new = commands.add_parser(
        "new-backend",
        help="write a backend package to start from (entry point, expectations file)",
        description="Write NAME/: a pip-installable package with a backend behind gemmconf's "
        "protocol, the entry point that lets `--backend NAME` find it, and its own "
        "expectations file.",
    )
    new.add_argument("name", help="the backend's name (letters, digits, - and _)")
    new.add_argument("--dir", default=".", help="where to write NAME/ (default: here)")


class _Version(argparse.Action):
    """`gemmconf --version`: two checkouts of one version differ (a gemlite trial, 2026-12-02:
    the docs of the checkout's head described rules its installed wheel did not have)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"gemmconf {_version_text()}")
        parser.exit()


def _version_text() -> str:
    """ "0.1.0 (commit 4856a9d, code a6d032b6562c)": the version and the code that runs."""
    from gemmconf.provenance import gemmconf_source

    source = gemmconf_source()
    parts = [f"commit {source['commit']}"] if "commit" in source else []
    parts += [f"code {source['code']}"] if "code" in source else []
    extra = f" ({', '.join(parts)})" if parts else ""
    return f"{source.get('version', 'unknown')}{extra}"


EXPECT_HELP = """\
Judge a results file again under expectations files, without running anything: each record's
own result (a failure's kind and reason, or a pass) is put to the first entry that matches it on
the record's hardware class and torch version, in the files' order (or a later one that expects
the failure where the first expects another kind or message), as a run does. Prints what
the run would count under those files, the records whose outcome would change, every record left
unexplained (a failure no entry expects, a pass a strict xfail entry denies; past twenty, by
cause as `gemmconf report groups` prints them) and the entries that decided no record of the
run. Skipped records did not run and stay skipped. Exit status: 0 nothing left unexplained; 1
some record is; 2 a file that cannot be read, or a file for a backend the results do not
hold. With --draft PATH it first writes PATH, an expectations file with one entry per cause of
the failures left unexplained, each naming its items by id, and judges under it too."""


def _add_expect(commands: Any) -> None:
    """`gemmconf expect`: a results file judged again under expectations files."""
    expect = commands.add_parser(
        "expect",
        help="judge a results file again under expectations files (nothing is run): what each "
        "file explains and what it leaves",
        description=EXPECT_HELP,
    )
    expect.add_argument(
        "results", metavar="RESULTS.json", help="a results file (or .json.gz, .json.xz)"
    )
    expect.add_argument(
        "--expectations",
        action="append",
        default=[],
        metavar="PATH",
        help="an expectations file (its backend: names the backend); repeatable, the first "
        "entry that matches a record wins, across files in the order given",
    )
    expect.add_argument("--json", action="store_true", help="the judgment as JSON")
    expect.add_argument(
        "--draft",
        metavar="PATH",
        help="write PATH, a draft expectations file with one entry per cause of the failures "
        "the files leave unexplained (all of them without --expectations), each naming its "
        "items by id; then judge the results under the files and the draft (the results must "
        "hold one backend, or --backend names it; PATH must not exist)",
    )
    expect.add_argument("--backend", metavar="LABEL", help="with --draft: the backend drafted")


def _expect(args: argparse.Namespace) -> int:
    import json

    from gemmconf import rejudge
    from gemmconf.expectations import read
    from gemmconf.report.merge import load
    from gemmconf.report.quoting import terminal
    from gemmconf.report.results import ResultsError
    from gemmconf.scenario import ScenarioError

    try:  # records, backend specs and seed checked as every report reads them
        results = load(args.results)
        files = [read(Path(path)) for path in args.expectations]
    except (ResultsError, ScenarioError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    held = sorted({r.backend for r in results["records"]})
    if not args.expectations and not args.draft:
        print(
            "error: give --expectations PATH (repeatable), --draft PATH, or both", file=sys.stderr
        )
        return 2
    for file in files:
        if file.backend not in held:
            print(
                f"error: {file.shown}: backend {file.backend!r} has no record in "
                f"{args.results} (its backends: {', '.join(held) or 'none'})",
                file=sys.stderr,
            )
            return 2
    if args.draft:
        drafted = _draft(args, results, files, held)
        if drafted is None:
            return 2
        files.append(drafted)
    judged = rejudge.rejudge(results, files)
    if args.json:
        print(json.dumps(judged.to_json(), indent=1))
    else:
        print("\n".join(terminal(line) for line in rejudge.lines(judged)))
    return 1 if judged.left else 0


def _draft(args: argparse.Namespace, results: dict, files: list, held: list[str]):
    """`expect --draft PATH`: the draft written (gemmconf.draft) and read back as a file; None
    after a usage error said why."""
    from gemmconf import draft, rejudge
    from gemmconf.expectations import ExpectationFile, read

    backend = args.backend or (held[0] if len(held) == 1 else None)
    if backend not in held:
        known = ", ".join(held) or "none"
        which = f"backend {args.backend!r} has no record" if args.backend else "give --backend"
        print(f"error: --draft: {which} in {args.results} (its backends: {known})", file=sys.stderr)
        return None
    path = Path(args.draft)
    if path.exists():  # an author's file is never overwritten
        print(f"error: --draft {path}: the file exists; name a new one", file=sys.stderr)
        return None
    empty = ExpectationFile(path, str(path), backend, ())
    judged = rejudge.rejudge(results, [*files, empty])
    failures = draft.unexplained(judged, backend)
    text = draft.draft(
        failures, backend, results=args.results, path=args.draft, version=_version_text()
    )
    try:
        path.write_text(text)
    except OSError as exc:
        print(f"error: --draft {path}: {exc.strerror or exc}", file=sys.stderr)
        return None
    print(f"gemmconf: wrote {path}: {len(failures)} failure(s) of {backend} by cause")
    return read(path)


def _command(args: argparse.Namespace) -> int:
    if args.command == "expect":
        return _expect(args)
    if args.command == "new-backend":
        return _new_backend(args.name, Path(args.dir))
    if args.command == "report":
        return report_cli.run(args)
    if args.command == "bench":
        return _bench(args)
    if args.command == "backends":
        return _backends()
    if args.command == "list":
        return _list(args.suites, args.pattern, args.max_items, args.markers, args.max_elements)
    if args.command == "repro":
        return _repro(args)
    return _explain(args)


RUN_HELP = """\
Run the conformance suite: pytest on the suite installed with gemmconf (or --suites PATH), from
any folder. Every argument is pytest's (see `pytest --help`, group gemmconf): --backend NAME,
-m EXPR, -k EXPR, -n N, --lf, --junitxml PATH, ... Results go to reports/ in the current folder;
--lf and --ff remember failures in .pytest_cache/ there. Suite files and folders named as
arguments are looked up in the suite when the current folder has no such path (`gemmconf run
dense epilogue --backend X`), so a node id that a run printed
(`dense/first.yaml::mm[fp32-127x65x33-nn@eager]`) can be pasted back. No ini file of the
current folder is read (gemmconf's own run.ini is used); run pytest directly to use yours."""

SUITES_HELP = "the suite folder (default: the suite installed with gemmconf)"
MAX_ITEMS_HELP = "the most instances one scenario may expand to (default: 100,000)"
MAX_ELEMENTS_HELP = (
    "the most elements one instance may hold in a shape set, and the largest extent "
    "(default: 4,294,967,296)"
)


def _suite_options(command: argparse.ArgumentParser) -> None:
    """--suites and the loader's limits, for the commands that load the suite."""
    command.add_argument("--suites", default=None, help=SUITES_HELP)
    command.add_argument("--max-items", type=int, default=None, help=MAX_ITEMS_HELP)
    command.add_argument("--max-elements", type=int, default=None, help=MAX_ELEMENTS_HELP)


# Options whose value is a path, never a suite path to run (as pytest's positional arguments are).
_PATH_OPTIONS = (
    "--suites",
    "--gemmconf-suites",
    "--expectations",
    "--gemmconf-expectations",
    "--results",
    "--gemmconf-results",
    "--conformance-html",
    "--gemmconf-conformance-html",
    "--durations-from",
    "--junitxml",
    "--junit-xml",
    "--html",
    "--basetemp",
    "--confcutdir",
    "--rootdir",
    "-c",
    "--config-file",
)

# Options whose value is never a suite path, though it may be named like a folder of the suite
# (`-m epilogue`, `-k dense`): pytest's and xdist's that take a value, and gemmconf's.
_VALUE_OPTIONS = (
    "-k",
    "-m",
    "-n",
    "-p",
    "-o",
    "-W",
    "-r",
    "--numprocesses",
    "--dist",
    "--maxprocesses",
    "--maxfail",
    "--durations",
    "--durations-min",
    "--tb",
    "--deselect",
    "--ignore",
    "--ignore-glob",
    "--override-ini",
    "--pythonwarnings",
    "--log-level",
    "--capture",
    "--import-mode",
    "--backend",
    "--gemmconf-backend",
    "--seed",
    "--gemmconf-seed",
    "--max-items",
    "--gemmconf-max-items",
    "--max-elements",
    "--gemmconf-max-elements",
    "--bench-mode",
    "--require-hardware",
    "--target-arch",
    "--workers-per-gpu",
    "--item-timeout",
    "--first-result-timeout",
    "--gpu-memory-budget",
    "--confirm-failures",
    "--shard",
)

# pytest arguments after which gemmconf run adds none of its own: the caller chose them.
_CONFIG_OPTIONS = ("-c", "--config-file", "--rootdir")


def run_suite(args: list[str]) -> int:
    """`gemmconf run`: pytest on the suite with `pytest_arguments`."""
    import pytest

    if any(a in ("-h", "--help") for a in args):
        print(RUN_HELP + "\n")
    try:
        command = pytest_arguments(args, Path.cwd())
    except FileNotFoundError as exc:
        print(f"gemmconf run: error: {exc}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    _importable_here(Path.cwd())
    return int(pytest.main(command))


def _importable_here(cwd: Path) -> None:
    """Like `python -m pytest`: modules of the current folder import (`--backend my_gemm:MyGemm`
    finds my_gemm.py here), in this process and in the worker processes items run in."""
    import os

    sys.path.insert(0, str(cwd))
    paths = [str(cwd), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)


def pytest_arguments(args: list[str], cwd: Path) -> list[str]:
    """pytest's arguments for `gemmconf run ARGS` started in `cwd`: rooted at the suite folder
    (node ids relative to it), configured by gemmconf's run.ini, with pytest's cache in `cwd`;
    the whole suite unless ARGS name suite files."""
    suites = _given_suites(args, cwd) or _default_suites()
    if not suites.is_dir():
        raise FileNotFoundError(f"--suites: no such folder: {suites}")
    command: list[str] = []
    if not any(a.split("=")[0] in _CONFIG_OPTIONS for a in args):
        command += ["-c", str(RUN_INI), "--rootdir", str(suites)]
        command += ["-o", f"cache_dir={cwd / '.pytest_cache'}"]
    if _given_suites(args, cwd) is None:
        command += ["--suites", str(suites)]
    files = [
        None
        if index and args[index - 1] in (*_PATH_OPTIONS, *_VALUE_OPTIONS)
        else _suite_file(arg, suites, cwd, bare=not (index and args[index - 1].startswith("-")))
        for index, arg in enumerate(args)
    ]
    command += [file or arg for file, arg in zip(files, args, strict=True)]
    if not any(files):
        command.append(str(suites))
    return command


def _given_suites(args: list[str], cwd: Path) -> Path | None:
    for index, arg in enumerate(args):
        for name in ("--suites", "--gemmconf-suites"):
            if arg == name and index + 1 < len(args):
                return (cwd / args[index + 1]).resolve()
            if arg.startswith(name + "="):
                return (cwd / arg.split("=", 1)[1]).resolve()
    return None


def _default_suites() -> Path:
    from gemmconf import bundled_suites

    return bundled_suites()


def _suite_file(arg: str, suites: Path, cwd: Path, bare: bool = False) -> str | None:
    """`arg` as a path in the suite (with its `::` part) when it names one: a suite file or a
    folder of the suite, relative to the current folder or to the suite folder (as node ids
    and `gemmconf list` name them: `dense/first.yaml`, `epilogue`). Option values
    (`--expectations x.yaml`, `-m epilogue`) are not looked at (`pytest_arguments`). A
    path-like argument (a `/` in it, or a .yaml name) that is found neither here nor in the
    suite is an error naming both places, where pytest would say "no tests ran"; so is a
    `bare` word (one no option precedes, which could be that option's value) found in neither
    place: with xdist, pytest said "no tests ran" and nothing else. A suite's id (`first`)
    is not a path: the error names its file."""
    path, _, rest = arg.partition("::")
    if arg.startswith("-"):
        return None
    root = suites.resolve()
    here = (cwd / path).resolve()
    if here.exists() and here != root and root not in here.parents:
        return None  # a path of the current folder outside the suite: pytest's to read
    for candidate in (cwd / path, suites / path):
        found = candidate.resolve()
        inside = root in found.parents  # the suite folder itself is the default anyway
        if not inside or "expectations" in found.relative_to(root).parts:
            continue
        if (found.is_file() and found.suffix in (".yaml", ".yml")) or found.is_dir():
            return str(candidate) + (f"::{rest}" if rest else "")
    path_like = "/" in path or path.endswith((".yaml", ".yml"))
    if (path_like or bare) and not (cwd / path).exists():
        raise FileNotFoundError(
            f"{path}: no such suite file or folder here ({cwd}) or in the suite ({suites})"
            + _suite_id_hint(path, suites)
        )
    return None


def _suite_id_hint(name: str, suites: Path) -> str:
    """Where `name` is a suite's id (`suite: first` in dense/first.yaml), what to give instead."""
    import yaml

    from gemmconf.scenario import discover, load_yaml
    from gemmconf.scenario.expansion import suite_id

    for file in discover([suites], suites):
        try:
            document = load_yaml(file.read_text(errors="replace"))
        except yaml.YAMLError:
            continue  # a broken file is the run's to report
        if isinstance(document, Mapping) and suite_id(document, file) == name:
            where = file.relative_to(suites).as_posix()
            return f"; {name!r} is the id of the suite in {where}: run `gemmconf run {where}`"
    folders = sorted(p.name for p in suites.iterdir() if p.is_dir() and p.name != "expectations")
    return f"; the suite's folders: {', '.join(folders)}"


def _new_backend(name: str, where: Path) -> int:
    from gemmconf import newbackend

    try:
        folder = newbackend.write(name, where)
    except (ValueError, FileExistsError) as exc:
        print(f"gemmconf new-backend: error: {exc}", file=sys.stderr)
        return 2
    print(f"gemmconf: wrote {folder}; next: pip install -e {folder}")
    print(f"  then: gemmconf run --backend {name} -m cpu")
    return 0


def _suites_arg(suites: str | None) -> Path:
    if suites is not None:
        return Path(suites)
    return _default_suites()


def _bench(args: argparse.Namespace) -> int:
    suites = _suites_arg(args.suites).resolve()
    command = [
        *(args.paths or [str(suites / "bench")]),
        "--suites",
        str(suites),
        "--backend",
        args.backend,
        "--benchmark",
        "--bench-mode",
        args.bench_mode,
        "--results",
        args.results,
        "-p",
        "no:xdist",
        "-q",
    ]
    if args.keyword:
        command += ["-k", args.keyword]
    return run_suite(command)


# Template families of inductor-max-autotune listed with their own availability (each needs
# different things: a GPU and Triton, a CUTLASS checkout and nvcc, nothing, items on the CPU).
_INDUCTOR_VARIANTS = ("TRITON", "CUTLASS", "ATEN", "CPP")


def _backends() -> int:
    from gemmconf.backends import known_backends, resolve

    def availability(spec: str) -> str:
        try:
            return resolve(spec).availability() or "available"
        except Exception as exc:
            return f"cannot load: {exc}"

    for info in known_backends():
        if info.name == "dynamo":  # a torch.compile backend by its registered name
            from gemmconf.backends.dynamo import registered_backends

            print(f"{'dynamo:NAME':<26} {info.origin:<28} NAME: {', '.join(registered_backends())}")
            continue
        print(f"{info.name:<26} {info.origin:<28} {availability(info.name)}")
        if info.name == "inductor-max-autotune":
            for variant in _INDUCTOR_VARIANTS:
                spec = f"{info.name}:{variant}"
                print(f"  {spec:<32} {'':<20} {availability(spec)}")
    print(
        "\nAlso: reference:autotune[,persistent=auto|always|never][,cudagraphs][,ws], "
        "inductor-max-autotune:TRITON|CUTLASS|ATEN|CPP[,...], dynamo:NAME[,mode=...][,key=value], "
        "or package.module:attr"
    )
    return 0


def _instances(
    suites: str | None,
    max_items: int | None = None,
    max_elements: int | None = None,
    wanted: str | None = None,
):
    """The suite's instances, file by file. With `wanted` (an id or node id, as `_find` takes),
    only the files whose stored facts (`scenario.facts`, kept by every run) hold an id it may
    name are expanded: `explain` and `repro` of one item read one file of the suite's 27."""
    from gemmconf.backends.cache import cache_dir
    from gemmconf.scenario import MAX_ELEMENTS, MAX_INSTANCES, ScenarioError, discover, load_suite
    from gemmconf.scenario.facts import CACHE_NAME, suite_facts

    root = Path.cwd()
    folder = _suites_arg(suites)
    if not folder.is_dir():
        print(f"gemmconf: --suites {folder}: no such folder", file=sys.stderr)
        raise SystemExit(2)
    limits = (max_items or MAX_INSTANCES, max_elements or MAX_ELEMENTS)

    loaded: dict[Path, list[Any]] = {}  # a file the facts were not stored for is read once

    def load(path: Path) -> list[Any]:
        if path not in loaded:
            loaded[path] = load_suite(
                path, root=root, max_instances=limits[0], max_elements=limits[1]
            )
        return loaded[path]

    try:
        for path in discover([folder], root):
            if wanted is not None:
                ids = suite_facts([path], load, limits=limits, cache=cache_dir(CACHE_NAME))
                if not any(_may_name(wanted, fact.id) for fact in ids):
                    loaded.pop(path, None)
                    continue
            yield from load(path)
            loaded.pop(path, None)
    except ScenarioError as exc:
        print(f"gemmconf: invalid suite file: {exc}", file=sys.stderr)
        raise SystemExit(4) from None


def _may_name(wanted: str, instance_id: str) -> bool:
    """Whether `wanted` may name the instance of this id (`_find` decides which one it does)."""
    if instance_id == wanted:
        return True
    if "::" not in wanted and "@" not in wanted:
        return False
    name = wanted.rpartition("::")[2]
    if "@" in name:
        name = name[: name.rindex("@")] + "]"
    return instance_id.partition("/")[2] == name.removesuffix("[]")


def _find(instances: Any, wanted: str) -> Any:
    """The instance `wanted` names: its id (`dense/first[...]`), or the node id a run printed
    (`suites/dense/first.yaml::mm[...@backend]`, the file's path from the suites folder or the
    checkout, or its part after `::` where one suite alone has it); None where none does."""
    instances = list(instances)
    match = next((i for i in instances if i.id == wanted), None)
    if match is not None or ("::" not in wanted and "@" not in wanted):
        return match
    file = wanted.rpartition("::")[0]
    found = [
        i
        for i in instances
        if _may_name(wanted, i.id)
        and (not file or f"/{i.source.rpartition(':')[0]}".endswith(f"/{file}"))
    ]
    return found[0] if len(found) == 1 else None  # a bare name in two suites names neither


def _list(
    suites: str | None,
    pattern: str,
    max_items: int | None = None,
    markers: str | None = None,
    max_elements: int | None = None,
) -> int:
    from gemmconf.scenario import implied_markers

    regex = compile_pattern(pattern)
    selected = _marker_expression(markers)
    if isinstance(selected, str):
        print(selected, file=sys.stderr)
        return 2
    count = 0
    for instance in _instances(suites, max_items, max_elements):
        if not regex.fullmatch(instance.id):
            continue
        names = set(implied_markers(instance))
        if selected is None or selected.evaluate(lambda name, names=names, **_: name in names):
            print(instance.id)
            count += 1
    print(f"{count} instances", file=sys.stderr)
    if not count and not set(pattern) & {"*", "?"}:
        print(_WHOLE_IDS.format(pattern=pattern), file=sys.stderr)
    return 0 if count else 1


# `gemmconf list dense` (a folder `gemmconf run` takes) listed nothing and said only "0 instances"
_WHOLE_IDS = (
    "gemmconf list: the pattern {pattern!r} names whole instance ids such as "
    "first/mm[fp32-64x64x64-nn] (the file's suite name, the scenario, its axes); "
    "'{pattern}*' lists the ids that start so. `gemmconf run` takes the suite's folders and "
    "files (`gemmconf run dense`), `gemmconf list` ids."
)


def _marker_expression(text: str | None) -> Any:
    """pytest's -m expression (the items' markers are the instances' `implied_markers`), None
    when not given, or the error's message naming the option."""
    if text is None:
        return None
    from _pytest.mark.expression import Expression  # what `pytest -m` reads

    try:
        return Expression.compile(text)
    except Exception as exc:  # ParseError in pytest 8, SyntaxError in 9
        return f"gemmconf list -m {text!r}: {exc}"


def _config_lines(instance: Any) -> list[str]:
    """The config patches the scenario's seed compiled under, and which backends apply them."""
    return [
        f"  {field} ({applied_by}) {dict(config)}"
        for field, applied_by, config in (
            ("inductor_config", "inductor backends only", instance.inductor_config),
            ("dynamo_config", "torch.compile-based backends", instance.dynamo_config),
        )
        if config
    ]


def _explain(args: argparse.Namespace) -> int:
    from gemmconf import inputs
    from gemmconf.checks import compile_budget
    from gemmconf.ids import standalone_command
    from gemmconf.scenario import implied_markers

    instances = _instances(args.suites, args.max_items, args.max_elements, wanted=args.id)
    match = _find(instances, args.id)
    if match is None:
        print(
            f"gemmconf: no instance {args.id!r} (try `gemmconf list '*pattern*'`)", file=sys.stderr
        )
        return 2
    i = match
    print(f"{i.id}  ({i.source})")
    if i.doc:
        print(f"  {i.doc}")
    if i.seed_test:
        print(f"  ported from: {i.seed_test}")
    print(f"  op {i.op}, dtype {i.dtype}, axes {dict(i.axes)}")
    for operand in i.operands:
        print(
            f"  operand {operand.name}: shape {list(operand.shape)} {operand.dtype} "
            f"layout {operand.layout}"
        )
    if i.bias:
        print(f"  bias {list(i.bias)} alpha {i.alpha:g} beta {i.beta:g}")
    if i.epilogue:
        print(f"  epilogue {[e.kind if e.arg is None else {e.kind: e.arg} for e in i.epilogue]}")
    if i.scaling:
        print(
            f"  fp8 scaling {i.scaling}, use_fast_accum {i.use_fast_accum}, out_dtype {i.out_dtype}"
        )
    print(
        f"  compile {i.compile.mode} over {len(i.shape_sets)} shape set(s), "
        f"at most {compile_budget(i)} compile(s)"
    )
    for line in _config_lines(i):
        print(line)
    for index in range(len(i.shape_sets)):
        built = inputs.build(i, index, args.seed)
        print(f"  shape set {index}: {built.describe()} (seed {built.seed})")
    print(f"  markers: {', '.join(implied_markers(i))}")
    if i.checks.raises:
        print(f"  expects: {i.checks.raises} from eager and the backend")
    for block in i.checks.filecheck:
        print(f"  filecheck {block.artifact} target {block.target or 'any'} ({block.source})")
    from gemmconf.backends import UnknownBackendError, record_name, resolve

    if str(Path.cwd()) not in sys.path:  # as under `gemmconf run`: my_gemm:MyGemm from here
        sys.path.insert(0, str(Path.cwd()))
    try:
        backend = resolve(args.backend)
    except UnknownBackendError as exc:
        print(f"gemmconf explain: --backend: {exc}{_recorded_spec(args.backend)}", file=sys.stderr)
        return 2
    print(f"  run: {_run_command(i, args, record_name(args.backend, backend))}")
    print(f"  standalone repro: {standalone_command(i.id, args.backend, seed=args.seed)}")
    if args.run:
        return _run_one(i, args, backend)
    return 0


RESULTS = Path("reports") / "results.json"  # where `gemmconf run` writes them, by default


def _recorded_spec(name: str) -> str:
    """Where `name` is the name a run in this folder recorded for a backend given by another
    spec (`my_tvm:backend` records as its `name`), a sentence naming that spec; else ''."""
    from gemmconf.report import results

    try:
        specs = results.read(RESULTS).get("backend_specs") or {}
    except Exception:  # no run here, or a file that says nothing usable: no hint
        return ""
    spec = specs.get(name) if isinstance(specs, dict) else None
    if not isinstance(spec, str) or spec == name:
        return ""
    return f"\n{name!r} is the name {RESULTS} records for --backend {spec}: pass --backend {spec}"


def _repro(args: argparse.Namespace) -> int:
    """`gemmconf repro ID --backend X`: the item's standalone repro file (gemmconf.repro)."""
    import re
    from importlib import metadata

    from gemmconf import capability
    from gemmconf.backends import UnknownBackendError
    from gemmconf.repro import ReproUnsupported, repro_source

    instances = _instances(args.suites, args.max_items, args.max_elements, wanted=args.id)
    instance = _find(instances, args.id)
    if instance is None:
        print(
            f"gemmconf repro: no instance {args.id!r} (try `gemmconf list '*pattern*'`)",
            file=sys.stderr,
        )
        return 2
    if str(Path.cwd()) not in sys.path:  # as under `gemmconf run`: my_gemm:MyGemm from here
        sys.path.insert(0, str(Path.cwd()))
    device = capability.item_device(instance.requires, capability.detect().device)
    try:
        version = metadata.version("gemmconf")
    except metadata.PackageNotFoundError:
        version = ""
    try:
        source = repro_source(
            instance, args.backend, seed=args.seed, device=device, gemmconf_version=version
        )
    except UnknownBackendError as exc:
        print(f"gemmconf repro: --backend: {exc}{_recorded_spec(args.backend)}", file=sys.stderr)
        return 2
    except ReproUnsupported as exc:
        print(f"gemmconf repro: {exc}", file=sys.stderr)
        return 2
    if args.output == "-":
        sys.stdout.write(source)
        return 0
    slug = re.sub(r"[^A-Za-z0-9]+", "_", f"{args.id}_{args.backend}").strip("_")
    out = Path(args.output or f"repro_{slug}.py")
    out.write_text(source)
    print(
        f"gemmconf: wrote {out} ({len(source.splitlines())} lines); "
        f"run it: {_run_it(out, args.backend)}"
    )
    return 0


def _run_it(out: Path, spec: str) -> str:
    """The command that runs a repro file: `python FILE`, with this folder on PYTHONPATH where
    the backend is a `module:attr` whose module lives here and the file is written elsewhere
    (Python puts the file's folder on the path, not the current one: the onnxrt trial's TVM
    fallback, 2026-11-30, wrote one with `-o` and its import of the module failed)."""
    import importlib.util
    import shlex

    module = spec.partition(":")[0] if ":" in spec else ""
    here = Path.cwd().resolve()
    try:
        found = importlib.util.find_spec(module) if module else None
    except (ImportError, ValueError):
        found = None
    origin = Path(found.origin).resolve() if found and found.origin else None
    if origin is None or here not in origin.parents or out.resolve().parent == here:
        return f"python {shlex.quote(str(out))}"
    return f"PYTHONPATH={shlex.quote(str(here))} python {shlex.quote(str(out))}"


def _run_command(instance, args: argparse.Namespace, label: str) -> str:
    """The command that runs this one item (`gemmconf.ids.reproduce_command`)."""
    from gemmconf.ids import reproduce_command

    return reproduce_command(
        Path(instance.source.rsplit(":", 1)[0]),
        instance.id,
        label,
        ["--backend", args.backend, "--seed", str(args.seed)],
        suites=_suites_arg(args.suites),
        explicit_suites=args.suites is not None,
        cwd=Path.cwd(),
    )


def _run_one(instance, args: argparse.Namespace, backend) -> int:
    from gemmconf.attribution import NOT_EAGER_BITS, computed_text, not_eager_bits
    from gemmconf.capability import detect, target_class
    from gemmconf.outcome import render
    from gemmconf.runner import run_item

    cap = detect()
    reason = backend.availability()
    if reason:
        print(f"  not run: backend {args.backend} unavailable: {reason}")
        return 1
    target = target_class(cap, None)
    if args.no_isolate:
        outcome = run_item(instance, backend, seed=args.seed, device=cap.device, target=target)
    else:
        outcome = _run_isolated(instance, args, backend, cap.device, target)
    if outcome.passed:
        print(f"  verdict: PASSED{_why_passed(outcome)}")
        for note in outcome.notes:  # a shape set left undecided at the bar: borderline
            print(
                "\n".join(textwrap.wrap(note, 96, initial_indent="    ", subsequent_indent="    "))
            )
        changed = not_eager_bits(outcome.computed_by, outcome.metrics.get("eager_bits"))
        print(
            f"  computed {computed_text(outcome.computed_by)}" + (NOT_EAGER_BITS if changed else "")
        )
        return 0
    verdict = "ERROR" if outcome.harness_error else "FAILED"
    print(f"  verdict: {verdict} ({outcome.kind})")
    print("\n".join("    " + line for line in render(outcome).details.splitlines()))
    if outcome.computed_by is not None:  # whose kernels computed the failing call, by name
        kernels = outcome.metrics.get("aten_gemm_kernels") or {}
        named = ", ".join(f"{op} x{n}" for op, n in sorted(kernels.items()))
        print(
            f"  computed {computed_text(outcome.computed_by)}"
            + (f"; aten's GEMM kernels that ran: {named}" if named else "")
        )
    return 1


def _run_isolated(instance, args: argparse.Namespace, backend, device: str, target: str | None):
    """The item in one isolation worker, as `gemmconf run` runs it (its timeout, with the
    backend's extra seconds per compile; a crash or a lost CUDA context the outcome): a backend
    that segfaults ends the worker, not explain."""
    from gemmconf import isolation
    from gemmconf.backends import RunOptions
    from gemmconf.backends.base import compile_allowance, for_item
    from gemmconf.ids import standalone_command
    from gemmconf.outcome import ItemOutcome

    runner = isolation.IsolatedRunner(
        {args.backend: args.backend}, RunOptions(device=device), warm_cuda=device == "cuda"
    )
    request = isolation.ItemRequest(
        instance,
        args.backend,
        seed=args.seed,
        device=device,
        target=target,
        repro=standalone_command(instance.id, args.backend, seed=args.seed),
        compile_s=compile_allowance(for_item(backend, instance)),
    )
    try:
        return runner.run(request)
    except isolation.WorkerError as exc:
        return ItemOutcome.harness("the isolation worker", exc)
    finally:
        runner.close()


def _why_passed(outcome) -> str:
    """What a pass rests on: the exception an error scenario wanted, or the numbers."""
    if outcome.raised is not None:  # an error scenario: the backend raised what eager raises
        return f" (the backend raised {outcome.raised.short()}, as eager does)"
    metrics = outcome.metrics
    if metrics.get("err_ratio") is not None and metrics.get("max_abs_err") is not None:
        bar = metrics.get("max_ratio")
        against = "" if bar is None else f" against a bar of {bar:.3g}"
        borderline = "borderline: " if metrics.get("borderline") else ""
        return (
            f" ({borderline}err_ratio {metrics['err_ratio']:.3g}{against}: the backend's error "
            f"against fp64 over the allowance; largest absolute error {metrics['max_abs_err']:.3g})"
        )
    return ""


if __name__ == "__main__":
    raise SystemExit(main())
