"""Benchmark figures read from records: the per-item table, per-family summaries, and the
comparison of two runs' timings with a noise model (used by `gemmconf report diff`).

Families: (backend, dtype, and "skinny" when min(M, N) <= `SKINNY`: decode-like shapes, bound
by reading the weights, with figures of their own). Per family, the geometric mean of
`vs_cublas` over the timed items, and fast_p: the share of the family's items (all that ran,
failures included) that are correct and faster than p x cuBLAS, for p in `FAST_P` (the fast_p
of KernelBench).

Noise model (`compare`): a timed item carries the median of its repetitions and the spread of
one repetition (`*_spread*`: IQR / 1.349). The median of n repetitions has a standard error of
about 1.2533 * spread / sqrt(n); two runs' medians differ by noise of
sqrt(se_old**2 + se_new**2). A change is a regression when it goes the wrong way by more than
`k` times that AND by more than `min_change` of the old value: the first guards the repetitions'
own scatter, the second what a run's repetitions cannot see (clocks, heat, the machine: cuBLAS
read 680-742 TFLOP/s across items of one run on an H100). Files without spreads (older runs)
are compared on `min_change` alone.

A third bound covers what moves between processes, which one run's standard error cannot see
(host-bound items drift most; BENCHMARKS.md, "Regression gating", has the measurement): a change
must also exceed `k` times the larger of the two runs' relative spreads of one repetition.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gemmconf.record import Metrics, Record, typed

FAST_P = (0.8, 1.0, 1.2)
SKINNY = 128  # min(M, N) at most this: a decode-like family of its own
NOISE_K = 3.0
MIN_CHANGE = 0.05  # BENCHMARKS.md: differences under about 5% between runs are noise
MEDIAN_SE = 1.2533  # standard error of a normal sample's median, in sigma / sqrt(n)

# metric -> (its spread's name, whether higher is better)
COMPARED = {
    "vs_cublas": ("vs_cublas_spread", True),
    "time_ms": ("time_spread_ms", False),
}


@dataclass(frozen=True)
class FamilySummary:
    """One backend's figures over one family of benchmark items."""

    backend: str
    family: str
    items: int  # records in the family that ran (not skipped)
    timed: int  # of them, with a vs_cublas figure
    geomean: float | None  # of vs_cublas over the timed items
    fast: dict[float, float]  # p -> share of `items` correct and faster than p x cuBLAS

    def as_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "family": self.family,
            "items": self.items,
            "timed": self.timed,
            "geomean_vs_cublas": self.geomean,
            "fast_p": {f"{p:g}": share for p, share in self.fast.items()},
        }


def family_of(record: Record) -> str:
    """The dtype, and " skinny" when min(M, N) <= SKINNY (decode-like shapes)."""
    dims = record.dims or {}
    skinny = min(dims.get("M", SKINNY + 1), dims.get("N", SKINNY + 1)) <= SKINNY
    return f"{record.dtype}{' skinny' if skinny else ''}"


def families(records: Sequence[Record | Mapping[str, Any]]) -> list[FamilySummary]:
    """Per (backend, family) of a benchmark run: geomean vs cuBLAS and fast_p (FAST_P)."""
    groups: dict[tuple[str, str], list[Record]] = {}
    for record in typed(records):
        if record.outcome == "skipped":
            continue
        groups.setdefault((record.backend, family_of(record)), []).append(record)
    summaries = []
    for (backend, family), members in sorted(groups.items()):
        # only a correct answer counts as fast: a failed item's speed is 0
        ratios = [
            float(r.metric.vs_cublas or 0.0) if r.outcome == "passed" else 0.0 for r in members
        ]
        timed = [x for x in ratios if x > 0]
        summaries.append(
            FamilySummary(
                backend=backend,
                family=family,
                items=len(members),
                timed=len(timed),
                geomean=math.exp(sum(map(math.log, timed)) / len(timed)) if timed else None,
                fast={p: sum(x > p for x in ratios) / len(members) for p in FAST_P},
            )
        )
    return summaries


