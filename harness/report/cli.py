"""`gemmconf report merge|html|matrix|diff|ab|csv|groups`: join, render, compare, export and
triage results files.

Exit codes: 0 done; 1 `diff` found outcome regressions; 2 bad input (a file that is not a
gemmconf results file, truncated, not UTF-8, of another version, inputs that cannot be
merged, or `ab` files that are not alternating runs of two trees on one machine), with a message
naming the file and what is wrong; 3 `diff --fail-on-regression` found benchmark regressions
(items slower beyond the noise) and no outcome regression, or `ab` called an item or a geomean
slower.

`add_subcommands(commands)` adds `report` to the `gemmconf` parser; `run(args)` runs it. The
module also runs alone: `python -m gemmconf.report.cli merge A.json B.json -o merged.json`.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from typing import Any

from gemmconf.record import Record
from gemmconf.report import diff as diff_mod
from gemmconf.report import merge as merge_mod
from gemmconf.report import paired, perf
from gemmconf.report.quoting import csv_cell, terminal
from gemmconf.report.results import ResultsError

OK, REGRESSED, BAD_INPUT, SLOWER = 0, 1, 2, 3

MERGE_HELP = """\
Join results files (shards of one run, runs of several backends, runs on several machines) into
one results file. Items are identified by (id, backend, device name): one item on two machines
stays two records. The same item in two files is an error (a shard ran twice, a file given
twice) unless --later-wins, where the file named later replaces the earlier record. Files from
different suite versions (their top-level suite_version, a hash of the suite files) are refused
unless --allow-mixed. The items skipped on every machine of the merge (tested nowhere) are
listed, and kept in the merged file's never_ran. Shards (--shard i/n) of one split merged
without all of them, or shards of different splits, are warned of."""

DIFF_HELP = """\
Compare two results files item by item, matched by (id, backend), or by (id, backend, device)
when a file holds one item on several devices. Regressions: items failing now (failed, error,
xpassed) that were not before, including new items that fail. Progressions: items failing before
that pass now. Items of OLD that NEW lacks (a narrower selection, a shard, a run cut short) are
not compared and fail nothing: a note names them (--json: removed_ids). Closest passes: of the
items that passed in both runs with an error above eager's own (err_ratio > 1) in either run, the
ten nearest their bar (err_ratio against max_ratio; --json: closest_passes). Benchmark figures of
items timed in both runs (--benchmark): slower or faster
when the figure moved beyond the noise, k times the combined standard error of the two medians
(from each item's recorded spread and repetitions) and k times either run's relative spread of
one repetition (what moves between processes), and more than the minimum relative change.
Runs that share no backend are an error, naming both sides' backends: --as NAME compares two
runs of one backend each under one name (two configurations of a backend, run under two names).
Changes between an expected and an unexpected outcome (failed <-> xfailed, an xpass) are counted
in a note: --without-expectations compares each item's own result (xfailed as failed, xpassed as
passed), for runs judged under different expectations files.
One run of each side cannot see a 5% change at the power limit: `report ab` compares
alternating runs of two trees. Exit status: 0 no regression; 1 outcome regressions; 2
unreadable input or no backend in common; 3 with --fail-on-regression, benchmark regressions
(slower items) and no outcome regression."""


CSV_HELP = """\
Write RESULTS.json as CSV, one row per record: id, backend, device, outcome, kind, reason, the
scenario's fields (suite, scenario, op, dtype, shape, markers and axes, both `;`-joined), the
metrics (err_ratio, max_abs_err, max_rel_err, recompiles, time_ms, tflops, vs_cublas),
duration_s, source and nodeid, then max_ratio (the bar err_ratio was held to), draws,
draws_failed, computed_by, inherited and host_memory_peak_bytes (columns added later go last).
A killed run's .partial file is read too."""

