"""A/B of two trees from alternating benchmark runs on one machine (`gemmconf report ab`).

`report diff` compares one run of each side against a noise model of one run's repetitions,
which cannot see what moves between processes (clocks and power at the limit: 1-13% of one
repetition in kernel mode, BENCHMARKS.md 2026-11-27), so a consistent 5-11% change stays
inside its bar. Here the runs themselves are the replicates: A1 B1 A2 B2 ... run one after
another on one machine, and the scatter of the runs around a fit is the noise.

Per item (id, backend), over the 2n runs, the log of its speed (vs_cublas, or 1 / time_ms) is
fitted by least squares as level + effect x [run is B] + drift x run index. exp(effect) is B's
speed over A's; its interval is Student's t on the residuals (2n - 3 degrees of freedom).
- Why a drift term, not A_i-B_i pairs alone: B always runs after A in a pair, so a machine
  that slows down over the call makes every pair say B is slower. Alternation puts the tree at
  the sequence's highest frequency, where smooth drift has almost no weight; the linear term
  removes the rest (B sits half a run later on average). A drifting machine with A = B is then
  not called, and the term costs under 5% of the interval's width from 4 pairs on.
- Why a t-interval, not a sign test or a bootstrap: with 4-6 pairs a two-sided sign test
  cannot reach 5% below 6 pairs (its smallest p is 2 x 0.5^n), and a bootstrap of 5 values
  understates its own spread. The log of a kernel's time is near normal between runs.
- Many items: each item's interval is at 1 - (1 - confidence) / m for m items (Bonferroni), so
  that on runs of pure noise the chance that any item is called is at most 1 - confidence.
- An item is called slower or faster only when its interval excludes 1 and the change is at
  least `min_effect` (default 2%): a change too small to matter is not a regression.
- The suite's figure, per backend: the same fit on each run's mean log speed over the items
  timed in every run (the geomean), its interval at 1 - (1 - confidence) / backends. Items of
  one run share that run's clocks, so the run, not the item, is the unit of replication.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from gemmconf.record import Record, typed
from gemmconf.report import perf

MIN_EFFECT = 0.02  # a change smaller than this is not called, however sure
CONFIDENCE = 0.95
MIN_RUNS = 4  # two pairs: the fit has three parameters and needs one degree of freedom left
PAIRS_SHOWN = 8  # per-pair ratios the table shows (--json has them all)
# what must be equal in every file for the runs to be of one machine and one software stack
SAME_ENVIRONMENT = ("device_name", "capability", "memory_bytes", "cuda", "torch", "triton")


class PairedError(ValueError):
    """Files that are not alternating runs of two trees on one machine."""


@dataclass(frozen=True)
class Effect:
    """B's speed over A's on one item or a geomean, with its interval and the call."""

    ratio: float  # exp(effect): above 1, B is faster
    low: float
    high: float
    level: float  # the interval's confidence
    dof: int
    verdict: str  # "slower", "faster" or "no call"


@dataclass(frozen=True)
class ItemAB:
    """One item's A/B: its figure in every run, per pair B_i / A_i, and the fitted effect."""

    id: str
    backend: str
    a: tuple[float, ...]  # the metric in A's runs, in order
    b: tuple[float, ...]
    pair_ratios: tuple[float, ...]  # speed B_i / A_i of the pairs A1-B1, A2-B2, ...
    effect: Effect


@dataclass(frozen=True)
class GeomeanAB:
    """One backend's geomean over the items timed in every run."""

    backend: str
    items: int
    effect: Effect


