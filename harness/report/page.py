"""reports/conformance.html: one self-contained page rendered from a results file.

The page is one HTML file with its CSS, JavaScript and data inline (no remote assets; it works
offline and as a CI artifact). The server side (this module, jinja2) writes the run's header and
embeds the records as one compact JSON blob; the script in `templates/conformance.js` builds the
scenario x backend matrix, the filters, the detail panel and the SVG plots from that blob, so
8,000 records cost one JSON parse rather than 8,000 DOM rows.

The blob is compact: strings that repeat (backends, ops, reasons, sources, ...) are stored once in
a string table, axes and marker sets in their own tables, each record is an array in the order of
`FIELDS`, floats keep 4 significant digits, and a record's nodeid is left out when it is the one
the script derives from its source, id and backend. Code excerpts are cut to `EXCERPT_CHARS`, and
once `EXCERPT_BUDGET` characters are spent the rest say so (results.json keeps them whole).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import jinja2

from gemmconf import attribution, ids
from gemmconf.record import Record, typed
from gemmconf.report import diff, results, templating
from gemmconf.report.groups import group_failures, page_groups
from gemmconf.report.merge import device_of, load

FIELDS = (
    "id",
    "backend",
    "device",
    "suite",
    "scenario",
    "op",
    "dtype",
    "shape",
    "dims",
    "axes",
    "markers",
    "source",
    "nodeid",
    "outcome",
    "reason",
    "metrics",
    "duration_s",
    "excerpt",
    "skip_class",
    "seed",
    "target_arch",
    "details",
    "kind",
    "flaky",  # true: failed on some runs of --confirm-failures and passed on others
    "fails",  # false on a record that does not fail its run though its outcome can (a
    # non-strict expectation's xpass: results.is_failing); absent otherwise
    "computed_by",  # who computed the GEMM during the backend's call (gemmconf.attribution)
    "inherited",  # a failure inherited from eager or torch.compile
)
EXCERPT_CHARS = 2000
EXCERPT_BUDGET = 1_500_000
REASON_CHARS = 2000
DETAILS_CHARS = 4000  # of a record's details (the results file keeps up to 8,000)
DETAILS_BUDGET = 1_000_000  # all details on one page; past it the page points to the results file


class _Table:
    """Values stored once, referred to by index."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._index: dict[Any, int] = {}

    def ref(self, value: Any) -> int | None:
        if value is None:
            return None
        key = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        if key not in self._index:
            self._index[key] = len(self.values)
            self.values.append(value)
        return self._index[key]


def _finite(value: Any) -> Any:
    """JSON.parse has no Infinity or NaN: those travel as strings the script turns back."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _seed(value: Any) -> int | str | None:
    """A seed as the page's reproduce command may use it: an integer (as its digits past what a
    JavaScript number holds exactly) or nothing (`merge.load` refuses anything else; a page
    rendered from a document as given still gets no other text)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return value if abs(value) < 2**53 else str(value)


def shown_command(command: Any) -> str | None:
    """The run's command as the page's header shows it: split and quoted again word by word, so
    that nothing of it acts on a shell as more than words for one command (a recorded command
    of `pytest x; curl ... | sh` shows as `pytest 'x;' curl ... '|' sh`). It is what the file
    says was run; README's "Bad input" says to read it before running it."""
    if not isinstance(command, str) or not command:
        return None
    try:
        return shlex.join(shlex.split(command))
    except ValueError:  # unbalanced quotes: one word
        return shlex.quote(command)


def backend_specs(document: dict[str, Any]) -> dict[str, str]:
    """The --backend text that selects each backend label, for repro commands.

    Labels are what records name; a label differs from its spec for import-path backends
    (`planted_backends:bias_broadcast_dropped` runs as `bias-broadcast-dropped`). The top-level
    `backend_specs` map says so exactly; without it, a spec is matched to a label by name.
    """
    explicit = dict(document.get("backend_specs") or {})
    specs = [str(s) for s in document.get("backends") or []]
    labels = sorted({r.backend for r in typed(document["records"])})
    found: dict[str, str] = {}
    for label in labels:
        if label in explicit:
            found[label] = explicit[label]
        elif label in specs:
            found[label] = label
        else:
            near = [
                s
                for s in specs
                if _norm(s.rsplit(":", 1)[-1]) == _norm(label) or _norm(label) in _norm(s)
            ]
            found[label] = near[0] if len(near) == 1 else (specs[0] if len(specs) == 1 else label)
    # in the order of the run's --backend list: the page's columns follow it
    order = {spec: i for i, spec in enumerate(specs)}
    return dict(sorted(found.items(), key=lambda kv: (order.get(kv[1], len(order)), kv[0])))


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _derived_nodeid(record: Record) -> str:
    """What conformance.js rebuilds when a record's nodeid is left out (gemmconf.ids.node_id)."""
    return ids.node_id(record.source or "", record.id, record.backend)