CSV_METRICS = (
    "err_ratio",
    "max_abs_err",
    "max_rel_err",
    "recompiles",
    "time_ms",
    "tflops",
    "vs_cublas",
)
# metrics added after the first columns were fixed: at the end, so that no column moves
CSV_LATER_METRICS = ("max_ratio", "draws", "draws_failed")
CSV_LAST_METRICS = ("host_memory_peak_bytes",)  # after computed_by and inherited, for the same
CSV_COLUMNS = (
    "id",
    "backend",
    "device",
    "outcome",
    "kind",
    "reason",
    "suite",
    "scenario",
    "op",
    "dtype",
    "shape",
    "markers",
    "axes",
    *CSV_METRICS,
    "duration_s",
    "source",
    "nodeid",
    *CSV_LATER_METRICS,
    "computed_by",  # who computed the GEMM, and whose failure it is (gemmconf.attribution)
    "inherited",
    *CSV_LAST_METRICS,
)


def _metric_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """`--metric`: which benchmark figure `report diff` and `report ab` compare."""
    parser.add_argument("--metric", choices=sorted(perf.COMPARED), default="vs_cublas", help=help)


def add_subcommands(commands: Any) -> argparse.ArgumentParser:
    """Add `report` with its subcommands to an argparse subparsers object."""
    report = commands.add_parser(
        "report",
        help="merge, render and compare results files",
        description=__doc__.split("\n\n")[0],
    )
    actions = report.add_subparsers(dest="report_command", required=True)

    _add_merge(actions)
    _add_html(actions)
    _add_matrix(actions)
    _add_csv(actions)
    _add_diff(actions)
    _add_ab(actions)
    _add_groups(actions)
    return report


def _add_groups(actions: Any) -> None:
    """`report groups`: a results file's failures by cause, every group."""
    groups = actions.add_parser(
        "groups",
        help="a results file's failures grouped by cause, each with its repro",
        description="The failures of a results file (a run's or a merge's) grouped by cause, "
        "largest first, the backend's own before those inherited from eager or torch.compile: "
        "each group's cause, what its items share, and the command that writes its smallest "
        "item's standalone repro. The run's end prints the first 8; this prints them all.",
    )
    groups.add_argument("results", metavar="RESULTS.json")
    groups.add_argument(
        "--limit", type=int, default=None, metavar="N", help="the first N groups (default: all)"
    )
    groups.add_argument("--json", action="store_true", help="the groups as JSON")


def _add_merge(actions: Any) -> None:
    """`report merge`: join results files into one."""
    merge = actions.add_parser("merge", help="join results files into one", description=MERGE_HELP)
    merge.add_argument("inputs", nargs="+", metavar="RESULTS.json")
    merge.add_argument("-o", "--output", required=True, metavar="MERGED.json")
    merge.add_argument(
        "--allow-mixed", action="store_true", help="merge results of different suite versions"
    )
    merge.add_argument(
        "--later-wins",
        action="store_true",
        help="an item in several files: keep the record of the file named last",
    )


def _add_html(actions: Any) -> None:
    """`report html`: the self-contained conformance page."""
    html = actions.add_parser(
        "html",
        help="render the self-contained conformance page",
        description="Render RESULTS.json as one self-contained HTML page "
        "(matrix, filters, details, plots; no network needed to view).",
    )
    html.add_argument("results", metavar="RESULTS.json")
    html.add_argument(
        "-o",
        "--output",
        default="reports/conformance.html",
        metavar="PAGE.html",
        help="where to write the page (default: reports/conformance.html)",
    )
    html.add_argument(
        "--baseline",
        metavar="OLD.json",
        default=None,
        help="an earlier results file: the page lists the regressions against it",
    )
    html.add_argument(
        "--count-inherited",
        action="store_true",
        help="count failures inherited from eager or torch.compile among the backends' own "
        "(by default they are counted apart)",
    )


MATRIX_HELP = """\
Render many results files (backends, machines, days) as one self-contained HTML page: one row per
suite family (the suite file, e.g. dense/first), one column per backend on a machine, grouped by
hardware class (cpu, sm80, ..., sm120). Each cell counts the backend's own passes, passes PyTorch
computed for it, passes whose computer the file does not record, its own failures, failures
inherited from eager or torch.compile, expected failures, harness errors and skips; its failures
link to their items, each with its reason and repro commands. The header lists each file's
backends, machine, versions (torch, triton, CUDA and any other the run recorded), date, commit
and suite version. Shards of one run add up in one column; the same item twice in one column
(two runs of one backend on one machine) is an error unless --later-wins."""


