"""results.json: one record per item, written incrementally and finished atomically.

While a run goes, records are appended to ``<results>.partial`` (JSON lines: a header line
with the run's fields, then one record a line), so a crash or an interrupt still leaves every
finished item on disk, and `read` (so every ``gemmconf report`` command) takes that file too, as
an incomplete run, when the run was killed before it could finish its results file. At the end
the records are written to ``<results>`` through a temporary file and a rename, with
``"complete": true`` only when the run finished normally. A results file is therefore either
absent, or whole and honest about itself. Records from xdist workers reach the controller
through pytest's reports, so one file holds them all; separate runs (shards, machines) are
joined by ``gemmconf report merge``.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import lzma
import os
import tempfile
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gemmconf import attribution, kinds
from gemmconf.record import OUTCOMES, Record, typed

try:
    import fcntl
except ImportError:  # Windows: no lock, and no check that another run writes the same file
    fcntl = None  # type: ignore[assignment]

FORMAT = "gemmconf-results"
VERSION = 1
FAILING = ("failed", "xpassed", "error")  # outcomes that can fail a run (see `is_failing`)
PARTIAL_HEADER = "gemmconf_partial_run"  # the key of a .partial file's first line


class ResultsError(ValueError):
    """A results file that is not ours, is truncated, or is of another version."""


class ResultsWriter:
    def __init__(self, path: Path, *, run: Mapping[str, Any], keep_previous: bool = False):
        self.path = path
        self.partial = path.with_name(path.name + ".partial")
        self.run = dict(run)
        # where the file a previous run left at `path` is kept as the run starts (the default
        # path's: a pasted one-item run line must not take a whole run's results with it)
        self.keep_previous = keep_previous
        self.previous: Path | None = None  # once kept there
        self.records: list[dict[str, Any]] = []
        self._stream = None
        self._finished = False

    @property
    def started(self) -> bool:
        """Whether the run got going (its first item was about to run): only then is a previous
        run's file replaced."""
        return self._stream is not None or self._finished

    def start(self) -> None:
        self.path.parent.mkdir(exist_ok=True)  # `writable` allowed this one missing folder only
        if self.keep_previous and self.path.is_file():
            previous = self.path.with_name(f"{self.path.stem}.previous{self.path.suffix}")
            os.replace(self.path, previous)
            self.previous = previous
        for stale in (self.path, self.partial):
            stale.unlink(missing_ok=True)  # an old run's file must not pass for this run's
        self._stream = self.partial.open("w")
        _lock(self._stream.fileno())  # held while this process lives (`writer_of`)
        header = {"format": FORMAT, "version": VERSION, **self.run}
        self._stream.write(json.dumps({PARTIAL_HEADER: header}, sort_keys=True) + "\n")
        self._stream.flush()

    def add(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        if self._stream is not None:
            self._stream.write(json.dumps(record, sort_keys=True) + "\n")
            self._stream.flush()

    def abandon(self) -> None:
        """Drop everything: the run never got going (a usage error)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self.partial.unlink(missing_ok=True)

    def finish(self, *, complete: bool, exit_status: int) -> Path:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self._finished = True
        read = typed(self.records)
        document = {
            "format": FORMAT,
            "version": VERSION,
            "complete": complete,
            "exit_status": exit_status,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            **self.run,
            **document_counts(read),
            "kind_counts": count_kinds(read),
            "records": sorted(self.records, key=lambda r: (r["id"], r["backend"])),
        }
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.path)
        self.partial.unlink(missing_ok=True)
        return self.path


def writer_of(path: Path) -> str | None:
    """The command of another live run writing the results file `path` (its ``.partial`` is
    locked while that run's process lives), else None. Two runs given one results file would
    each replace the other's records, and one would lose them all (shards started side by side
    in one folder need a --results each)."""
    partial = path.with_name(path.name + ".partial")
    try:
        handle = partial.open("rb")
    except OSError:
        return None
    with handle:
        if fcntl is None or _locked(handle.fileno()):
            return None
        try:
            header = json.loads(handle.readline()).get(PARTIAL_HEADER) or {}
        except ValueError:
            header = {}
        return str(header.get("command") or "a run whose command its file does not say")


def _lock(descriptor: int) -> None:
    """The writer's lock; where the file system has no locks (some network mounts), none."""
    if fcntl is not None:
        with contextlib.suppress(OSError):
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _locked(descriptor: int) -> bool:
    """Whether a shared lock on the file can be had, i.e. no live writer holds it."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # no locks here: no writer can be told apart
        return True
    return True  # released when the caller closes the file


def writable(path: Path, *, creatable: Path | None = None) -> str | None:
    """Why a results file cannot be written at `path` (None when it can): its folder must exist
    (only `creatable`, the default's folder, may be missing, and is made at the start of the
    run), be a folder, and take new files; `path` must not be a folder. Checked before the run,
    so that a typo is a usage error, never a tree of folders made up or a traceback at the end."""
    folder = path.parent
    if path.is_dir():
        return f"{path} is a folder; give a file name, e.g. {path / 'results.json'}"
    probe_in = folder
    if not folder.exists():
        if creatable is None or folder.resolve() != creatable.resolve():
            missing = next(
                p for p in [folder, *folder.parents] if p.parent.exists() or p == p.parent
            )
            return f"folder {missing} does not exist (create it first; gemmconf makes none)"
        probe_in = folder.parent
    if not probe_in.is_dir():
        return f"{probe_in} is not a folder"
    try:
        tempfile.TemporaryFile(dir=probe_in).close()
    except OSError as exc:
        return f"cannot write in {probe_in}: {exc.strerror or exc}"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{path} is not writable"
    return None


def count(records: Iterable[Record]) -> dict[str, int]:
    totals = dict.fromkeys(OUTCOMES, 0)
    for record in records:
        totals[record.outcome] = totals.get(record.outcome, 0) + 1
    return totals


def document_counts(records: Sequence[Record]) -> dict[str, Any]:
    """A results document's counts: records by outcome (`counts`), and per backend its passes
    by who computed them and its failures inherited by whom from (`attribution`)."""
    return {"counts": count(records), "attribution": attribution.by_backend(records)}


def is_failing(record: Record) -> bool:
    """Whether the record fails its run: failed, error, or an xpass of a strict expectation. A
    non-strict expectation's xpass (`strict: false`: a bug that shows only on some runs or
    hosts) is reported and fails nothing. Records of files written before the `xpass` field
    are told apart by their reason, which starts "[XPASS(strict)]" or "[XPASS]"."""
    if record.outcome != "xpassed":
        return record.outcome in FAILING
    if record.xpass is None:
        return not (record.reason or "").startswith("[XPASS] ")
    return record.xpass != "non-strict"


def count_kinds(
    records: Iterable[Record], outcomes: tuple[str, ...] | None = None
) -> dict[str, int]:
    """Records of the given outcomes (default: the failing records, `is_failing`) by failure
    kind, in `kinds.KINDS` order ("unsupported" and "wrong values" are counted apart, never
    together); records without a kind (an xpass) count as "(no kind)"."""
    found: dict[str, int] = {}
    for record in records:
        if is_failing(record) if outcomes is None else record.outcome in outcomes:
            kind = record.kind or ("xpass" if record.outcome == "xpassed" else "(no kind)")
            found[kind] = found.get(kind, 0) + 1
    order = {kind: i for i, kind in enumerate(kinds.KINDS)}
    return dict(sorted(found.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


GZIP_MAGIC = b"\x1f\x8b"
XZ_MAGIC = b"\xfd7zXZ\x00"
# the most bytes a results file may hold, decompressed: a run of the whole suite writes 6 MB, so
# this is some 170,000 records; a gzip or xz file of a few MB can hold many GB (a 3 MB gzip file
# of spaces decompressed to 3 GiB took 149 s and 12.8 GB to read), and is read no further than
# this
MAX_RESULTS_BYTES = 256 << 20
# the most memory the xz decoder may take: `xz -9` asks for 65 MiB; a header asking for more
# (LZMA2 allows 1.5 GiB) is refused, not obeyed
XZ_MEMLIMIT = 128 << 20


def read(path: str | Path) -> dict[str, Any]:
    """Load and check a results file (or a killed run's ``.partial``), gzip- or xz-compressed or
    not; errors name the file and what is wrong. Past `MAX_RESULTS_BYTES` (decompressed) a file
    is refused, unread beyond that."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_RESULTS_BYTES:
            raise ResultsError(_too_big(path, ""))
        data = _decompressed(path, path.read_bytes())
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsError(
            f"{path}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start}), so not "
            "a gemmconf results file"
        ) from None
    if path.name.endswith(".partial") or text.startswith(f'{{"{PARTIAL_HEADER}"'):
        document = _read_partial(path, text)
    else:
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ResultsError(f"{path}: not JSON (truncated?): {exc}") from None
        except RecursionError:
            raise ResultsError(f"{path}: JSON nested deeper than Python reads") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ResultsError(f"{path}: not a gemmconf results file (no 'format': '{FORMAT}')")
    if document.get("version") != VERSION:
        raise ResultsError(
            f"{path}: results version {document.get('version')!r}; this gemmconf "
            f"reads version {VERSION}"
        )
    if not isinstance(document.get("records"), list):
        raise ResultsError(f"{path}: 'records' is missing or not a list")
    return document


def _too_big(path: Path, how: str) -> str:
    return (
        f"{path}: holds more than {MAX_RESULTS_BYTES:,} bytes{how}, past the limit for a results "
        "file (merge fewer runs into one)"
    )


def _decompressed(path: Path, data: bytes) -> bytes:
    """`data` as it was written: a gzip or xz file (published runs are kept compressed)
    decompressed no further than MAX_RESULTS_BYTES + 1 bytes, anything else as it is."""
    if data[:2] == GZIP_MAGIC:
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
                data = stream.read(MAX_RESULTS_BYTES + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise ResultsError(f"{path}: a gzip file that does not decompress: {exc}") from None
    elif data[:6] == XZ_MAGIC:  # published runs since 2026-12-02: a third smaller than gzip
        decoder = lzma.LZMADecompressor(lzma.FORMAT_XZ, memlimit=XZ_MEMLIMIT)
        try:
            data = decoder.decompress(data, max_length=MAX_RESULTS_BYTES + 1)
        except lzma.LZMAError as exc:
            raise ResultsError(f"{path}: an xz file that does not decompress: {exc}") from None
        if len(data) <= MAX_RESULTS_BYTES and not decoder.eof:
            raise ResultsError(f"{path}: an xz file that does not decompress: it is cut short")
    else:
        return data
    if len(data) > MAX_RESULTS_BYTES:
        raise ResultsError(_too_big(path, " decompressed"))
    return data


def _read_partial(path: Path, text: str) -> dict[str, Any]:
    """A ``.partial`` stream as an incomplete results document. A last line cut short by the kill
    is dropped (and counted in ``dropped_lines``); a bad line before it is an error. Files written
    before partial files had a header line hold records alone."""
    lines = text.splitlines()
    rows: list[dict[str, Any]] = []
    dropped = 0
    for number, line in enumerate(lines, 1):
        try:
            rows.append(json.loads(line))
        except (json.JSONDecodeError, RecursionError):
            if number == len(lines):
                dropped = 1
                break
            raise ResultsError(
                f"{path}:{number}: not a JSON line in a partial results file"
            ) from None
    has_header = bool(rows) and isinstance(rows[0], dict) and PARTIAL_HEADER in rows[0]
    header = rows[0][PARTIAL_HEADER] if has_header else {}
    if not isinstance(header, dict):
        raise ResultsError(f"{path}:1: the header line of a partial results file is no object")
    records = rows[1:] if has_header else rows
    return {
        "format": FORMAT,
        "version": VERSION,
        **header,
        "complete": False,
        "exit_status": None,
        "finished": None,
        "from_partial": True,
        "dropped_lines": dropped,
        **document_counts(_countable(records)),
        "records": sorted(records, key=_order),
    }


def _countable(rows: list[Any]) -> list[Record]:
    """The rows of a partial file that read as records (`merge.load` names the others)."""
    found = []
    for row in rows:
        try:
            found.append(Record.from_json(row))
        except ValueError:
            continue
    return found


def _order(record: Any) -> tuple[str, str]:
    """A record's place in a file read from disk, where a record may lack its fields or be no
    object at all (`merge.load` then says which)."""
    if not isinstance(record, dict):
        return ("", "")
    return (str(record.get("id")), str(record.get("backend")))
