"""Suite YAML read with positions: every mapping remembers its line and each key's (and a block
scalar's first text line and column, for FileCheck diagnostics), and `Where` turns a node into
the `file:line` that starts every suite error. Expectation files are read the same way.

Suite and expectations files come from other people (a shared suite folder, a backend package),
so reading one may cost only bounded time and memory and may put nothing on a terminal: before a
loader builds anything, `screen` walks the document's parse events (libyaml's parser keeps no
recursion, and stops at the first problem) and refuses, naming the line and field, a document
nested deeper than `MAX_DEPTH` (100,000 nested brackets crashed the composer), one of more than
`MAX_NODES` values, lists and mappings, one whose aliases expand past `MAX_EXPANDED` (error
messages and ids expand them: nine levels of nine aliases ran out of 8 GB), a recursive alias,
and control characters in values (an escape sequence in an id or a reason reached the terminal
raw). Files past `MAX_FILE_BYTES` are refused unread."""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gemmconf.scenario.model import ScenarioError

SUITE_SUFFIXES = (".yaml", ".yml")  # suite and expectations files alike
# The shipped files: at most 23 KB, 2,219 values, lists and mappings, 17,000 characters of
# values, nested 8 deep. The limits leave 45 times that room, and keep loading a file under a
# second of CPU and its error messages (which repr() values, aliases written out) small.
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 64  # mappings and lists inside each other
MAX_NODES = 100_000  # values, lists, mappings and aliases as written
# the document with every alias written out: characters of its values, 16 for each node
MAX_EXPANDED = 8 << 20
NODE_WEIGHT = 16
# C0 and C1 controls and DEL, but tab and newline: what a terminal acts on instead of showing
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class InputLimitError(yaml.MarkedYAMLError):
    """A document `screen` refuses: `problem` says why, `problem_mark` where, `field` in which
    field (the nearest key around it)."""

    def __init__(self, problem: str, mark: Any, field: str = "yaml"):
        super().__init__(problem=problem, problem_mark=mark)
        self.field = field


def read_source(path: Path, shown: str) -> str:
    """A suite or expectations file's text; a file past `MAX_FILE_BYTES`, missing, or not UTF-8
    is a `ScenarioError` naming it, before any of it is read."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ScenarioError(
                shown,
                "file",
                f"{size:,} bytes, past the limit of {MAX_FILE_BYTES:,} for a suite or "
                "expectations file (split it)",
            )
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(shown, "file", "no such file") from None
    except (UnicodeDecodeError, OSError) as exc:
        raise ScenarioError(shown, "file", f"cannot be read as UTF-8 text: {exc}") from None


def screen(text: str) -> None:
    """Raise `InputLimitError` where `text` is longer than `MAX_FILE_BYTES`, nests past
    `MAX_DEPTH`, holds more than `MAX_NODES` nodes, expands past `MAX_EXPANDED` through aliases,
    holds an alias inside the node it names, or a control character (but tab and newline) in a
    value or key. A document that does not parse passes: the loader words that error as it
    always has."""
    if len(text) > MAX_FILE_BYTES:
        raise InputLimitError(
            f"{len(text):,} characters, past the limit of {MAX_FILE_BYTES:,}", None, "file"
        )
    parser = (_CParser or yaml.SafeLoader)(text)
    walk = _Screen()
    try:
        while parser.check_event() and walk.take(parser.get_event()):
            pass
    except InputLimitError:
        raise
    except yaml.YAMLError:
        return  # the loader reports it, worded as always
    finally:
        parser.dispose()


@dataclass
class _Frame:
    """An open mapping or list (or the document) as `_Screen` walks it."""

    mapping: bool = False
    expects_key: bool = False  # a mapping's next node is a key
    key: Any = None  # the key whose value is being read
    size: int = 0  # characters of its nodes so far, aliases written out
    anchor: str | None = None


class _Screen:
    """One document's parse events, counted: depth, nodes, size with aliases written out."""

    def __init__(self) -> None:
        self.frames = [_Frame()]
        self.anchors: dict[str, int] = {}  # the written-out size of each finished anchored node
        self.total = self.nodes = 0

    def take(self, event: yaml.Event) -> bool:
        """Count one event; False where the rest is the loader's to report."""
        if isinstance(event, yaml.ScalarEvent):
            self.scalar(event)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in self.anchors:
                return self.unknown_alias(event)
            self.add(self.anchors[event.anchor], event.start_mark)
        elif isinstance(event, yaml.CollectionStartEvent):
            self.start(event)
            return True
        elif isinstance(event, yaml.CollectionEndEvent):
            done = self.frames.pop()
            self.frames[-1].size += done.size
            if done.anchor is not None:
                self.anchors[done.anchor] = done.size
        else:
            return True
        top = self.frames[-1]
        top.expects_key = top.mapping and not top.expects_key  # keys and values alternate
        return True

    def field(self) -> str:
        """The nearest key around the event: the field an error names."""
        keys = (f.key for f in reversed(self.frames) if f.mapping and f.key is not None)
        return str(next(keys, "yaml"))

    def scalar(self, event: yaml.ScalarEvent) -> None:
        _refuse_controls(event, self.field)
        top = self.frames[-1]
        if top.mapping and top.expects_key:
            top.key = event.value
        if event.anchor is not None:
            self.anchors[event.anchor] = len(event.value) + NODE_WEIGHT
        self.add(len(event.value) + NODE_WEIGHT, event.start_mark)

    def unknown_alias(self, event: yaml.AliasEvent) -> bool:
        if not any(f.anchor == event.anchor for f in self.frames):
            return False  # an undefined alias: the loader says so
        raise InputLimitError(
            f"alias *{event.anchor} inside the node &{event.anchor} it names (a recursive "
            "structure)",
            event.start_mark,
            self.field(),
        )

    def start(self, event: yaml.CollectionStartEvent) -> None:
        if len(self.frames) > MAX_DEPTH:
            raise InputLimitError(
                f"nested more than {MAX_DEPTH} mappings or lists deep",
                event.start_mark,
                self.field(),
            )
        mapping = isinstance(event, yaml.MappingStartEvent)
        self.frames.append(_Frame(mapping, mapping, anchor=event.anchor))
        self.add(NODE_WEIGHT, event.start_mark)
        if event.anchor is not None:
            self.anchors.pop(event.anchor, None)  # redefined: in progress until it ends

    def add(self, size: int, mark: Any) -> None:
        self.total += size
        self.frames[-1].size += size
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise InputLimitError(
                f"more than {MAX_NODES:,} values, lists and mappings", mark, self.field()
            )
        if self.total > MAX_EXPANDED:
            raise InputLimitError(
                f"with its aliases written out the document holds more than {MAX_EXPANDED:,} "
                f"characters, counting {NODE_WEIGHT} for each value, list and mapping (an alias "
                "bomb?)",
                mark,
                self.field(),
            )


