"""Loading a suite file: its scenarios expanded over their axes (the product of the values,
less `exclude` rules), each combination validated into an instance with a stable id
``<suite>/<scenario>[<axis value>-...]``; and finding suite files under a path."""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from gemmconf.scenario.axes import as_ids, value_id
from gemmconf.scenario.model import ScenarioError, ScenarioInstance
from gemmconf.scenario.schema import (
    AXIS_FIELDS,
    FILE_FIELDS,
    MAX_ELEMENTS,
    NAME_RE,
    SCENARIO_FIELDS,
    Raw,
    build,
    reject_unknown,
)
from gemmconf.scenario.source import SUITE_SUFFIXES, Node, Where, load_yaml, read_source

MAX_INSTANCES = 100_000  # per scenario: past it, a typo in an axis, not a suite (--max-items)


def load_suite(
    path: str | Path,
    root: str | Path | None = None,
    *,
    max_instances: int = MAX_INSTANCES,
    max_elements: int = MAX_ELEMENTS,
) -> list[ScenarioInstance]:
    """Read one suite file and return its expanded, validated instances. A scenario whose axes
    would expand past `max_instances` is an error, before any is built; so is an instance whose
    shape set holds more than `max_elements` elements (`schema.build`).

    A process keeps the instances of the last `KEPT_FILES` files it loaded and reads a file
    again only when it changed (size, modification time or inode): one that runs many pytest
    sessions (the project's own tests: 1,882 loads of the suite's files in one run of them,
    1,480 of them repeats in the same process, 96 s of CPU) reads each file once."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError:  # read_source says what is wrong with it
        return _load_suite(path, root, max_instances, max_elements)
    # the file by where it is now and what it holds; the path and root as given name it in
    # instances and errors
    stamp = (path.absolute(), stat.st_mtime_ns, stat.st_size, stat.st_ino)
    where_from = None if root is None else Path(root)
    return list(_kept(path, where_from, max_instances, max_elements, stamp))


KEPT_FILES = 64  # suite files whose instances a process keeps (the project's suite has 27)


@functools.lru_cache(maxsize=KEPT_FILES)
def _kept(
    path: Path, root: Path | None, max_instances: int, max_elements: int, stamp: tuple
) -> tuple[ScenarioInstance, ...]:
    return tuple(_load_suite(path, root, max_instances, max_elements))


def _load_suite(
    path: Path, root: str | Path | None, max_instances: int, max_elements: int
) -> list[ScenarioInstance]:
    shown = str(path.relative_to(root)) if root and path.is_relative_to(root) else str(path)
    where = Where(shown)
    text = read_source(path, shown)
    try:
        document = load_yaml(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        field = getattr(exc, "field", "yaml")
        raise ScenarioError(f"{shown}{line}", field, str(exc.problem or exc)) from None
    if not isinstance(document, Node):
        raise ScenarioError(shown, "file", "a suite file is a mapping with a 'scenarios' list")
    reject_unknown(document, FILE_FIELDS, where, "suite file")
    suite = suite_id(document, path)
    if not isinstance(suite, str) or not NAME_RE.fullmatch(suite):
        raise where.error(
            document, "suite", f"expected a lower-case name ([a-z][a-z0-9_.]*), got {suite!r}"
        )
    defaults = document.get("defaults", Node())
    if not isinstance(defaults, Mapping):
        raise where.error(document, "defaults", "expected a mapping of scenario fields")
    reject_unknown(defaults, AXIS_FIELDS, where, "defaults")
    scenarios = document.get("scenarios")
    if not isinstance(scenarios, list) or not scenarios:
        raise where.error(document, "scenarios", "expected a non-empty list of scenarios")

    instances: list[ScenarioInstance] = []
    seen_ids: dict[str, str] = {}
    seen_names: set[str] = set()
    for scenario in scenarios:
        if not isinstance(scenario, Node):
            raise ScenarioError(
                where.at(document, "scenarios"), "scenarios", "each scenario is a mapping"
            )
        name = scenario.get("name")
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            raise where.error(
                scenario, "name", f"expected a lower-case name ([a-z][a-z0-9_.]*), got {name!r}"
            )
        if name in seen_names:
            raise where.error(scenario, "name", f"duplicate scenario name {name!r}")
        seen_names.add(name)
        for instance in _expand(suite, scenario, defaults, where, max_instances, max_elements):
            if instance.id in seen_ids:
                raise ScenarioError(
                    instance.source,
                    "axes",
                    f"duplicate id {instance.id} (also at {seen_ids[instance.id]})",
                )
            seen_ids[instance.id] = instance.source
            instances.append(instance)
    return instances


def _expand(
    suite: str,
    scenario: Node,
    defaults: Mapping,
    where: Where,
    max_instances: int,
    max_elements: int,
) -> Iterator[ScenarioInstance]:
    reject_unknown(scenario, SCENARIO_FIELDS, where, f"scenario {scenario['name']!r}")
    axes = scenario.get("axes", Node())
    if not isinstance(axes, Mapping):
        raise where.error(scenario, "axes", "expected a mapping of axis name to a list of values")
    axis_values = _axis_values(axes, where)
    product = math.prod(len(values) for _, values, _ in axis_values)
    if product > max_instances:
        raise where.error(
            scenario,
            "axes" if "axes" in scenario else "name",
            f"the axes expand to {product:,} instances, past the limit of {max_instances:,} "
            "per scenario: split the scenario, or raise the limit (--max-items)",
        )
    excludes = _excludes(scenario, [a for a, _, _ in axis_values], where)

    # each value's id and each rule's accepted ids once, not once per combination
    rule_ids = [{a: as_ids(v, a) for a, v in rule.items()} for rule in excludes]
    used_rules: set[int] = set()
    for combo in itertools.product(*(range(len(values)) for _, values, _ in axis_values)):
        chosen = {axis: values[i] for (axis, values, _), i in zip(axis_values, combo, strict=True)}
        chosen_ids = {axis: ids[i] for (axis, _, ids), i in zip(axis_values, combo, strict=True)}
        matched = {
            index
            for index, rule in enumerate(rule_ids)
            if all(chosen_ids[a] in accepted for a, accepted in rule.items())
        }
        used_rules |= matched
        if matched:
            continue
        axes_ids = tuple(chosen_ids.items())
        suffix = "-".join(i for _, i in axes_ids)
        instance_id = f"{suite}/{scenario['name']}" + (f"[{suffix}]" if suffix else "")
        raw = _merged(defaults, scenario, axes, chosen)
        yield build(suite, instance_id, axes_ids, raw, scenario, where, max_elements)
    for index, rule in enumerate(excludes):
        if index not in used_rules:
            raise where.error(
                rule,
                next(iter(rule)),
                "this exclude rule matches no combination of the axes (a typo in a value?)",
                "exclude",
            )


def _excludes(scenario: Node, axis_names: list[str], where: Where) -> list:
    """The scenario's exclude rules, each a mapping naming axes it has."""
    excludes = scenario.get("exclude", [])
    if not isinstance(excludes, list):
        raise where.error(scenario, "exclude", "expected a list of {axis: value} mappings")
    for rule in excludes:
        if not isinstance(rule, Mapping) or not rule:
            raise where.error(scenario, "exclude", "each rule is a mapping of axis to value(s)")
        for axis in rule:
            if axis not in axis_names:
                raise where.error(
                    rule,
                    axis,
                    f"exclude names an axis the scenario does not "
                    f"have; axes: {', '.join(axis_names) or 'none'}",
                    "exclude",
                )
    return excludes


