"""The `inductor_config:` field: inductor config options a seed test patched, checked at load.

A seed test reaches a GEMM through `torch._inductor.config.patch({...})`: a TMA template chosen
by a name regex, CUTLASS limited to one profiling config, extern kernels forced. What the seed
asserts (a FileCheck on the generated code, a counter, an expected NoValidChoicesError) holds
only under that config, so a port carries it as data and the inductor backends apply it around
their compile and calls (gemmconf.backends.inductor); other backends ignore it.

Suite files come from other people, so the field is checked without running anything of theirs:
option names are looked up in the installed torch's own table (`get_config_copy`, no attribute
access), values must be scalars of the option's declared type, and options that would make
inductor reach outside the item (name a program, a file or folder, a host, code to import, or
write logs and traces) are refused by name. The table is read only when a file uses the field,
from gemmconf's cache where an earlier run wrote it (importing inductor costs seconds).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import importlib
import json
import os
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gemmconf.backends.cache import cache_dir

Scalar = bool | int | float | str | None

MAX_OPTIONS = 64  # options one scenario may set
MAX_TEXT = 1000  # characters of a text value
# Options that name a program, a file or folder, a host or code to load, or that write logs,
# traces, dumps or uploads: a suite file may not set them. Matched on the words of each dotted
# part of the name (`fx_graph_remote_cache`: fx, graph, remote, cache), and whole sections.
REFUSED_WORDS = frozenset(
    [
        "cxx",
        "cc",
        "dir",
        "path",
        "logpath",
        "cmd",
        "command",
        "remote",
        "upload",
        "url",
        "host",
        "lib",
        "libs",
        "shim",
        "log",
        "trace",
        "debug",
        "dump",
        "save",
        "output",
        "custom",
        "hook",
        "worker",
        "module",
        "threads",
    ]
)
REFUSED_SECTIONS = ("trace",)


class OptionProblem(ValueError):
    """An `inductor_config` entry the loader refuses; the message says why, `option` which
    entry (None: the field as a whole)."""

    def __init__(self, message: str, option: Any = None) -> None:
        super().__init__(message)
        self.option = option


@dataclass(frozen=True)
class _Option:
    """What one option takes: its scalar classes (None: no scalar), its declared type as text."""

    scalars: tuple[type, ...] | None
    declared: str


_SCALAR_NAMES = {"bool": bool, "int": int, "float": float, "str": str, "NoneType": types.NoneType}
_CACHE_BYTES = 1 << 20  # a cached table past this is not read


@functools.cache
def _table() -> dict[str, _Option]:
    """inductor's options (dotted name -> what it takes), read once per process: from gemmconf's
    cache where an earlier run wrote it for this torch's config.py (JSON, keyed by that file's
    bytes), else from inductor itself, then cached. Importing inductor takes seconds, and every
    pytest process that loads the suite (xdist's controller and each worker) paid it."""
    return module_table("torch._inductor.config")


def module_table(module: str) -> dict[str, _Option]:
    """The options of one of torch's config modules (`torch._inductor.config`,
    `torch._dynamo.config`), from gemmconf's cache keyed by that module's source, else imported
    and cached."""
    relative = Path(*module.split(".")[1:]).with_suffix(".py")
    source = Path(torch.__file__).parent / relative
    try:
        key = hashlib.sha256(source.read_bytes() + torch.__version__.encode()).hexdigest()[:24]
    except OSError:
        return _imported(module)
    name = f"{module.split('.')[1].lstrip('_')}-options"  # inductor-options, dynamo-options
    path = cache_dir(name) / f"{key}.json"
    cached = _read(path)
    if cached is not None:
        return cached
    table = _imported(module)
    _write(path, table)
    return table


def _imported(module: str = "torch._inductor.config") -> dict[str, _Option]:
    config = importlib.import_module(module)
    get_type: Callable[[str], Any] | None = getattr(config, "get_type", None)
    table = {}
    for name, default in config.get_config_copy().items():
        declared: Any = type(default) if default is not None else None  # None: any scalar
        if get_type is not None:
            with contextlib.suppress(KeyError, AttributeError):
                declared = get_type(name)
        table[name] = _Option(_scalar_types(declared), str(declared))
    return table


def _read(path: Path) -> dict[str, _Option] | None:
    """The cached table; None where there is none or it is not one (then it is made again)."""
    try:
        if path.stat().st_size > _CACHE_BYTES:
            return None
        document = json.loads(path.read_text())
        table = {}
        for name, (scalars, declared) in document.items():
            if not isinstance(name, str) or not isinstance(declared, str):
                return None
            kinds = None if scalars is None else tuple(_SCALAR_NAMES[k] for k in scalars)
            table[name] = _Option(kinds, declared)
        return table
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _write(path: Path, table: dict[str, _Option]) -> None:
    """Written whole or not at all (another process may read it meanwhile); a cache that cannot
    be written is no error: the next process imports inductor again."""
    document = {
        name: (None if o.scalars is None else [k.__name__ for k in o.scalars], o.declared)
        for name, o in table.items()
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(json.dumps(document))
        os.replace(partial, path)
    except OSError:
        pass


def _scalar_types(declared: Any) -> tuple[type, ...] | None:
    """The scalar classes an option of `declared` type takes; None for an option that takes no
    scalar (lists, dicts, callables, classes)."""
    if declared is None or declared is Any:
        return (bool, int, float, str, type(None))
    origin = typing.get_origin(declared)
    members = typing.get_args(declared) if origin in (typing.Union, types.UnionType) else ()
    candidates = members or (declared,)
    scalars = tuple(
        c for c in candidates if c in (bool, int, float, str, type(None), types.NoneType)
    )
    return scalars or None


def _type_words(allowed: tuple[type, ...]) -> str:
    words = {bool: "true or false", int: "an integer", float: "a number", str: "text"}
    named = [words[t] for t in allowed if t in words]
    if type(None) in allowed:
        named.append("null")
    return " or ".join(named)


def _fits(value: Scalar, allowed: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in allowed
    if value is None:
        return type(None) in allowed
    if isinstance(value, int):
        return int in allowed or float in allowed
    if isinstance(value, float):
        return float in allowed
    return isinstance(value, str) and str in allowed


def _refused_reason(name: str) -> str | None:
    if not refused(name):
        return None
    return (
        "options that name a program, a file or folder, a host or code to load, or that write "
        "logs or traces, stay the user's"
    )


def refused(name: str) -> bool:
    """Whether `name` is an option a suite file may not set (REFUSED_WORDS, REFUSED_SECTIONS)."""
    parts = name.split(".")
    words = {word for part in parts for word in part.split("_")}
    return parts[0] in REFUSED_SECTIONS or not REFUSED_WORDS.isdisjoint(words)


def check_option(
    name: Any,
    value: Any,
    *,
    module: str = "torch._inductor.config",
    table: Callable[[], dict[str, _Option]] | None = None,
    refuse: Callable[[str], str | None] | None = None,
) -> tuple[str, Scalar]:
    """One entry, as the loader keeps it; OptionProblem saying what is wrong otherwise. `module`,
    `table` and `refuse` (the reason an existing option is not taken, or None) default to
    inductor's config and REFUSED_WORDS; the `dynamo_config` field passes dynamo's."""
    if not isinstance(name, str) or not name or len(name) > 200:
        raise OptionProblem(f"option names are text (an option of {module}), got {name!r:.80}")
    known = (table or _table)()
    if name not in known:
        close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise OptionProblem(f"{name!r} is no option of {module} in this torch{hint}")
    reason = (refuse or _refused_reason)(name)
    if reason is not None:
        raise OptionProblem(f"{name!r} is not taken from a suite file: {reason}")
    if isinstance(value, Mapping | list | tuple | set):
        raise OptionProblem(f"{name}: the value must be a scalar, got {value!r:.80}")
    if not isinstance(value, bool | int | float | str | types.NoneType):
        raise OptionProblem(f"{name}: the value must be a scalar, got {value!r:.80}")
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise OptionProblem(f"{name}: text of {len(value):,} characters, past {MAX_TEXT:,}")
    allowed = known[name].scalars
    if allowed is None:
        raise OptionProblem(
            f"{name} takes {known[name].declared}, not a scalar: a suite file sets scalar "
            "options only"
        )
    if not _fits(value, allowed):
        raise OptionProblem(f"{name} takes {_type_words(allowed)}, got {value!r:.80}")
    if type(value) is int and int not in allowed:  # torch.compile(options=) checks the class
        return name, float(value)
    return name, value


def check_config(
    value: Any, *, example: str = "{triton.enable_persistent_tma_matmul: true}", **option: Any
) -> tuple[tuple[str, Scalar], ...]:
    """The whole field: a mapping of option names to scalars, in the file's order; raises
    `OptionProblem` (naming the entry in `option`) at the first bad entry. `option`: what
    `check_option` takes beside the entry (another config module's table and rules)."""
    module = option.get("module", "torch._inductor.config")
    if not isinstance(value, Mapping):
        raise OptionProblem(
            f"expected a mapping of {module} option names to values, e.g. {example}"
        )
    if len(value) > MAX_OPTIONS:
        raise OptionProblem(f"{len(value)} options, past the limit of {MAX_OPTIONS}")
    entries = []
    for name, setting in value.items():
        try:
            entries.append(check_option(name, setting, **option))
        except OptionProblem as exc:
            raise OptionProblem(str(exc), name) from None
    return tuple(entries)
