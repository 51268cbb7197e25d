"""Suite YAML read with positions: every mapping remembers its line and each key's (and a block
scalar's first text line and column, for FileCheck diagnostics), and `Where` turns a node into
the `file:line` that starts every suite error. Expectation files are read the same way."""

from __future__ import annotations

import functools
from typing import Any

import yaml

from gemmconf.scenario.model import ScenarioError

SUITE_SUFFIXES = (".yaml", ".yml")  # suite and expectations files alike


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
    """`text` as `Node`s and plain values. A document libyaml rejects is read again by PyYAML's
    own parser, so that the error raised (`yaml.MarkedYAMLError`) says what it always said."""
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
