"""Expected outcomes per backend: which items are known to fail (xfail) or are not run (skip).

Where a backend's entries come from, in this order (the first entry that matches an item wins,
across files):

1. every ``--expectations PATH`` file whose ``backend:`` is the backend, in the order given;
2. the suite's own file, ``<suites>/expectations/<backend>.yaml`` (or ``.yml``), or, where the
   suite has none, the files the backend's package ships: the backend object's optional
   ``expectations`` attribute (a path), and files registered under the entry-point group
   ``gemmconf.expectations`` with the backend's name (a path, or a function returning one). A
   suite's file replaces the package's: whoever maintains the suite has the last word on it.

An entry's ``match`` is an id pattern (``*`` matches any run of characters, ``?`` one;
brackets are literal, since ids contain them), a list of them (any one), or a mapping over the
record's fields, every one of which must hold: ``id`` (patterns), ``suite``, ``scenario``,
``op``, ``dtype`` (values or patterns), ``markers`` (the item has one of them), ``axes``
(``{axis: value id or list}``) and ``not`` (a mapping that must not hold). A list means any of
its values::

    - match: {op: [scaled_mm, int_mm]}                  # these two ops
    - match: {not: {op: mm}}                            # everything but mm
    - match: {op: mm, dtype: fp16, axes: {layout: [nt, tt]}}

Rules, each an error at start-up naming file:line:

- an entry that matches no instance of the whole suite is an error (a stale or mistyped entry
  would otherwise hide nothing and mean nothing);
- two entries matching the same item: the first one wins, and that is allowed (narrow before
  wide); but where the first expects a failure of another kind or message than the item's, a
  later matching entry that expects the item's failure decides (`ExpectationTable.deciding`);
- an xfail item that passes is a failure (strict), so fixed bugs get their entries removed;
  ``strict: false`` is for bugs that show only on some runs (wrong values that change from run
  to run): a pass is then reported as XPASS, not a failure.

An entry with ``hardware`` (a class of `gemmconf.capability.HARDWARE_CLASSES`, or a list) applies
only to items that run on that class of hardware: ``cpu`` where the item runs on a CPU (any item
of a CPU machine, a ``requires: {device: cpu}`` item anywhere), else the GPU's class. Elsewhere
the next entry that matches decides, or none. So a failure seen on one class is expected there,
strictly, and a pass elsewhere is no XPASS::

    - {match: "fscaled/blockwise[*]", hardware: cpu, reason: no blockwise kernel on the CPU}

``torch`` (a version specifier, ``"<2.13"``, ``"==2.11.*"``) does the same for the torch version
of the run: a failure torch fixed, or brought, is expected where it was seen.

``kind`` (a failure kind of `gemmconf.kinds`) and ``message`` (a regular expression searched for
in the failure's reason) narrow what an xfail expects: a failure of another kind, or whose reason
does not match, fails the item. ``status: either`` (with a ``kind``) is for upstream behaviour that
comes and goes with timing, expected by rule rather than by id: the item passes, or fails with
that kind (and message), and both are fine; a pass is a pass (no XPASS) and any other failure
fails::

    - match: {op: [mm, addmm, bmm, linear, matmul]}
      hardware: [sm80, sm89, sm90, sm100, sm120]
      status: either
      kind: wrong layout
      message: "strides .* are not row-major"
      reason: pad_mm returns a slice of its padded result when its compile-time timing pads
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from gemmconf.capability import HARDWARE_CLASSES
from gemmconf.kinds import KINDS
from gemmconf.scenario import Node, ScenarioError, ScenarioInstance, load_yaml
from gemmconf.scenario.facts import Facts
from gemmconf.scenario.patterns import MessagePattern, PatternError, compile_message_pattern
from gemmconf.scenario.source import read_source

STATUSES = ("xfail", "skip", "either")
ENTRY_FIELDS = (
    "match",
    "status",
    "reason",
    "issue",
    "strict",
    "hardware",
    "torch",
    "kind",
    "message",
)
MATCH_FIELDS = ("id", "suite", "scenario", "op", "dtype", "markers", "axes", "not")
SUFFIXES = (".yaml", ".yml")
ENTRY_POINT_GROUP = "gemmconf.expectations"


@dataclass(frozen=True)
class Match:
    """An entry's `match`: every given field holds, and `negated` (its `not`) does not."""

    ids: tuple[re.Pattern[str], ...] = ()
    fields: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...] = ()
    markers: tuple[str, ...] = ()
    axes: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...] = ()
    negated: Match | None = None

    def __call__(self, facts: Facts) -> bool:
        if self.ids and not any(p.fullmatch(facts.id) for p in self.ids):
            return False
        for name, patterns in self.fields:
            if not any(p.fullmatch(getattr(facts, name)) for p in patterns):
                return False
        if self.markers and not set(self.markers) & set(facts.markers):
            return False
        axes = dict(facts.axes)
        for axis, patterns in self.axes:
            if axis not in axes or not any(p.fullmatch(axes[axis]) for p in patterns):
                return False
        return self.negated is None or not self.negated(facts)