@dataclass
class PairedAB:
    files: list[str]
    metric: str
    min_effect: float
    confidence: float
    mode: str | None  # the runs' --bench-mode
    items: list[ItemAB] = field(default_factory=list)
    geomeans: list[GeomeanAB] = field(default_factory=list)
    untimed: list[str] = field(default_factory=list)  # "id@backend" not timed in every run
    notes: list[str] = field(default_factory=list)

    @property
    def slower(self) -> list[str]:
        """What was called slower: items' "id@backend" and "geomean BACKEND"."""
        return [f"{i.id}@{i.backend}" for i in self.items if i.effect.verdict == "slower"] + [
            f"geomean {g.backend}" for g in self.geomeans if g.effect.verdict == "slower"
        ]

    def as_json(self) -> dict[str, Any]:
        return {
            "a": self.files[0::2],
            "b": self.files[1::2],
            "metric": self.metric,
            "bench_mode": self.mode,
            "min_effect": self.min_effect,
            "confidence": self.confidence,
            "items": [asdict(i) for i in self.items],
            "geomeans": [asdict(g) for g in self.geomeans],
            "slower": self.slower,
            "untimed": self.untimed,
            "notes": self.notes,
        }


def t_quantile(p: float, dof: int) -> float:
    """Student's t quantile: the x with P(T <= x) = p on `dof` degrees of freedom."""
    if p < 0.5:
        return -t_quantile(1 - p, dof)
    low, high = 0.0, 1.0
    while _t_cdf(high, dof) < p:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if _t_cdf(middle, dof) < p else (low, middle)
    return (low + high) / 2


def _t_cdf(x: float, dof: int) -> float:
    """P(T <= x) for x >= 0: 1 - I_{dof / (dof + x^2)}(dof / 2, 1 / 2) / 2."""
    return 1 - 0.5 * _incomplete_beta(dof / (dof + x * x), dof / 2, 0.5)


def _incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction
    (evaluated with Lentz's method; the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) keeps it in
    the range where the fraction converges fast)."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    if x > (a + 1) / (a + b + 2):
        return 1 - _incomplete_beta(1 - x, b, a)
    log_front = a * math.log(x) + b * math.log1p(-x) - math.log(a)
    log_front += math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return math.exp(log_front) * fraction


def fit_effect(log_speed: Sequence[float], level: float, min_effect: float) -> Effect:
    """The effect of B on runs alternating A, B, A, B, ... (`log_speed` in run order): the fit
    log_speed = level + effect x [B] + drift x run index, its t-interval at `level`, and the
    call (the interval excludes 0 and |exp(effect) - 1| >= min_effect)."""
    runs = len(log_speed)
    design = [(1.0, float(i % 2), i - (runs - 1) / 2) for i in range(runs)]
    y = [float(v) for v in log_speed]
    inverse = _inverse3(
        [[sum(row[a] * row[b] for row in design) for b in range(3)] for a in range(3)]
    )
    moments = [sum(row[a] * v for row, v in zip(design, y, strict=True)) for a in range(3)]
    coefficients = [sum(inverse[a][b] * moments[b] for b in range(3)) for a in range(3)]
    dof = runs - 3
    residual = [
        v - sum(c * x for c, x in zip(coefficients, row, strict=True))
        for row, v in zip(design, y, strict=True)
    ]
    variance = sum(r * r for r in residual) / dof
    spread = math.sqrt(variance * inverse[1][1])
    effect = float(coefficients[1])
    half = t_quantile(1 - (1 - level) / 2, dof) * spread
    ratio = math.exp(effect)
    verdict = "no call"
    if abs(effect) > half and abs(ratio - 1) >= min_effect:
        verdict = "faster" if effect > 0 else "slower"
    return Effect(ratio, math.exp(effect - half), math.exp(effect + half), level, dof, verdict)


def _inverse3(m: list[list[float]]) -> list[list[float]]:
    """The inverse of a 3 x 3 matrix (the normal equations of `fit_effect`), by cofactors: the
    report commands run where only gemmconf is installed, without numpy."""
    (a, b, c), (d, e, f), (g, h, i) = m
    cofactors = [
        [e * i - f * h, c * h - b * i, b * f - c * e],
        [f * g - d * i, a * i - c * g, c * d - a * f],
        [d * h - e * g, b * g - a * h, a * e - b * d],
    ]
    determinant = a * cofactors[0][0] + b * cofactors[1][0] + c * cofactors[2][0]
    return [[x / determinant for x in row] for row in cofactors]


