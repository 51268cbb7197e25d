"""What an expectation entry can name about an instance (`Facts`), and the whole suite's facts
remembered across processes (`suite_facts`).

Every pytest process validates each expectation entry against every instance of the suite, so
each one expanded all of the suite's files: 27 files, 3,954 instances and 55 FileCheck runs (the
check blocks' syntax), about 1 CPU-second on the 2-core dev CPU, in every xdist worker and in each
of the ~100 pytest processes the project's own tests start. A file's facts are stored in
gemmconf's cache (`$GEMMCONF_CACHE/suite-facts`, else ~/.cache/gemmconf) under a key made of the
file's bytes, the gemmconf code that reads it, the FileCheck that validates its blocks, the torch
version and the run's expansion limits; a file read again under the same key is not expanded. A
file that fails to load is never stored: its error is raised every time, naming file, line and
field as `load_suite` does.

A cache file is JSON read with its shape checked; one that is not what this module writes, or is
larger than `MAX_CACHE_BYTES`, is a miss and is written again. The folder keeps the
`KEPT_ENTRIES` newest files.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemmconf.scenario.model import ScenarioInstance, implied_markers

__all__ = ["CACHE_NAME", "Facts", "suite_facts"]

CACHE_NAME = "suite-facts"  # the folder under gemmconf's cache
FORMAT = "gemmconf-suite-facts"
VERSION = 1
MAX_CACHE_BYTES = 64 << 20  # the suite's 27 files: 0.9 MB in all
KEPT_ENTRIES = 512  # past it, the oldest files go


@dataclass(frozen=True)
class Facts:
    """What an entry can name about one instance: the fields its results record carries."""

    id: str
    suite: str = ""
    scenario: str = ""
    op: str = ""
    dtype: str = ""
    markers: tuple[str, ...] = ()
    axes: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, instance: ScenarioInstance | Facts | str) -> Facts:
        if isinstance(instance, Facts):
            return instance
        if isinstance(instance, str):  # an id alone: field patterns never match it
            return cls(instance)
        return cls(
            instance.id,
            instance.suite,
            instance.name,
            instance.op,
            instance.dtype,
            tuple(implied_markers(instance)),
            instance.axes,
        )

    def as_json(self) -> list[Any]:
        axes = [list(pair) for pair in self.axes]
        return [self.id, self.suite, self.scenario, self.op, self.dtype, list(self.markers), axes]

    @classmethod
    def from_json(cls, row: Any) -> Facts:
        """The facts of one stored row; ValueError where the row is not what `as_json` wrote."""
        if not (isinstance(row, list) and len(row) == 7 and _strings(row[:5])):
            raise ValueError("not a facts row")
        markers, axes = row[5], row[6]
        if not (isinstance(markers, list) and _strings(markers) and isinstance(axes, list)):
            raise ValueError("not a facts row")
        if not all(isinstance(pair, list) and len(pair) == 2 and _strings(pair) for pair in axes):
            raise ValueError("not a facts row")
        return cls(*row[:5], tuple(markers), tuple((axis, value) for axis, value in axes))


def _strings(values: Sequence[Any]) -> bool:
    return all(isinstance(value, str) for value in values)


def suite_facts(
    paths: Sequence[Path],
    load: Callable[[Path], Sequence[ScenarioInstance]],
    *,
    limits: tuple[int, int],
    cache: Path | None,
) -> list[Facts]:
    """The facts of every instance of `paths`, in file order: from `cache` where a file's key
    is stored there, else from `load(path)` (which raises a file's errors), then stored.
    `limits` (max instances, max elements) are part of the key; `cache` None stores nothing."""
    facts: list[Facts] = []
    for path in paths:
        file = None if cache is None else _entry(cache, path, limits)
        stored = None if file is None else _read(file)
        if stored is None:
            stored = [Facts.of(instance) for instance in load(path)]
            if file is not None:
                _write(file, stored)
        facts.extend(stored)
    return facts


def _entry(cache: Path, path: Path, limits: tuple[int, int]) -> Path | None:
    """The cache file of `path`'s facts under this code and these limits; None where the file
    cannot be read (`load` then says why)."""
    try:
        content = path.read_bytes()
    except OSError:
        return None
    key = hashlib.sha256(_fingerprint().encode())
    key.update(repr(limits).encode())
    key.update(content)
    return cache / f"{key.hexdigest()}.json"


@functools.lru_cache(maxsize=1)
def _fingerprint() -> str:
    """What, besides a file's bytes, decides its instances and whether it is valid: gemmconf's
    own files (3.6 ms to hash its 112 modules on the dev CPU), torch's version (the dtypes it
    has) and which FileCheck validates check blocks (`codecheck.engine_identity`)."""
    import torch

    import gemmconf
    from gemmconf import codecheck

    digest = hashlib.sha256()
    package = Path(gemmconf.__file__).parent
    for file in sorted(package.rglob("*")):
        if file.is_file() and "__pycache__" not in file.parts:
            digest.update(str(file.relative_to(package)).encode() + b"\0")
            digest.update(file.read_bytes())
    digest.update(f"torch {torch.__version__}\0{codecheck.engine_identity()}".encode())
    return digest.hexdigest()


def _read(file: Path) -> list[Facts] | None:
    """The facts stored in `file`, or None (absent, too large, or not what `_write` wrote)."""
    try:
        if file.stat().st_size > MAX_CACHE_BYTES:
            return None
        document = json.loads(file.read_text(encoding="utf-8"))
        if document.get("format") != FORMAT or document.get("version") != VERSION:
            return None
        facts = [Facts.from_json(row) for row in document["facts"]]
        os.utime(file)  # kept among the newest
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return facts


def _write(file: Path, facts: list[Facts]) -> None:
    """Store `facts` in `file` whole or not at all (a temporary file renamed into place); a
    cache that cannot be written is no error."""
    document = {"format": FORMAT, "version": VERSION, "facts": [f.as_json() for f in facts]}
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=file.parent, prefix=".facts-", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(document, out, separators=(",", ":"))
        os.replace(temporary, file)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return
    _prune(file.parent)


def _prune(folder: Path) -> None:
    """Keep the `KEPT_ENTRIES` newest cache files (by modification time, which a read renews)."""
    with contextlib.suppress(OSError):
        entries = [entry for entry in os.scandir(folder) if entry.name.endswith(".json")]
        if len(entries) <= KEPT_ENTRIES:
            return
        entries.sort(key=lambda entry: entry.stat().st_mtime_ns)
        for entry in entries[: len(entries) - KEPT_ENTRIES]:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