@dataclass
class _Budget:
    """Long texts on the page: each cut to `chars` (ending in `cut`, which may say how many
    characters were cut as {more}), all of them together held to `total`, past which each is
    replaced by `left_out`."""

    chars: int
    total: int
    cut: str
    left_out: str
    spent: int = 0

    def fit(self, text: str) -> str:
        if len(text) > self.chars:
            text = text[: self.chars] + self.cut.format(more=len(text) - self.chars)
        if self.spent + len(text) > self.total:
            text = self.left_out
        self.spent += len(text)
        return text


def page_data(document: dict[str, Any], *, name: str = "") -> dict[str, Any]:
    """The JSON blob the page's script reads: run metadata and the compact records."""
    document = {**document, "records": typed(document["records"])}
    strings, axes, markers, excerpts, dims = _Table(), _Table(), _Table(), _Table(), _Table()
    excerpt_budget = _Budget(
        EXCERPT_CHARS,
        EXCERPT_BUDGET,
        "\n... ({more} more characters in the results file)",
        "(excerpt left out to keep the page small; see the results file)",
    )
    details_budget = _Budget(
        DETAILS_CHARS,
        DETAILS_BUDGET,
        " ...",
        "(left out to keep the page small; see the results file)",
    )
    rows = []
    for record in document["records"]:
        excerpt = record.code_excerpt
        excerpt = excerpt_budget.fit(excerpt) if excerpt else None
        reason = record.reason
        if reason is not None and len(reason) > REASON_CHARS:
            reason = reason[:REASON_CHARS] + " ..."
        details = None if record.details is None else details_budget.fit(record.details)
        metrics = None if record.metrics is None else record.metrics.to_json()
        values = {
            "id": strings.ref(record.id),
            "backend": strings.ref(record.backend),
            "device": strings.ref(device_of(record, document)),
            "suite": strings.ref(record.suite),
            "scenario": strings.ref(record.scenario),
            "op": strings.ref(record.op),
            "dtype": strings.ref(record.dtype),
            "shape": strings.ref(record.shape),
            "dims": dims.ref(_finite(record.dims)),
            "axes": axes.ref(_finite(record.axes)),
            "markers": markers.ref(list(record.markers or [])),
            "source": strings.ref(record.source),
            "nodeid": (
                None if record.nodeid == _derived_nodeid(record) else strings.ref(record.nodeid)
            ),
            "outcome": results.OUTCOMES.index(record.outcome),
            "reason": strings.ref(reason),
            "metrics": _finite(metrics) or None,
            "duration_s": _finite(record.duration_s),
            "excerpt": excerpts.ref(excerpt or None),
            "skip_class": strings.ref(record.skip_class),
            "seed": _seed(record.seed),
            "target_arch": strings.ref(record.target_arch),
            "details": strings.ref(details),
            "kind": strings.ref(record.kind),
            "flaky": True if record.metric.flaky is True else None,
            "fails": (
                False
                if record.outcome in results.FAILING and not results.is_failing(record)
                else None
            ),
            "computed_by": strings.ref(record.computed_by),
            "inherited": strings.ref(record.inherited),
        }
        row = [values[f] for f in FIELDS]
        while row and row[-1] is None:  # trailing empties cost bytes at 8,000 records
            row.pop()
        rows.append(row)
    return {
        "name": name,
        "outcomes": list(results.OUTCOMES),
        "failing": list(results.FAILING),
        "kind_counts": results.count_kinds(document["records"]),
        "fields": list(FIELDS),
        "strings": strings.values,
        "axes": axes.values,
        "markers": markers.values,
        "excerpts": excerpts.values,
        "dims": dims.values,
        "rows": rows,
        "run": _run_metadata(document),
    }


def _run_metadata(document: dict[str, Any]) -> dict[str, Any]:
    """The page's `run` entry: how the results were made, and the environments (the run's
    and each record's own, once each)."""
    environments = _Table()
    for environment in [document.get("environment"), *(r.environment for r in document["records"])]:
        environments.ref(environment or None)
    return {
        "command": shown_command(document.get("command")),
        "seed": _seed(document.get("seed")),
        "target_arch": document.get("target_arch"),
        "suite_version": document.get("suite_version"),
        "suite_versions": document.get("suite_versions"),
        "finished": document.get("finished"),
        "complete": document.get("complete"),
        "exit_status": document.get("exit_status"),
        "backends": document.get("backends") or [],
        "backend_specs": backend_specs(document),
        "environments": _finite(environments.values),
        "merged_from": document.get("merged_from"),
    }


BASELINE_ROWS = 50  # regressions listed per kind against a baseline (the diff has them all)
GROUP_IDS = 50  # item ids listed per failure group (the matrix and the results have them all)