def log_speed(value: float, metric: str) -> float:
    """The log of speed from a figure: vs_cublas as it is, a time inverted."""
    higher_better = perf.COMPARED[metric][1]
    return math.log(value) if higher_better else -math.log(value)


def _timed(record: Record | None, metric: str) -> float | None:
    if record is None or record.outcome != "passed":
        return None
    value = record.metric.get(metric)
    if value is None or not math.isfinite(float(value)) or float(value) <= 0:
        return None
    return float(value)


def paired_ab(
    files: Sequence[str],
    documents: Sequence[dict[str, Any]],
    *,
    metric: str = "vs_cublas",
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
) -> PairedAB:
    """The A/B of `documents` (results files in the order they ran: A, B, A, B, ...)."""
    if metric not in perf.COMPARED:
        raise ValueError(f"unknown benchmark metric {metric!r}; known: {', '.join(perf.COMPARED)}")
    documents = [{**d, "records": typed(d["records"])} for d in documents]
    notes = check_runs(files, documents)
    indexes = [{(r.id, r.backend): r for r in d["records"]} for d in documents]
    result = PairedAB(list(files), metric, min_effect, confidence, bench_mode(documents[0]))
    result.notes = notes
    series: dict[tuple[str, str], list[float]] = {}
    for key in sorted(indexes[0]):
        values = [_timed(index.get(key), metric) for index in indexes]
        if all(v is not None for v in values):
            series[key] = [float(v) for v in values if v is not None]
        elif any(v is not None for v in values):
            result.untimed.append(f"{key[0]}@{key[1]}")
    if not series:
        raise PairedError(
            f"no item was timed ({metric}) in every one of the {len(files)} files: give "
            "results of benchmark runs (--benchmark) whose items passed"
        )
    level = 1 - (1 - confidence) / len(series)
    for (item_id, backend), values in series.items():
        logs = [log_speed(v, metric) for v in values]
        result.items.append(
            ItemAB(
                id=item_id,
                backend=backend,
                a=tuple(values[0::2]),
                b=tuple(values[1::2]),
                pair_ratios=tuple(
                    math.exp(b - a) for a, b in zip(logs[0::2], logs[1::2], strict=False)
                ),
                effect=fit_effect(logs, level, min_effect),
            )
        )
    result.geomeans = _geomeans(series, metric, confidence, min_effect)
    return result


def _geomeans(
    series: dict[tuple[str, str], list[float]], metric: str, confidence: float, min_effect: float
) -> list[GeomeanAB]:
    """Per backend: the fit on each run's mean log speed over its items."""
    backends = sorted({backend for _, backend in series})
    level = 1 - (1 - confidence) / len(backends)
    found = []
    for backend in backends:
        members = [values for (_, b), values in series.items() if b == backend]
        means = [
            sum(log_speed(values[run], metric) for values in members) / len(members)
            for run in range(len(members[0]))
        ]
        found.append(GeomeanAB(backend, len(members), fit_effect(means, level, min_effect)))
    return found


def bench_mode(document: dict[str, Any]) -> str | None:
    """The run's --bench-mode: its benchmark block's, else its records'."""
    block = document.get("benchmark")
    if isinstance(block, dict) and block.get("mode"):
        return str(block["mode"])
    modes = {str(r.metric.bench_mode) for r in document["records"] if r.metric.bench_mode}
    return modes.pop() if len(modes) == 1 else None


TREE_FIELDS = ("code", "commit")  # how a results file says which tree ran, best first


def _source(document: dict[str, Any]) -> dict[str, Any]:
    """The run's `gemmconf` block: its version, commit and code hash (`provenance`)."""
    source = document.get("gemmconf")
    return source if isinstance(source, dict) else {}