def _merged(defaults: Mapping, scenario: Node, axes: Mapping, chosen: Mapping[str, Any]) -> Raw:
    """One combination's fields, each with the node it came from: the file's defaults, then the
    scenario's own fields, then the axis values (a named case axis's value sets several)."""
    fields: dict[str, Any] = {}
    nodes: dict[str, Any] = {}
    for key, value in defaults.items():
        fields[key], nodes[key] = value, defaults
    for key, value in scenario.items():
        if key not in ("axes", "exclude"):
            fields[key], nodes[key] = value, scenario
    for axis, value in chosen.items():
        if axis in AXIS_FIELDS:
            fields[axis], nodes[axis] = value, axes
        else:
            for key, sub in value.items():
                if key != "id":
                    fields[key], nodes[key] = sub, value
    return Raw(fields, nodes)


def _axis_values(axes: Mapping, where: Where) -> list[tuple[str, list[Any], list[str]]]:
    """Each axis with its values and their ids (each computed once: an id can cost as much as
    its value is large)."""
    axis_values: list[tuple[str, list[Any], list[str]]] = []
    for axis, values in axes.items():
        if not isinstance(values, list) or not values:
            raise where.error(axes, axis, "an axis is a non-empty list of values")
        if axis not in AXIS_FIELDS:
            # A named case axis: each value is a mapping of fields (with an optional id).
            for value in values:
                if not isinstance(value, Mapping):
                    raise where.error(
                        axes,
                        axis,
                        f"{axis!r} is not a scenario field, so each "
                        "value must be a mapping of fields (a named case axis)",
                    )
                reject_unknown(value, (*AXIS_FIELDS, "id"), where, f"axis {axis!r}")
        ids = [value_id(v, axis) for v in values]
        duplicated = {i for i, n in Counter(ids).items() if n > 1}
        if duplicated:
            raise where.error(
                axes,
                axis,
                f"values give the same id {sorted(duplicated)}: give them distinct 'id's",
            )
        axis_values.append((axis, values, ids))
    return axis_values


def suite_id(document: Mapping[str, Any], path: Path) -> Any:
    """The id a suite file gives its instances: its `suite:` value, else its file name's stem."""
    return document.get("suite", path.stem)


def discover(paths: Sequence[str | Path], root: str | Path) -> list[Path]:
    """Suite files under the given paths (directories are searched for *.yaml and *.yml)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(
                x
                for x in p.rglob("*")
                if x.suffix in SUITE_SUFFIXES
                and x.is_file()
                and "expectations" not in x.relative_to(p).parts
            )
        elif p.suffix in SUITE_SUFFIXES:
            found.append(p)
    return found
