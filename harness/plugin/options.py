"""gemmconf's command-line options, registered so that they cannot break a project's own.

Every option has a name of its own, `--gemmconf-backend`, stored under its own dest
(`gemmconf_backend`), registered with the plugin. Its short name, `--backend`, is added once the
project's initial conftest.py files have declared their options, and only where the project has
not taken it: a project whose conftest defines `--backend` runs as before (its `--backend` is its
own), and gives gemmconf's with `--gemmconf-backend`.

Each feature module declares its options as data, `OPTIONS = (Option("--backend", ...), ...)`,
registers them with `pytest_addoption = registrar(OPTIONS)` (or `declare(parser, OPTIONS)` in a
`pytest_addoption` of its own that adds more), and reads them with
`get(config, "backend")`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

GROUP = ("gemmconf", "gemmconf conformance suite")
PREFIX = "gemmconf"

# The options each parser was given, for the short names and for `given` (a parser is one run's).
_DECLARED: weakref.WeakKeyDictionary[pytest.Parser, list[Declared]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Declared:
    short: str  # --backend
    long: str  # --gemmconf-backend
    dest: str  # gemmconf_backend
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def default(self) -> Any:
        return self.attrs.get("default")


def dest_of(name: str) -> str:
    """`--backend` (or `backend`) -> `gemmconf_backend`."""
    return f"{PREFIX}_" + name.lstrip("-").replace("-", "_")


class OptionGroup:
    """pytest's "gemmconf" option group, registering each option under both names."""

    def __init__(self, parser: pytest.Parser):
        self.parser = parser
        self.group = parser.getgroup(*GROUP)

    def addoption(self, name: str, **attrs: Any) -> None:
        if not name.startswith("--") or "dest" in attrs:
            raise ValueError(f"gemmconf options are long options without a dest: {name!r}")
        declared = Declared(name, f"--{PREFIX}-{name[2:]}", dest_of(name), dict(attrs))
        shown = dict(attrs)
        shown["help"] = f"{attrs.get('help', '')} [short: {name}, where the project has none]"
        self.group.addoption(declared.long, dest=declared.dest, **shown)
        _DECLARED.setdefault(self.parser, []).append(declared)


@dataclass(frozen=True)
class Option:
    """One option a feature declares: its long name, its help, and argparse's attributes that it
    sets (`declare` passes `default` always, the others where given)."""

    name: str
    help: str
    default: Any = None
    metavar: str | None = None
    action: str | None = None
    type: Callable[[str], Any] | None = None
    choices: Sequence[str] | None = None

    def attrs(self) -> dict[str, Any]:
        """argparse's keywords: the default and help, and the others this option sets (a flag
        takes no metavar)."""
        others = {
            "metavar": self.metavar,
            "action": self.action,
            "type": self.type,
            "choices": self.choices,
        }
        given = {k: v for k, v in others.items() if v is not None}
        return {"default": self.default, "help": self.help, **given}


def flag(name: str, help: str) -> Option:
    """An option that turns something on (off unless given)."""
    return Option(name, help, default=False, action="store_true")


def declare(parser: pytest.Parser, declared: Iterable[Option]) -> None:
    """Register a feature's options (from its `pytest_addoption`)."""
    group = OptionGroup(parser)
    for option in declared:
        group.addoption(option.name, **option.attrs())


def registrar(declared: Sequence[Option]) -> Callable[[pytest.Parser], None]:
    """A feature's `pytest_addoption`: it registers `declared` (`pytest_addoption =
    registrar(OPTIONS)`, after the options)."""

    def pytest_addoption(parser: pytest.Parser) -> None:
        declare(parser, declared)

    return pytest_addoption


def get(config: pytest.Config, name: str) -> Any:
    return config.getoption(dest_of(name))


def number(
    option: str,
    text: str,
    convert: Callable[[str], Any],
    valid: Callable[[Any], bool],
    expected: str,
) -> Any:
    """An option's number: `text` read by `convert` (int, float) where `valid` holds it; else a
    usage error, `--option: expected <expected>, got 'text'`."""
    try:
        value = convert(text)
    except ValueError:
        value = None
    if value is None or not valid(value):
        raise pytest.UsageError(f"{option}: expected {expected}, got {text!r}")
    return value


def add_short_names(parser: pytest.Parser) -> list[str]:
    """Add `--backend` beside `--gemmconf-backend`, ... where the name is free; the names the
    project took are returned."""
    taken = []
    arguments = parser.getgroup(*GROUP)
    for declared in _DECLARED.get(parser, []):
        try:
            arguments.addoption(declared.short, dest=declared.dest, **_hidden(declared.attrs))
        except (ValueError, argparse.ArgumentError):
            taken.append(declared.short)
    return taken


def _hidden(attrs: dict[str, Any]) -> dict[str, Any]:
    return {**attrs, "help": argparse.SUPPRESS}


DECLARED = pytest.StashKey[list[Declared]]()
TAKEN = pytest.StashKey[list[str]]()


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> Any:
    """After the project's initial conftests declared their options: the short names."""
    result = yield
    early_config.stash[TAKEN] = add_short_names(parser)
    early_config.stash[DECLARED] = list(_DECLARED.get(parser, []))
    return result


def declared(config: pytest.Config) -> list[Declared]:
    return config.stash.get(DECLARED, [])


def taken(config: pytest.Config) -> list[str]:
    """Short names the project's own options took (gemmconf's are then --gemmconf-NAME only)."""
    return config.stash.get(TAKEN, [])


def given(config: pytest.Config) -> list[str]:
    """The gemmconf options this run was given (on the command line, in PYTEST_ADDOPTS or the
    ini's addopts), by the name used."""
    words = [*config.invocation_params.args, *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
    words += config.getini("addopts")
    found = []
    for option in declared(config):
        names = (option.long,) if option.short in taken(config) else (option.short, option.long)
        named = [w.split("=")[0] for w in words if w.split("=")[0] in names]
        if named or config.getoption(option.dest) != option.default:
            found.append(named[0] if named else option.long)
    return found


def numprocesses(config: pytest.Config) -> int | None:
    """xdist's -n as a number of workers (None: no xdist)."""
    value = getattr(config.option, "numprocesses", None)
    return value if isinstance(value, int) else (os.cpu_count() if value == "auto" else None)