def table(records: Sequence[Record | Mapping[str, Any]]) -> list[str]:
    """The benchmark figures of a run: one line per benchmarked record, then the families."""
    records = typed(records)
    rows = [r for r in records if "tflops" in r.metric]
    if not rows:
        return []
    width = max(len(r.id) for r in rows)
    lines = [
        f"  {'item':<{width}}  {'backend':<12} {'ms':>9} {'±':>6} {'host us':>8} "
        f"{'TFLOP/s':>9} {'cuBLAS':>9} {'vs cuBLAS':>9}"
    ]
    for r in sorted(rows, key=lambda r: (r.id, r.backend)):
        m = r.metric
        host = m.host_ms
        lines.append(
            f"  {r.id:<{width}}  {r.backend:<12} {m.time_ms:>9.4f} "
            f"{_pct(m.time_spread_ms, m.time_ms):>6} "
            f"{'' if host is None else f'{host * 1e3:.1f}':>8} "
            f"{m.tflops:>9.1f} {m.cublas_tflops:>9.1f} {m.vs_cublas:>8.2f}x"
        )
    summary = [s for s in families(records) if s.timed or s.items]
    name_width = max(len(f"{s.backend} {s.family}") for s in summary) if summary else 6
    heads = [f"fast_{p:g}" for p in FAST_P]
    lines += ["", f"  {'family':<{name_width}} {'items':>5} {'geomean':>8}  {'  '.join(heads)}"]
    for s in summary:
        shares = "  ".join(f"{s.fast[p]:>{len(h)}.0%}" for p, h in zip(FAST_P, heads, strict=True))
        geomean = "-" if s.geomean is None else f"{s.geomean:.2f}x"
        lines.append(
            f"  {s.backend + ' ' + s.family:<{name_width}} {s.items:>5} {geomean:>8}  {shares}"
        )
    return lines


def _pct(spread: float | None, of: float) -> str:
    return "" if spread is None or of <= 0 else f"{100 * spread / of:.1f}%"


@dataclass(frozen=True)
class PerfChange:
    """One item whose benchmark figure moved beyond the noise between two runs."""

    kind: str  # "slower" (a regression) or "faster"
    id: str
    backend: str
    device: str | None
    metric: str  # "vs_cublas" or "time_ms"
    old: float
    new: float
    change: float  # (new - old) / old
    noise: float  # k x the combined standard error, in the metric's unit (0: none recorded)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def standard_error(metrics: Metrics, spread_name: str) -> float:
    """Standard error of a recorded median (0 when the record has no spread)."""
    spread = metrics.get(spread_name)
    reps = metrics.bench_reps
    if not spread or not reps:
        return 0.0
    return MEDIAN_SE * float(spread) / math.sqrt(float(reps))


def relative_spread(metrics: Metrics, metric: str) -> float:
    """The spread of one repetition as a fraction of the recorded median (0 when none)."""
    spread, value = metrics.get(COMPARED[metric][0]), metrics.get(metric)
    if not spread or not value or float(value) <= 0:
        return 0.0
    return float(spread) / float(value)


def compare(
    old: Metrics | None,
    new: Metrics | None,
    metric: str,
    *,
    k: float = NOISE_K,
    min_change: float = MIN_CHANGE,
) -> tuple[str, float, float, float, float] | None:
    """("slower" | "faster", old value, new value, relative change, noise) when `metric` moved
    beyond the noise model between two records' metrics; None otherwise or when not timed."""
    if old is None or new is None or metric not in old or metric not in new:
        return None
    spread_name, higher_better = COMPARED[metric]
    before, after = float(old.get(metric)), float(new.get(metric))
    if not (before > 0 and after > 0 and math.isfinite(before) and math.isfinite(after)):
        return None
    noise = k * max(
        math.hypot(standard_error(old, spread_name), standard_error(new, spread_name)),
        before * max(relative_spread(old, metric), relative_spread(new, metric)),
    )
    delta = after - before
    if abs(delta) <= noise or abs(delta) <= min_change * before:
        return None
    worse = delta < 0 if higher_better else delta > 0
    return ("slower" if worse else "faster", before, after, delta / before, noise)