@dataclass(frozen=True)
class Expectation:
    pattern: str  # the entry's `match` as written (an id pattern, or the mapping's text)
    status: str
    reason: str
    issue: str | None
    source: str  # file:line
    strict: bool = True  # an xfail that passes fails the item
    match: Match = field(default_factory=Match, compare=False, repr=False)
    hardware: tuple[str, ...] = ()  # the classes of hardware it applies on; () everywhere
    torch: str | None = None  # the torch versions it applies to (a specifier); None: all
    versions: SpecifierSet | None = field(default=None, compare=False, repr=False)
    kind: str | None = None  # the failure kind expected (xfail, either); None: any kind
    message: str | None = None  # a regex the failure's reason must contain; None: any reason
    message_pattern: MessagePattern | None = field(default=None, compare=False, repr=False)

    @property
    def expects_failure(self) -> bool:
        """Whether the item may fail as this entry says (an xfail, or an either entry)."""
        return self.status in ("xfail", "either")

    def expects(self, kind: str | None, reason: str) -> bool:
        """Whether a failure of this kind, with this reason, is the one the entry expects."""
        if not self.expects_failure or (self.kind is not None and kind != self.kind):
            return False
        return self.message_pattern is None or self.message_pattern.search(reason)

    def applies_on(self, hardware: str | None, torch_version: str | None = None) -> bool:
        """Whether the entry holds for an item running on this class of hardware, under this
        torch version (None: not known, as outside a run; the entry then holds)."""
        if self.hardware and hardware is not None and hardware not in self.hardware:
            return False
        if self.versions is not None and torch_version is not None:
            return self.versions.contains(torch_version, prereleases=True)
        return True

    def text(self) -> str:
        link = f" ({self.issue})" if self.issue else ""
        where = f"; on {', '.join(self.hardware)}" if self.hardware else ""
        where += f"; torch {self.torch}" if self.torch else ""
        what = f"{self.kind}: " if self.kind else ""
        if self.kind and self.reason.lower().startswith(f"{self.kind.lower()}:"):
            what = ""  # a reason that already names its kind (a file written so) says it once
        if self.status == "either":
            what = f"passes or fails as {self.kind}: "
        return f"{what}{self.reason}{link} [{self.source}{where}]"