def _refuse_controls(event: yaml.ScalarEvent, field) -> None:
    value = event.value
    found = _CONTROL.search(value)
    bad = value[found.start()] if found else None
    if bad is None and not value.isascii():  # format characters: bidi overrides, zero widths
        bad = next((c for c in value if unicodedata.category(c) == "Cf"), None)
    if bad is not None:
        raise InputLimitError(
            f"control character U+{ord(bad):04X} in {value[:40]!r}: values are printed, so "
            "they hold no control characters but tab and newline",
            event.start_mark,
            field(),
        )


class Node(dict):
    """A YAML mapping that remembers the line of itself and of each key."""

    line: int
    key_lines: dict[str, int]


class _Positions:
    """Builds `Node`s: the constructor that both loaders below share, and the document's lines
    (split once, for block scalars' columns)."""

    def __init__(self, stream: str):
        super().__init__(stream)  # type: ignore[call-arg]
        self.text = stream

    @functools.cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def construct_mapping_node(self, node: yaml.MappingNode) -> Node:
        mapping = Node()
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]
            if key in mapping:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            mapping[key] = self.construct_object(value_node, deep=True)  # type: ignore[attr-defined]
            mapping.key_lines[key] = key_node.start_mark.line + 1
            if isinstance(value_node, yaml.ScalarNode) and value_node.style in ("|", ">"):
                # Block scalars start on the line after their key; FileCheck diagnostics need it.
                mapping.key_lines[f"{key}@text"] = value_node.start_mark.line + 2
                indent = block_indent(self.lines, value_node.start_mark.line)
                mapping.key_lines[f"{key}@col"] = indent + 1
        return mapping


class PyLineLoader(_Positions, yaml.SafeLoader):
    """PyYAML's pure-Python parser: its error messages are the ones users see."""


# libyaml's parser, where PyYAML was built with it: the suite's 30-odd files parse in 0.2 s
# instead of 1.9 s, in every pytest process and xdist worker.
_CParser = getattr(yaml, "CSafeLoader", None)


class LineLoader(_Positions, _CParser or yaml.SafeLoader):  # type: ignore[misc]
    """The fast loader: libyaml's where present. Use `load_yaml`, which words errors alike."""


for _loader in (PyLineLoader, LineLoader):
    _loader.add_constructor(
        yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _Positions.construct_mapping_node
    )


def load_yaml(text: str) -> Any:
    """`text` as `Node`s and plain values, once `screen` let it through (`InputLimitError`, a
    `yaml.MarkedYAMLError`, where not). A document libyaml rejects is read again by PyYAML's
    own parser, so that the error raised (`yaml.MarkedYAMLError`) says what it always said."""
    screen(text)
    try:
        return yaml.load(text, Loader=LineLoader)
    except yaml.MarkedYAMLError:
        if _CParser is None:
            raise
        return yaml.load(text, Loader=PyLineLoader)


def block_indent(lines: list[str], indicator_line: int) -> int:
    """The indentation of a block scalar's text: its first non-blank line after the indicator's
    line (0-based)."""
    for line in lines[indicator_line + 1 :]:
        if line.strip(" "):
            return len(line) - len(line.lstrip(" "))
    return 0


def line_of(node: Any, key: str | None = None) -> int | None:
    if isinstance(node, Node):
        if key is not None and key in node.key_lines:
            return node.key_lines[key]
        return node.line
    return None


class Where:
    """Builds `file:line` strings for errors from the node being read."""

    def __init__(self, path: str):
        self.path = path

    def at(self, node: Any, key: str | None = None) -> str:
        line = line_of(node, key)
        return f"{self.path}:{line}" if line else self.path

    def error(self, node: Any, key: str, message: str, field_name: str | None = None):
        return ScenarioError(self.at(node, key), field_name or key, message)