def _add_matrix(actions: Any) -> None:
    """`report matrix`: families x (backend, hardware class) over many results files."""
    matrix = actions.add_parser(
        "matrix",
        help="one page of many runs: suite families x backends x hardware classes",
        description=MATRIX_HELP,
    )
    matrix.add_argument("inputs", nargs="+", metavar="RESULTS.json")
    matrix.add_argument(
        "-o",
        "--output",
        default="reports/matrix.html",
        metavar="PAGE.html",
        help="where to write the page (default: reports/matrix.html)",
    )
    matrix.add_argument(
        "--later-wins",
        action="store_true",
        help="an item in several files of one column: keep the record of the file named last",
    )
    matrix.add_argument("--title", default="", help="the page's title (default: gemmconf matrix)")


def _add_csv(actions: Any) -> None:
    """`report csv`: one row per record."""
    table = actions.add_parser(
        "csv",
        help="one row per record, for spreadsheets and dataframes",
        description=CSV_HELP,
    )
    table.add_argument("results", metavar="RESULTS.json")
    table.add_argument(
        "-o", "--output", default=None, metavar="OUT.csv", help="where to write (default: stdout)"
    )


def _add_diff(actions: Any) -> None:
    """`report diff`: regressions and progressions between two runs."""
    compare = actions.add_parser(
        "diff", help="regressions and progressions between two runs", description=DIFF_HELP
    )
    compare.add_argument("old", metavar="OLD.json")
    compare.add_argument("new", metavar="NEW.json")
    compare.add_argument("--json", action="store_true", help="print the changes as JSON")
    compare.add_argument(
        "--as",
        dest="as_name",
        default=None,
        metavar="NAME",
        help="compare two runs of one backend each under one name NAME, whatever their "
        "backends are called (two configurations of one backend: dynamo:inductor against "
        "my_gemm:Tuned); without it, runs that share no backend are an error",
    )
    compare.add_argument(
        "--without-expectations",
        action="store_true",
        help="compare each item's own result, the expectations files set aside: an xfailed "
        "record counts as failed, an xpassed one as passed (runs judged under different "
        "expectations, a fix that also edited its file)",
    )
    compare.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 3 when a benchmarked item got slower beyond the noise (outcome regressions "
        "exit 1 with or without it)",
    )
    _metric_argument(
        compare,
        "benchmark figure to compare: vs_cublas (default: the ratio to cuBLAS in the same run, "
        "which cancels most drift between machines and days) or time_ms",
    )
    compare.add_argument(
        "--noise-k",
        type=float,
        default=perf.NOISE_K,
        metavar="K",
        help=(
            "a change must exceed K x the combined standard error and K x either run's "
            f"relative spread of one repetition (default {perf.NOISE_K:g})"
        ),
    )
    compare.add_argument(
        "--min-change",
        type=float,
        default=perf.MIN_CHANGE,
        metavar="FRACTION",
        help="and this fraction of the old value (default "
        f"{perf.MIN_CHANGE:g}: run-to-run drift the repetitions cannot see)",
    )


AB_HELP = """\
A/B of two trees from benchmark runs that alternated on one machine: A1 B1 A2 B2 ..., given in
the order they ran (each a results file of `pytest suites/bench --benchmark`, one tree installed
per run). Per item, the log of its speed in every run is fitted as level + B's effect + a linear
drift over the runs (which cancels a machine that slows or speeds up during the call), and B's
speed over A's gets a Student-t interval from the runs' scatter around the fit. An item is
called slower or faster when its interval excludes 1 and the change is at least --min-effect;
the items' intervals hold together at --confidence (each at 1 - (1 - confidence) / items), so
that at most 1 - confidence of runs of pure noise call an item. Per backend, the geomean over
the items timed in every run is fitted the same way. Checked: at least 4 files; one machine and
software stack (the files' environment); one --bench-mode; the same items; the runs finished in
the order given; where the files record gemmconf's code hash or commit, that A's files ran one
tree and B's one tree (the same one is noted as an A/A run, which measures the noise). Exit
status: 0 nothing called slower; 2 bad input (named); 3 an item or a geomean called slower."""