@dataclass(frozen=True)
class ExpectationTable:
    backend: str
    entries: tuple[Expectation, ...]
    facts: Mapping[str, Facts] = field(default_factory=dict, compare=False, repr=False)
    _holding: dict[tuple[str | None, str | None], tuple[Expectation, ...]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def lookup(
        self, instance_id: str, hardware: str | None = None, torch_version: str | None = None
    ) -> Expectation | None:
        """The first entry that matches the instance and holds on `hardware` (the class of
        hardware the item runs on) under `torch_version` (None: not known, so no entry is left
        out for it)."""
        facts = self.facts.get(instance_id) or Facts(instance_id)
        return next((e for e in self.holding(hardware, torch_version) if e.match(facts)), None)

    def deciding(
        self,
        instance_id: str,
        hardware: str | None,
        torch_version: str | None,
        failure: tuple[str | None, str] | None,
    ) -> Expectation | None:
        """The entry that decides the item's outcome, given its own result (`failure`: its
        (kind, reason), None for a pass): the first entry that matches it, unless that one
        expects another failure and a later matching entry expects this one (an entry's
        `kind` and `message` take part in matching: "these items, where they crash with this
        message" can follow a wider entry for their other failures). Where no entry expects
        the failure, the first one decides (and the record says what it expected)."""
        first = self.lookup(instance_id, hardware, torch_version)
        if failure is None or first is None or not first.expects_failure:
            return first
        if first.expects(*failure):
            return first
        facts = self.facts.get(instance_id) or Facts(instance_id)
        later = (
            e
            for e in self.holding(hardware, torch_version)
            if e is not first and e.expects(*failure) and e.match(facts)
        )
        return next(later, first)

    def holding(self, hardware: str | None, torch_version: str | None) -> tuple[Expectation, ...]:
        """The entries that hold on `hardware` under `torch_version`, in file order. A run asks
        for the same pair for each of its items: the answer is kept (each entry's torch
        specifier parses the version, which was most of a collection's lookup time)."""
        key = (hardware, torch_version)
        if key not in self._holding:
            self._holding[key] = tuple(
                e for e in self.entries if e.applies_on(hardware, torch_version)
            )
        return self._holding[key]


def outcome(entry: Expectation | None, failure: tuple[str | None, str] | None) -> tuple[str, str]:
    """The outcome a run gives an item under `entry` (the first entry that matched it where it
    ran, or None), given the item's own result: `failure` is its (kind, reason), None for a
    pass. Returns (outcome, xpass): xpass is "strict" (a failure) or "non-strict" on an xpassed
    item, else "". The plugin gets the same from pytest's own xfail (gemmconf.plugin.items: an
    xfail marker with the entry's strictness, raised only for the failure the entry expects);
    `gemmconf expect` judges a results file again with this."""
    if entry is not None and entry.status == "skip":
        return "skipped", ""
    if failure is None:
        if entry is not None and entry.status == "xfail":
            return "xpassed", "strict" if entry.strict else "non-strict"
        return "passed", ""
    kind, reason = failure
    if entry is not None and entry.expects(kind, reason):
        return "xfailed", ""
    return "failed", ""


@dataclass(frozen=True)
class ExpectationFile:
    """One file, read and checked on its own (before the suite's instances are known)."""

    path: Path
    shown: str
    backend: str
    entries: tuple[Expectation, ...]


def path_for(directory: Path, backend: str) -> Path:
    """The suite's file for a backend: ``inductor-max-autotune:TRITON`` →
    ``inductor-max-autotune-TRITON.yaml`` (or ``.yml`` where only that exists)."""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "-", backend)
    found = [
        directory / f"{stem}{suffix}"
        for suffix in SUFFIXES
        if (directory / f"{stem}{suffix}").exists()
    ]
    if len(found) > 1:
        raise ScenarioError(
            str(found[1]), "file", f"both {found[0].name} and {found[1].name} exist: keep one"
        )
    return found[0] if found else directory / f"{stem}.yaml"


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """An id pattern (``*`` any run of characters, ``?`` one, everything else literal) as a
    regex whose `fullmatch` takes time linear in the id times the pattern, whatever the pattern.

    A plain translation (``*`` -> ``.*``) backtracks: ``*?*?*?*?*?*?*?*?*?*?Q`` took minutes on
    one id. Globs need no backtracking: the text between two stars is a fixed-width piece (``?``
    one character), and where the whole pattern matches, it also matches with each middle piece
    at its first place after the one before. So each middle piece is found by a lazy scan in an
    atomic group (``(?>.*?piece)``, taken once and never retried), the last piece is anchored at
    the end, and only that last ``.*`` is tried at each position."""
    pieces = [
        "".join("." if c == "?" else re.escape(c) for c in piece) for piece in pattern.split("*")
    ]
    if len(pieces) == 1:
        return re.compile(pieces[0], re.DOTALL)
    first, *middle, last = pieces
    scans = "".join(f"(?>.*?{piece})" for piece in middle if piece)
    return re.compile(f"{first}{scans}.*{last}", re.DOTALL)


def packaged_files(backend: object, label: str) -> list[tuple[Path, str]]:
    """The files a backend's package ships, with who declared each: the backend object's
    `expectations` attribute, and entry points named `label` in group gemmconf.expectations."""
    from importlib import metadata

    found = []
    declared = getattr(backend, "expectations", None)
    if declared:
        found.append((Path(declared), f"backend {label!r} (its 'expectations' attribute)"))
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == label:
            value = entry.load()
            path = value() if callable(value) else value
            found.append((Path(path), f"entry point {entry.name} = {entry.value}"))
    return found