def check_runs(files: Sequence[str], documents: Sequence[dict[str, Any]]) -> list[str]:
    """Notes on the runs; a PairedError where they are not alternating runs of two trees, in the
    order they ran, on one machine, with one selection of items."""
    if len(files) < MIN_RUNS:
        raise PairedError(
            f"{len(files)} file(s): an A/B needs at least {MIN_RUNS} (A1 B1 A2 B2, in the order "
            "they ran; 4 to 6 pairs call a 5% change)"
        )
    _check_one_machine(files, documents)
    _check_items(files, documents)
    notes = _check_trees(files, documents)
    notes += _check_order(files, documents)
    if len(files) % 2:
        notes.append(f"{len(files)} files: A ran once more than B (the last file is A's)")
    if len(files) < 8:
        notes.append(
            f"{len(files) // 2} pair(s): with so few runs the interval is wide (t on "
            f"{len(files) - 3} degree(s) of freedom); 4 to 6 pairs call a 5% change"
        )
    return notes


def _check_one_machine(files: Sequence[str], documents: Sequence[dict[str, Any]]) -> None:
    first = documents[0].get("environment")
    for name, document in zip(files, documents, strict=True):
        environment = document.get("environment")
        if not isinstance(environment, dict):
            raise PairedError(
                f"{name}: no one environment (a merge of several machines?): an A/B compares "
                "runs of one machine"
            )
        differ = [k for k in SAME_ENVIRONMENT if environment.get(k) != (first or {}).get(k)]
        if differ:
            shown = "; ".join(
                f"{k} {(first or {}).get(k)!r} against {environment.get(k)!r}" for k in differ
            )
            raise PairedError(
                f"{name} ran on another machine or software stack than {files[0]} ({shown}): an "
                "A/B compares two trees' runs on one machine, with one torch and triton"
            )
    modes = [bench_mode(d) for d in documents]
    if len(set(modes)) > 1:
        shown = ", ".join(f"{n}: {m}" for n, m in zip(files, modes, strict=True))
        raise PairedError(f"the runs were timed in different --bench-mode ({shown})")


def _check_items(files: Sequence[str], documents: Sequence[dict[str, Any]]) -> None:
    keys = [{(r.id, r.backend) for r in d["records"]} for d in documents]
    for name, document, found in zip(files, documents, keys, strict=True):
        if len(found) < len(document["records"]):
            raise PairedError(f"{name} holds an item twice (a merge of runs?): give one run a file")
        if found != keys[0]:
            only = sorted(found ^ keys[0])
            shown = ", ".join(f"{i}@{b}" for i, b in only[:5])
            more = f" and {len(only) - 5} more" if len(only) > 5 else ""
            raise PairedError(
                f"{name} and {files[0]} hold different items ({len(only)} in one only: {shown}"
                f"{more}): run one selection (the same -k and --backend) in every run"
            )


def _check_trees(files: Sequence[str], documents: Sequence[dict[str, Any]]) -> list[str]:
    """A's files of one tree, B's of one tree, by gemmconf's code hash (else its commit)."""
    field_name = next((f for f in TREE_FIELDS if any(_source(d).get(f) for d in documents)), None)
    if field_name is None:
        return [
            "the files do not record which tree ran them (installed copies of gemmconf before "
            "its code hash was recorded): that they alternate A B A B is taken from the order "
            "given"
        ]
    trees = [_source(d).get(field_name) or None for d in documents]
    notes = []
    if None in trees:
        missing = ", ".join(n for n, t in zip(files, trees, strict=True) if t is None)
        notes.append(f"{missing}: no gemmconf {field_name} recorded; the other files' checked")
    sides = []
    for side, name in ((0, "A"), (1, "B")):
        recorded = [p for p in range(side, len(files), 2) if trees[p] is not None]
        for position in recorded[1:]:
            if trees[position] != trees[recorded[0]]:
                raise PairedError(
                    f"the files do not alternate two trees: {files[position]} (run "
                    f"{position + 1}, {name}'s) ran {field_name} {trees[position]}, "
                    f"{files[recorded[0]]} ran {trees[recorded[0]]}; give the files in the order "
                    "they ran, A B A B ..."
                )
        sides.append(trees[recorded[0]] if recorded else None)
    if None in sides:
        return notes
    if sides[0] == sides[1]:
        return [*notes, f"A and B ran one tree ({field_name} {sides[0]}): an A/A run, which "
                "measures the noise"]  # fmt: skip
    return [*notes, f"A ran {field_name} {sides[0]}, B ran {field_name} {sides[1]}"]