def _add_ab(actions: Any) -> None:
    """`report ab`: a paired A/B of alternating runs of two trees."""
    ab = actions.add_parser(
        "ab", help="A/B of two trees from alternating benchmark runs", description=AB_HELP
    )
    ab.add_argument("runs", nargs="+", metavar="RESULTS.json", help="A1 B1 A2 B2 ... in run order")
    ab.add_argument("--json", action="store_true", help="print the A/B as JSON")
    _metric_argument(
        ab,
        "the figure compared: vs_cublas (default: the ratio to cuBLAS timed in the same run) or "
        "time_ms (inverted, so that B/A is still a speed ratio)",
    )
    for flag, default, metavar, text in (
        ("--min-effect", paired.MIN_EFFECT, "FRACTION", "the smallest change called"),
        ("--confidence", paired.CONFIDENCE, "P", "of all the items' intervals together"),
    ):
        ab.add_argument(
            flag, type=float, default=default, metavar=metavar, help=f"{text} (default {default:g})"
        )


def run(args: argparse.Namespace) -> int:
    try:
        if args.report_command == "merge":
            return _merge(args)
        if args.report_command == "html":
            from gemmconf.report import page  # jinja2: only when a page is asked for

            out = page.write_page(
                args.results,
                args.output,
                baseline=args.baseline,
                count_inherited=args.count_inherited,
            )
            print(f"gemmconf: wrote {out}")
            return OK
        if args.report_command == "matrix":
            from gemmconf.report import matrix  # jinja2: only when a page is asked for

            out, built = matrix.write_page(
                args.inputs, args.output, later_wins=args.later_wins, title=args.title
            )
            print(
                f"gemmconf: wrote {out}: {len(built.families)} families x "
                f"{len(built.columns)} columns from {len(built.runs)} results files"
            )
            return OK
        if args.report_command == "csv":
            return _csv(args)
        if args.report_command == "ab":
            return _ab(args)
        if args.report_command == "groups":
            return _groups(args)
        return _diff(args)
    except (
        ResultsError,
        merge_mod.MergeError,
        diff_mod.NoCommonBackend,
        paired.PairedError,
    ) as exc:
        message = terminal(str(exc))  # it may quote the file's ids
        print(f"gemmconf report {args.report_command}: error: {message}", file=sys.stderr)
        return BAD_INPUT