def read(path: Path, root: Path | None = None) -> ExpectationFile:
    """Parse and check one expectations file (not yet against the suite)."""
    shown = str(path.relative_to(root)) if root and path.is_relative_to(root) else str(path)
    if path.suffix not in SUFFIXES:
        raise ScenarioError(shown, "file", "an expectations file is YAML, named *.yaml or *.yml")
    text = read_source(path, shown)
    try:
        document = load_yaml(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        raise ScenarioError(
            f"{shown}:{mark.line + 1 if mark else '?'}",
            getattr(exc, "field", "yaml"),
            str(exc.problem),
        ) from None
    if not isinstance(document, Node):
        raise ScenarioError(shown, "file", "expected a mapping with 'backend' and 'expectations'")
    for key in document:
        if key not in ("backend", "expectations"):
            raise ScenarioError(
                f"{shown}:{document.key_lines[key]}",
                key,
                "unknown key; known: backend, expectations",
            )
    backend = document.get("backend")
    if not isinstance(backend, str) or not backend:
        raise ScenarioError(f"{shown}:{document.line}", "backend", "names the backend it is for")
    raw_entries = document.get("expectations") or []
    if not isinstance(raw_entries, list):
        raise ScenarioError(f"{shown}:{document.line}", "expectations", "expected a list")
    entries = [_entry(raw, shown, document) for raw in raw_entries]
    return ExpectationFile(path, shown, backend, tuple(entries))


def _entry(raw: Any, shown: str, document: Node) -> Expectation:
    line = raw.line if isinstance(raw, Node) else document.line
    where = f"{shown}:{line}"
    if not isinstance(raw, dict):
        raise ScenarioError(where, "expectations", "each entry is a mapping")
    for key in raw:
        if key not in ENTRY_FIELDS:
            raise ScenarioError(
                f"{shown}:{raw.key_lines[key]}",
                key,
                f"unknown key; known: {', '.join(ENTRY_FIELDS)}",
            )
    pattern, status, reason = raw.get("match"), raw.get("status", "xfail"), raw.get("reason")
    if isinstance(pattern, str) and pattern:
        match = Match(ids=(compile_pattern(pattern),))
    elif isinstance(pattern, list) and pattern and all(isinstance(p, str) and p for p in pattern):
        match = Match(ids=tuple(compile_pattern(p) for p in pattern))  # any of these ids
    elif isinstance(pattern, Mapping) and pattern:
        match = _match(pattern, where)
    else:
        raise ScenarioError(
            where,
            "match",
            "needs an id pattern, e.g. 'dense/mm[*-fp16-*]', a list of them, or a mapping of "
            "record fields, e.g. {op: [scaled_mm, int_mm]}",
        )
    if status not in STATUSES:
        raise ScenarioError(where, "status", f"{status!r} is not one of {', '.join(STATUSES)}")
    if not isinstance(reason, str) or not reason.strip():
        raise ScenarioError(where, "reason", "every expectation needs a reason")
    strict = raw.get("strict", True)
    if not isinstance(strict, bool):
        raise ScenarioError(
            f"{shown}:{raw.key_lines['strict']}",
            "strict",
            f"expected true or false, got {strict!r}",
        )
    shown_pattern = pattern if isinstance(pattern, str) else _flow(pattern)
    hardware = _hardware(raw, shown) if "hardware" in raw else ()
    versions = _torch_versions(raw, shown) if "torch" in raw else None
    kind, message = _expected_failure(raw, shown, status)
    return Expectation(
        shown_pattern,
        status,
        reason.strip(),
        raw.get("issue"),
        where,
        strict,
        match=match,
        hardware=hardware,
        torch=None if versions is None else str(raw["torch"]),
        versions=versions,
        kind=kind,
        message=None if message is None else message.pattern,
        message_pattern=message,
    )


def _expected_failure(
    raw: Node, shown: str, status: str
) -> tuple[str | None, MessagePattern | None]:
    """An entry's `kind` and `message`: which failure it expects (xfail and either only)."""
    refused = {"skip": ("kind", "message"), "either": ("strict",)}.get(status, ())
    for key in refused:
        if key in raw:
            why = (
                "a skipped item does not run"
                if status == "skip"
                else "an either entry's pass is a plain pass: there is no XPASS to make strict"
            )
            raise ScenarioError(
                f"{shown}:{raw.key_lines[key]}", key, f"not allowed with status {status}: {why}"
            )
    kind = raw.get("kind")
    if kind is None and status == "either":
        raise ScenarioError(
            f"{shown}:{raw.line}",
            "kind",
            "status either needs the failure kind that is fine besides a pass, "
            f"one of: {', '.join(KINDS)}",
        )
    if kind is not None and kind not in KINDS:
        hint = difflib.get_close_matches(str(kind), KINDS, n=1)
        raise ScenarioError(
            f"{shown}:{raw.key_lines['kind']}",
            "kind",
            f"{kind!r} is not a failure kind; known: {', '.join(KINDS)}"
            + (f" (did you mean {hint[0]!r}?)" if hint else ""),
        )
    if "message" not in raw:
        return kind, None
    text = raw["message"]
    try:
        if not isinstance(text, str) or not text:
            raise re.error("expected a non-empty regular expression")
        re.compile(text)
        # searched in bounded time, as raises.match is: a file's pattern may not backtrack
        return kind, compile_message_pattern(text)
    except re.error as exc:
        raise ScenarioError(
            f"{shown}:{raw.key_lines['message']}",
            "message",
            f"{text!r} is not a regular expression: {exc}",
        ) from None
    except PatternError as exc:
        raise ScenarioError(
            f"{shown}:{raw.key_lines['message']}", "message", f"{text[:60]!r}: {exc}"
        ) from None


def _torch_versions(raw: Node, shown: str) -> SpecifierSet:
    value = raw["torch"]
    try:
        if not isinstance(value, str) or not value.strip():
            raise InvalidSpecifier(repr(value))
        return SpecifierSet(value)
    except InvalidSpecifier:
        raise ScenarioError(
            f"{shown}:{raw.key_lines['torch']}",
            "torch",
            f'{value!r} is not a version specifier (e.g. "<2.13", "==2.11.*")',
        ) from None


def _hardware(raw: Node, shown: str) -> tuple[str, ...]:
    value = raw["hardware"]
    values = value if isinstance(value, list) else [value]
    unknown = [v for v in values if v not in HARDWARE_CLASSES]
    if not values or unknown:
        got = f"{unknown[0]!r} is not" if unknown else "expected"
        raise ScenarioError(
            f"{shown}:{raw.key_lines['hardware']}",
            "hardware",
            f"{got} a class of hardware, or a list of them: {', '.join(HARDWARE_CLASSES)}",
        )
    return tuple(values)


def _match(spec: Mapping[str, Any], where: str) -> Match:
    for key in spec:
        if key not in MATCH_FIELDS:
            raise ScenarioError(
                where, "match", f"unknown field {key!r}; known: {', '.join(MATCH_FIELDS)}"
            )

    def patterns(key: str) -> tuple[re.Pattern[str], ...]:
        return tuple(compile_pattern(v) for v in _strings(spec[key], where, key))

    fields = tuple(
        (key, patterns(key)) for key in ("suite", "scenario", "op", "dtype") if key in spec
    )
    axes: list[tuple[str, tuple[re.Pattern[str], ...]]] = []
    if "axes" in spec:
        if not isinstance(spec["axes"], Mapping) or not spec["axes"]:
            raise ScenarioError(where, "match", "axes: expected {axis: value id or list}")
        for axis, values in spec["axes"].items():
            ids = _strings(values, where, f"axes.{axis}")
            axes.append((str(axis), tuple(compile_pattern(v) for v in ids)))
    negated = None
    if "not" in spec:
        if not isinstance(spec["not"], Mapping) or not spec["not"]:
            raise ScenarioError(where, "match", "not: expected a mapping of record fields")
        negated = _match(spec["not"], where)
    return Match(
        ids=patterns("id") if "id" in spec else (),
        fields=fields,
        markers=_strings(spec["markers"], where, "markers") if "markers" in spec else (),
        axes=tuple(axes),
        negated=negated,
    )


def _strings(value: Any, where: str, key: str) -> tuple[str, ...]:
    values = value if isinstance(value, list) else [value]
    if not values or any(isinstance(v, Mapping | list) or v is None for v in values):
        raise ScenarioError(where, "match", f"{key}: expected a value or a list of values")
    return tuple(str(v) if not isinstance(v, bool) else str(v).lower() for v in values)


def _flow(spec: Any) -> str:
    return yaml.safe_dump(_plain(spec), default_flow_style=True, width=10**6).strip()


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def validate(file: ExpectationFile, facts: Sequence[Facts]) -> None:
    """Every entry of `file` must match some instance of the whole suite."""
    for entry in file.entries:
        if not any(entry.match(f) for f in facts):
            raise ScenarioError(
                entry.source,
                "match",
                f"pattern {entry.pattern!r} matches no scenario "
                "instance of the suite (remove it or fix the id)",
            )


LAYER_BACKEND = "torch.compile"  # the torch.compile layer's `backend:` (and its attribution)
LAYER_FILE = "torch_compile.yaml"  # in the suite's expectations folder


def load_layer(
    directory: Path, instances: Iterable[ScenarioInstance | Facts | str], root: Path | None = None
) -> ExpectationTable | None:
    """The torch.compile layer of `directory` (LAYER_FILE), validated against `instances`; None
    where the suite has none. Its entries say how torch.compile fails an item with a backend
    that does nothing of its own (a pass-through such as dynamo:aot_eager): each is an xfail
    with the failure's `kind`, `message` and the `hardware` it was seen on, so that a backend
    inherits only a failure of the same kind whose reason matches, on that hardware
    (gemmconf.attribution)."""
    path = directory / LAYER_FILE
    if not path.exists():
        return None
    file = read(path, root)
    if file.backend != LAYER_BACKEND:
        raise ScenarioError(
            file.shown, "backend", f"the torch.compile layer's backend is {LAYER_BACKEND!r}"
        )
    for entry in file.entries:
        missing = next(
            (
                key
                for key, value in (
                    ("status", entry.status == "xfail"),
                    ("kind", entry.kind),
                    ("message", entry.message),
                    ("hardware", entry.hardware),
                )
                if not value
            ),
            None,
        )
        if missing is not None:
            raise ScenarioError(
                entry.source,
                missing,
                "a torch.compile layer entry says how the pass-through fails the item and "
                "where it was seen: status xfail, its kind, a message pattern of its reason, "
                "and the hardware",
            )
    facts = [Facts.of(i) for i in instances]
    validate(file, facts)
    by_id: dict[str, Facts] = {}
    for f in facts:
        by_id.setdefault(f.id, f)
    return ExpectationTable(LAYER_BACKEND, file.entries, by_id)


def load(
    directory: Path,
    backend: str,
    instances: Iterable[ScenarioInstance | Facts | str],
    root: Path | None = None,
    *,
    extra: Sequence[ExpectationFile] = (),
    packaged: Path | Sequence[Path | tuple[Path, str]] | None = (),
) -> ExpectationTable:
    """The backend's table: `extra` files (from --expectations), then the suite's file in
    `directory`, or the `packaged` files where the suite has none. Every entry is validated
    against `instances`, the whole suite (ids alone are accepted; field patterns then match
    nothing)."""
    facts = [Facts.of(i) for i in instances]
    files = list(extra)
    suite_file = path_for(directory, backend)
    if isinstance(packaged, Path):
        packaged = [packaged]
    if suite_file.exists():
        files.append(read(suite_file, root))
        packaged = []
    for item in packaged or ():
        path, declared_by = item if isinstance(item, tuple) else (item, f"backend {backend!r}")
        if not path.is_file():
            raise ScenarioError(
                str(path), "expectations", f"{declared_by} declares this file; it is missing"
            )
        files.append(read(path, root))
    for file in files:
        if file.backend != backend:
            raise ScenarioError(
                file.shown,
                "backend",
                f"the file is for backend {file.backend!r}, used for backend {backend!r}",
            )
        validate(file, facts)
    by_id = {}
    for f in facts:
        by_id.setdefault(f.id, f)
    return ExpectationTable(backend, tuple(e for file in files for e in file.entries), by_id)