@dataclass(frozen=True)
class KernelCounts:
    """One backend's kernel counts over a run's records (the metrics of `kernel_stats`)."""

    backend: str
    items: int  # records with `kernel_signatures`
    launched: int  # signatures launched, summed over items
    distinct: int  # distinct signature ids
    compiles: int  # kernel_compiles: compiled or loaded from Triton's disk cache
    first_launch_s: float  # kernel_compile_s: what those first launches took, waits included
    builds: int | None  # of compiles, compiled (None: no record told them apart)
    loads: int | None  # of compiles, loaded from Triton's disk cache
    untold: int  # compiles of records that did not tell compiles from loads (earlier runs)
    wait_s: float  # of first_launch_s, waiting for another process's compile
    kernels: int | None = None  # distinct Triton kernels compiled or loaded (Triton's hashes)
    rebuilt: int | None = None  # compiles of a Triton kernel compiled before in the run
    # the compiles' seconds by Triton's stage, summed (kernel_build_stages_s); None: untold
    build_stages_s: dict[str, float] | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """The end-of-run summary line (`kernel_summary`)."""
        head = (
            f"gemmconf kernels: {self.backend}: {self.items} items launched {self.launched} "
            f"kernel signatures, {self.distinct} distinct; "
        )
        took = f" in {self.first_launch_s:.1f} s of first launches" if self.compiles else ""
        if self.builds is None or self.loads is None:
            return (
                f"{head}{self.compiles} compiled or loaded from Triton's disk cache{took} (items "
                "with one signature share one compile per process)"
            )
        mixed = f", {self.untold} compiled or loaded (not told apart)" if self.untold else ""
        wait = f" ({self.wait_s:.1f} s waiting for another worker's compile)" if took else ""
        once = (
            f"; {self.kernels} distinct Triton kernels, {self.rebuilt} compiled again"
            if self.kernels is not None
            else ""
        )
        return (
            f"{head}{self.builds} compiled, {self.loads} loaded from Triton's disk cache"
            f"{mixed}{took}{wait}{once}{self._stages()}"
        )

    def _stages(self) -> str:
        """ "; compiling by stage: source 1.0 s, ttir 2.0 s, ..." in Triton's order."""
        if not self.build_stages_s:
            return ""
        stages = ", ".join(f"{name} {s:.1f} s" for name, s in self.build_stages_s.items())
        return f"; compiling by stage: {stages}"


def kernel_counts(records: Sequence[Record | Mapping[str, Any]]) -> list[KernelCounts]:
    """Per backend that reports its kernels (metrics `kernel_signatures`, a list of ids, and
    `kernel_compiles`): launches, distinct signatures, and what compiled. Records that tell
    compiles from loads (`kernel_builds`, `kernel_cache_loads`) are counted apart, with the
    seconds spent waiting for another process's compile (`kernel_compile_wait_s`); records of
    earlier runs, without them, count as `untold`."""
    by_backend: dict[str, list[Metrics]] = {}
    for record in typed(records):
        if record.metric.kernel_signatures is not None:
            by_backend.setdefault(record.backend, []).append(record.metric)
    counts = []
    for backend, items in sorted(by_backend.items()):
        launched = [s for m in items for s in m.kernel_signatures]
        told = [m for m in items if _told_apart(m)]
        counts.append(
            KernelCounts(
                backend=backend,
                items=len(items),
                launched=len(launched),
                distinct=len(set(launched)),
                compiles=sum(int(m.kernel_compiles or 0) for m in items),
                first_launch_s=sum(float(m.kernel_compile_s or 0.0) for m in items),
                builds=sum(int(m.kernel_builds) for m in told) if told else None,
                loads=sum(int(m.kernel_cache_loads) for m in told) if told else None,
                untold=sum(int(m.kernel_compiles or 0) for m in items if not _told_apart(m)),
                wait_s=sum(float(m.kernel_compile_wait_s or 0.0) for m in told),
                build_stages_s=_build_stages(items),
                **_triton_kernels(items),
            )
        )
    return counts


STAGES_SHOWN = 12  # Triton's CUDA compile has 7 (source ... store); a stranger's file more


def _build_stages(items: Sequence[Metrics]) -> dict[str, float] | None:
    """The records' compile seconds by Triton's stage, summed, in the order met (Triton's).
    A results file may come from anyone: a stage is a short name with finite seconds, and at
    most STAGES_SHOWN of them are kept."""
    total: dict[str, float] = {}
    for metrics in items:
        for stage, seconds in (metrics.kernel_build_stages_s or {}).items():
            if not isinstance(seconds, int | float) or isinstance(seconds, bool):
                continue
            name = str(stage)[:16]
            if math.isfinite(seconds) and (name in total or len(total) < STAGES_SHOWN):
                total[name] = total.get(name, 0.0) + float(seconds)
    return total or None


def _triton_kernels(items: Sequence[Metrics]) -> dict[str, int | None]:
    """Distinct Triton kernels (by Triton's own hash) and how many compiles repeated one that
    the run had compiled before, where records carry the hashes (`kernel_built`)."""
    built = [h for m in items for h in (m.kernel_built or [])]
    if not built:
        return {}
    loaded = {h for m in items for h in (m.kernel_loaded or [])}
    return {"kernels": len(set(built) | loaded), "rebuilt": len(built) - len(set(built))}


def kernel_summary(records: Sequence[Record | Mapping[str, Any]]) -> list[str]:
    """One line per backend that reports its kernels (`kernel_counts`): launches, distinct
    signatures, and what compiled; records of earlier runs say "compiled or loaded" as they
    did."""
    return [counts.line() for counts in kernel_counts(records)]


def _told_apart(metrics: Metrics) -> bool:
    """Whether a record counts its compiles and its disk-cache loads apart."""
    return metrics.kernel_builds is not None and metrics.kernel_cache_loads is not None