def _check_order(files: Sequence[str], documents: Sequence[dict[str, Any]]) -> list[str]:
    times = []
    for document in documents:
        try:
            times.append(datetime.strptime(str(document.get("finished")), "%Y-%m-%dT%H:%M:%S%z"))
        except ValueError:
            return ["a file does not record when its run finished: the order given is taken"]
    for position in range(1, len(files)):
        if times[position] <= times[position - 1]:
            raise PairedError(
                f"{files[position]} finished at {times[position].isoformat()}, not after "
                f"{files[position - 1]} ({times[position - 1].isoformat()}): give the files in "
                "the order they ran, A B A B ..."
            )
    return []


def render(result: PairedAB) -> list[str]:
    """The readable A/B: a table per item, the geomeans, the calls and the notes."""
    a, b = result.files[0::2], result.files[1::2]
    levels = {i.effect.level for i in result.items}
    lines = [
        f"gemmconf A/B: {len(a)} runs of A ({', '.join(a)}) and {len(b)} of B "
        f"({', '.join(b)}), alternating; {result.metric}, {result.mode or 'unknown'} mode",
        f"B/A is B's speed over A's (above 1: B is faster), fitted over the runs with a linear "
        f"drift; intervals: t on {result.items[0].effect.dof} df, {result.confidence:.0%} for "
        f"all {len(result.items)} items together (each at {min(levels):.2%}); called when the "
        f"interval excludes 1 and the change is at least {result.min_effect:.0%}",
        "",
    ]
    headers = ["id", "backend", "B/A", "interval", "pairs", "verdict", "per pair B_i/A_i"]
    rows = [
        [
            i.id,
            i.backend,
            f"{i.effect.ratio:.3f}",
            f"[{i.effect.low:.3f}, {i.effect.high:.3f}]",
            str(len(i.pair_ratios)),
            i.effect.verdict,
            " ".join(f"{r:.3f}" for r in i.pair_ratios[:PAIRS_SHOWN]),
        ]
        for i in result.items
    ]
    rows += [
        [
            "GEOMEAN",
            g.backend,
            f"{g.effect.ratio:.3f}",
            f"[{g.effect.low:.3f}, {g.effect.high:.3f}]",
            str(len(b)),
            g.effect.verdict,
            f"{g.items} items; {g.effect.level:.0%}",
        ]
        for g in result.geomeans
    ]
    lines += [f"  {line}".rstrip() for line in _aligned([headers, *rows])]
    calls = [i.effect.verdict for i in result.items]
    lines += [
        "",
        f"{calls.count('slower')} slower, {calls.count('faster')} faster, "
        f"{calls.count('no call')} no call, of {len(calls)} items timed in every run; geomean: "
        + ", ".join(
            f"{g.backend} {g.effect.ratio:.3f} {g.effect.verdict}" for g in result.geomeans
        ),
    ]
    untimed = ", ".join(result.untimed)
    lines += [
        f"not timed in every run (failed or skipped in some; `report diff` compares outcomes): "
        f"{untimed}"
    ][: bool(untimed)]
    return [*lines, *(f"note: {note}" for note in result.notes)]


def _aligned(rows: list[list[str]]) -> list[str]:
    """Each row's cells padded to its column's widest, two spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in rows]
