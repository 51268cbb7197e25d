"""Suite YAML read with positions: every mapping remembers its line and each key's (and a block
scalar's first text line and column, for FileCheck diagnostics), and `Where` turns a node into
the `file:line` that starts every suite error. Expectation files are read the same way."""

from __future__ import annotations

from typing import Any

import yaml

from gemmconf.scenario.model import ScenarioError

SUITE_SUFFIXES = (".yaml", ".yml")  # suite and expectations files alike


class Node(dict):
    """A YAML mapping that remembers the line of itself and of each key."""

    line: int
    key_lines: dict[str, int]


class LineLoader(yaml.SafeLoader):
    pass


def construct_mapping(loader: LineLoader, node: yaml.MappingNode) -> Node:
    mapping = Node()
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.key_lines[key] = key_node.start_mark.line + 1
        if isinstance(value_node, yaml.ScalarNode) and value_node.style in ("|", ">"):
            # Block scalars start on the line after their key; FileCheck diagnostics need it.
            mapping.key_lines[f"{key}@text"] = value_node.start_mark.line + 2
            mapping.key_lines[f"{key}@col"] = block_indent(value_node.start_mark) + 1
    return mapping


def block_indent(mark: yaml.Mark) -> int:
    """The indentation of a block scalar's text: its first non-blank line after the indicator."""
    text = mark.buffer or ""
    start = text.find("\n", mark.pointer) + 1
    while 0 < start < len(text):
        end = text.find("\n", start)
        line = text[start : end if end >= 0 else len(text)]
        if line.strip(" \0"):
            return len(line) - len(line.lstrip(" "))
        start = end + 1 if end >= 0 else 0
    return 0


LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)


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