def _merge(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    command = shlex.join(["gemmconf", "report", "merge", *args.inputs, "-o", args.output])
    document = merge_mod.merge_files(
        args.inputs,
        allow_mixed=args.allow_mixed,
        later_wins=args.later_wins,
        command=command,
        warnings=warnings,
    )
    for warning in warnings:
        print(f"gemmconf report merge: warning: {terminal(warning)}", file=sys.stderr)
    out = merge_mod.write(document, args.output)
    counts = ", ".join(f"{n} {k}" for k, n in document["counts"].items() if n)
    print(
        f"gemmconf: merged {len(args.inputs)} files into {out}: "
        f"{len(document['records'])} records ({counts})"
    )
    for line in never_ran_lines(document["never_ran"], out):
        print(terminal(line))
    return OK


# the first few, then a count: a merge of CPU runs lists every GPU code check (a thunder trial,
# 2026-11-30: 142 of them, 20 lines before this)
NEVER_RAN_SHOWN = 5


def never_ran_lines(items: list[dict[str, Any]], path: Any) -> list[str]:
    """The items no machine of the merge ran, one line each (the first `NEVER_RAN_SHOWN`)."""
    if not items:
        return []
    lines = [
        f"gemmconf: {len(items)} item(s) never ran on any machine of the merge (skipped on each):"
    ]
    for item in items[:NEVER_RAN_SHOWN]:
        where = "; ".join(
            f"{s['device'] or 'unknown device'}: {s['reason'] or 'no reason'}"
            for s in item["skipped_on"]
        )
        lines.append(f"  {item['id']} on {item['backend']} ({where})")
    if len(items) > NEVER_RAN_SHOWN:
        lines.append(f"  ... and {len(items) - NEVER_RAN_SHOWN} more (never_ran in {path})")
    return lines


def _csv(args: argparse.Namespace) -> int:
    import csv

    document = merge_mod.load(args.results)
    out = sys.stdout if args.output is None else open(args.output, "w", newline="")  # noqa: SIM115
    try:
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for record in document["records"]:
            writer.writerow(csv_row(record, document))
    finally:
        if out is not sys.stdout:
            out.close()
    if args.output is not None:
        print(f"gemmconf: wrote {len(document['records'])} rows to {args.output}")
    return OK


def csv_row(record: Record, document: dict[str, Any]) -> dict[str, Any]:
    """One CSV row: the record's fields by column name (its JSON), the device and the metrics."""
    fields = record.to_json()
    row = {column: fields.get(column, "") for column in CSV_COLUMNS}
    row["device"] = merge_mod.device_of(record, document)
    row["markers"] = ";".join(record.markers or [])
    row["axes"] = ";".join(f"{k}={v}" for k, v in (record.axes or {}).items())
    metrics = (*CSV_METRICS, *CSV_LATER_METRICS, *CSV_LAST_METRICS)
    row.update({name: record.metric.get(name, "") for name in metrics})
    return {k: "" if v is None else csv_cell(v) for k, v in row.items()}


def _diff(args: argparse.Namespace) -> int:
    old, new = merge_mod.load(args.old), merge_mod.load(args.new)
    if args.as_name:
        old = diff_mod.relabeled(old, args.as_name, file=args.old)
        new = diff_mod.relabeled(new, args.as_name, file=args.new)
    result = diff_mod.diff(
        old,
        new,
        old_name=args.old,
        new_name=args.new,
        metric=args.metric,
        k=args.noise_k,
        min_change=args.min_change,
        expectations=not args.without_expectations,
    )
    width = max(shutil.get_terminal_size((120, 24)).columns, 100)
    _show(args, result, lambda: diff_mod.render(result, width=width))
    if result.regressions:
        return REGRESSED
    return SLOWER if args.fail_on_regression and result.slower else OK


def _show(args: argparse.Namespace, result: Any, lines: Any) -> None:
    """A comparison's result: as JSON with --json, else its rendered lines (`lines()`)."""
    if args.json:
        print(json.dumps(result.as_json(), indent=1))
    else:
        print("\n".join(terminal(line) for line in lines()))


def _groups(args: argparse.Namespace) -> int:
    from gemmconf.report import groups as groups_mod

    document = merge_mod.load(args.results)
    found = groups_mod.group_failures(document["records"])
    specs, seed = document.get("backend_specs") or {}, document.get("seed")
    if args.json:
        print(json.dumps(groups_mod.page_groups(found, specs=specs, seed=seed), indent=1))
        return OK
    limit = len(found) if args.limit is None else max(0, args.limit)
    lines = groups_mod.summary_lines(found, specs=specs, seed=seed, limit=limit)
    print("\n".join(terminal(line) for line in lines) if lines else "gemmconf: no failures")
    return OK


def _ab(args: argparse.Namespace) -> int:
    if not 0 < args.confidence < 1 or args.min_effect < 0:
        raise paired.PairedError("--confidence must lie between 0 and 1, --min-effect be >= 0")
    documents = [merge_mod.load(path) for path in args.runs]
    result = paired.paired_ab(
        args.runs,
        documents,
        metric=args.metric,
        min_effect=args.min_effect,
        confidence=args.confidence,
    )
    _show(args, result, lambda: paired.render(result))
    return SLOWER if result.slower else OK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gemmconf")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["report", *(sys.argv[1:] if argv is None else argv)])
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