def against_baseline(
    baseline: dict[str, Any], document: dict[str, Any], *, baseline_name: str
) -> dict[str, Any]:
    """What the page's header says about a baseline run: counts and the first regressions."""
    result = diff.diff(baseline, document, old_name=baseline_name)
    return {
        "name": baseline_name,
        "metric": result.metric,
        "timed": result.timed,
        "regressions": result.regressions[:BASELINE_ROWS],
        "slower": result.slower[:BASELINE_ROWS],
        "counts": {
            "regressions": len(result.regressions),
            "progressions": len(result.progressions),
            "slower": len(result.slower),
            "faster": len(result.faster),
        },
    }


def render(
    document: dict[str, Any],
    *,
    name: str = "",
    baseline: dict[str, Any] | None = None,
    count_inherited: bool = False,
) -> str:
    """The whole page as one string; `baseline` (from `against_baseline`) adds its section.
    Failures inherited from eager or torch.compile are counted apart from the backends' own
    (gemmconf.attribution), unless `count_inherited`."""
    document = {**document, "records": typed(document["records"])}
    data = page_data(document, name=name)
    run = data["run"]
    records = document["records"]
    counts = results.count(records)
    inherited = attribution.inherited_failures(records)
    own = [r for r in records if count_inherited or not _inherited_failure(r)]
    if not count_inherited:
        counts["failed"] -= sum(inherited.values())
    kind_counts = results.count_kinds(own)
    passes = _passes_by_backend(records)
    environment = document.get("environment") or {}
    devices = sorted({device_of(r, document) for r in document["records"]} - {""})
    groups = page_groups(
        group_failures(document["records"]), specs=run["backend_specs"], seed=document.get("seed")
    )
    template = templating.environment().get_template("conformance.html.j2")
    return template.render(
        groups=groups,
        group_ids=GROUP_IDS,
        title=f"gemmconf conformance{': ' + name if name else ''}",
        name=name,
        run=run,
        counts=counts,
        kind_counts=kind_counts,
        inherited=inherited,
        inherited_text=attribution.INHERITED_TEXT,
        count_inherited=count_inherited,
        passes=passes,
        outcomes=results.OUTCOMES,
        failing=results.FAILING,
        total=len(document["records"]),
        devices=devices or [environment.get("device_name") or "unknown device"],
        environment=environment,
        labels=sorted(run["backend_specs"]),
        baseline=baseline,
        css=templating.stylesheet("conformance.css"),
        script=jinja2.utils.markupsafe.Markup(templating.asset("conformance.js")),
        data=jinja2.utils.markupsafe.Markup(templating.script_json(data)),
    )


def _passes_by_backend(records: list[Record]) -> list[tuple[str, str]]:
    """(backend, "72 passed (72 computed by PyTorch)") for each backend whose records say who
    computed their passes (files written before `computed_by` say nothing)."""
    found = []
    for backend in sorted({r.backend for r in records}):
        own = [r for r in records if r.backend == backend]
        counts = attribution.passes_by_computer(own)
        if any(key in attribution.COMPUTED_BY for key in counts):
            found.append((backend, attribution.passes_text(own)))
    return found


def _inherited_failure(record: Record) -> bool:
    return record.outcome == "failed" and attribution.is_inherited(record)


def page_for_run(
    results_path: Path | None, target: str | None, *, count_inherited: bool = False
) -> str | None:
    """For the plugin at the end of a run: write the page (beside the results unless `target`
    names a path; "none" skips it) and say where in one line. Never raises: a page that cannot
    be written must not fail the run."""
    if results_path is None or (target or "").lower() == "none":
        return None
    out = Path(target) if target else Path(results_path).with_name("conformance.html")
    replaced = _page_of_another_run(out, Path(results_path).name)
    try:
        written = write_page(results_path, out, count_inherited=count_inherited)
        line = f"gemmconf: conformance page in {written}"
    except (results.ResultsError, OSError, jinja2.TemplateError) as exc:
        return f"gemmconf: no conformance page: {exc}"
    if replaced is not None:  # runs with their own --results in one folder share the default
        line += f" (it replaced the page of {replaced}; --conformance-html PATH keeps both)"
    return line


def _page_of_another_run(out: Path, name: str) -> str | None:
    """The results file a page already at `out` was written for, when not `name` (its title
    names it); None when there is none, or it is this run's."""
    try:
        with out.open(encoding="utf-8", errors="replace") as page:
            head = page.read(4096)
    except OSError:
        return None
    found = re.search(r"<title>gemmconf conformance: (.*?)</title>", head)
    if found is None or unescape(found.group(1)) == name:
        return None
    return unescape(found.group(1))


def write_page(
    results_path: str | Path,
    out: str | Path,
    *,
    baseline: str | Path | None = None,
    count_inherited: bool = False,
) -> Path:
    """Load a results file (errors name it) and write its page atomically; with `baseline`
    (an earlier results file) the page lists the regressions against it."""
    document = load(results_path)
    against = None
    if baseline is not None:
        against = against_baseline(load(baseline), document, baseline_name=Path(baseline).name)
    html = render(
        document, name=Path(results_path).name, baseline=against, count_inherited=count_inherited
    )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out)
    return out
