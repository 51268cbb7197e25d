"""FileCheck code checks on a backend's generated code (suites/README.md, `checks.filecheck`).

A scenario carries `CheckBlock`s: FileCheck directives for one artifact kind ("ttgir", "ptx", ...)
and optionally one target class ("sm90"). `split_by_target` separates the blocks for the run's
target from the others, which are "not run here" (`NotRunHere`, data for the record, never
dropped); `check_artifacts` runs the former against the artifacts a backend produced.

The matching is done by a FileCheck program through its public command line (`Engine`):
LLVM's `FileCheck` where the installed triton wheel ships it (`<triton>/FileCheck`), else the
`filecheck` package's `filecheck CHECK_FILE --input-file INPUT`. `GEMMCONF_FILECHECK` picks one:
the path of an LLVM FileCheck binary, or `filecheck` for the package. Every result names its
engine. The two read regexes differently (`{{...}}` is POSIX ERE in LLVM, Python `re` in the
package): write regexes both accept.

Diagnostics are the engine's own (only cut after `_MAX_LINES` lines). The block's text is written
to a temporary copy of the suite file's path, at the block's own line (blank lines before it) and
indentation, so FileCheck names the suite file and line itself:

    suites/tma/codecheck.yaml:53:9: error: CHECK: expected string not found in input
     CHECK: ttng.async_tma_copy_global_to_local
            ^
    <ttgir>:2:31: note: scanning from here

Lines are the suite file's; columns are counted the way FileCheck counts them, after it folds each
run of blanks into one (an indented line's column is smaller than an editor's), and in the
expanded text (a column after a substitution on the same line moves by the length difference).

Substitutions, lit-style: `%{name}` in a block expands to `IR_SPELLINGS[name]`, the installed
Triton's spelling of an IR op, before FileCheck sees the text. An unknown name, or a name spelled
for another artifact kind, is an error at load time.

`validate_block` runs at load time, so a malformed block fails collection naming its file and
line. It makes a small own pre-check for what FileCheck ignores without a word (a block holds
nothing but directives and comments, so a line that is neither is a typo such as `CHECK-NXT:` or a
forgotten `CHECK:`; a block needs a directive; substitutions must exist), then, with LLVM
FileCheck, reads the block with an empty input and `--allow-empty`: exit status 2 means FileCheck
rejected the check file (an unclosed `{{`, an empty pattern, a `CHECK-NEXT:` with nothing before
it), and its diagnostic is the error. The `filecheck` package exits 1 both for a malformed check
file and for a failed match, so with it the pre-check is all that runs at load time and a syntax
error shows as a failed code check.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

# Op names in Triton's IR and PTX that prove a code path was taken: name -> (artifact kind, text).
# Seen with triton 3.6 (GPU machine) and 3.7 (CPU machine), which spell them alike; a Triton that
# renames one is one edit here. Suites write `%{name}`.
IR_SPELLINGS: dict[str, tuple[str, str]] = {
    "wgmma": ("ttgir", "ttng.warp_group_dot"),
    "tma_load": ("ttgir", "ttng.async_tma_copy_global_to_local"),
    "tensormap_create": ("ttgir", "ttng.tensormap_create"),
    "tcgen05_mma": ("ttgir", "ttng.tc_gen5_mma"),
    "mma_sync": ("ptx", "mma.sync"),
    "wgmma_ptx": ("ptx", "wgmma.mma_async"),
    "cp_async_bulk_tensor": ("ptx", "cp.async.bulk.tensor"),
}

ENGINE_ENV = "GEMMCONF_FILECHECK"
DIRECTIVES = (
    "CHECK:",
    "CHECK-NEXT:",
    "CHECK-SAME:",
    "CHECK-NOT:",
    "CHECK-DAG:",
    "CHECK-LABEL:",
    "CHECK-EMPTY:",
    "CHECK-COUNT-<n>:",
)

_DIRECTIVE = re.compile(
    r"(?<![A-Za-z0-9_-])CHECK(-(NEXT|SAME|NOT|DAG|LABEL|EMPTY|COUNT-[0-9]+))?(\{LITERAL\})?:"
)
_COMMENT = re.compile(r"(?<![A-Za-z0-9_-])(COM|RUN):")
_SUBSTITUTION = re.compile(r"%\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TIMEOUT_S = 120
_MAX_LINES = 60  # of an engine's diagnostic


@dataclass(frozen=True)
class CheckBlock:
    """One FileCheck block from a scenario file."""

    artifact: str  # "python", "triton", "ttir", "ttgir", "ptx", "cuda", ...
    text: str  # FileCheck directives, with %{name} substitutions
    source: str  # "suites/dense.yaml:42" or "...:42:7": where the text starts (line, column)
    target: str | None = None  # "sm80"/"sm90"/"sm100"; None: any target


@dataclass(frozen=True)
class CodeCheckResult:
    block: CheckBlock
    passed: bool
    diagnostic: str  # "" when passed, else the engine's diagnostic; its first line stands alone
    engine: str  # which FileCheck judged: Engine.name, "" when none ran (no artifact to check)


@dataclass(frozen=True)
class NotRunHere:
    """A block for another target than the run's: recorded, not run."""

    artifact: str
    target: str
    source: str
    reason: str

    def record(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class BlockProblem:
    """What is wrong with a block: the suite line at fault and what (may hold FileCheck's lines)."""

    where: str  # "suites/tma/codecheck.yaml:49"
    message: str

    def __str__(self) -> str:
        return f"{self.where}: error: {self.message}"


@dataclass(frozen=True)
class Engine:
    """A FileCheck program and how to call it."""

    name: str  # "llvm-filecheck" or "filecheck-package"
    argv: tuple[str, ...]  # the command, before the check file
    match_flags: tuple[str, ...]  # flags for a match, after the check file
    # the exit status that means "malformed check file" (LLVM: 2); None where it cannot be told
    # from a failed match (the filecheck package exits 1 for both)
    syntax_status: int | None

    @property
    def version(self) -> str:
        return _version(self)


def default_engine() -> Engine:
    """LLVM FileCheck from the triton wheel if it is there, else the `filecheck` package."""
    return _default_engine(os.environ.get(ENGINE_ENV, ""))


def engine_identity() -> str:
    """What decides which FileCheck `default_engine` takes and how it judges a block, found
    without running one: the choice in $GEMMCONF_FILECHECK, the binary the triton wheel ships
    (its size and modification time) and the filecheck package's version."""
    parts = [os.environ.get(ENGINE_ENV, "")]
    for binary in (os.environ.get(ENGINE_ENV, ""), _triton_filecheck()):
        with contextlib.suppress(OSError, TypeError):
            stat = os.stat(binary)
            parts.append(f"{binary} {stat.st_size} {stat.st_mtime_ns}")
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        parts.append(importlib.metadata.version("filecheck"))
    return "\0".join(parts)


def available_engines() -> list[Engine]:
    """Every engine this machine has (the package always; LLVM FileCheck when found)."""
    engines = [_package_engine()]
    binary = _triton_filecheck()
    if binary is not None and _runs(binary):
        engines.insert(0, _llvm_engine(binary))
    return engines


def expand(text: str) -> str:
    """The block's text with every known `%{name}` replaced by its spelling."""
    return _SUBSTITUTION.sub(
        lambda m: IR_SPELLINGS[m.group(1)][1] if m.group(1) in IR_SPELLINGS else m.group(0), text
    )


def split_by_target(
    blocks: Iterable[CheckBlock], target: str | None
) -> tuple[list[CheckBlock], list[NotRunHere]]:
    """The blocks that run on `target` (theirs or target-less), and the others, with why not."""
    to_run, not_run = [], []
    for block in blocks:
        if block.target is None or block.target == target:
            to_run.append(block)
            continue
        here = (
            f"this run checks {target} code"
            if target is not None
            else "this run has no code-check target (no --target-arch, no GPU of a checked class)"
        )
        not_run.append(
            NotRunHere(
                block.artifact,
                block.target,
                block.source,
                f"checks {block.target} code; {here} (an {block.target} GPU runs it, or "
                f"--target-arch {block.target} with a backend that cross-compiles)",
            )
        )
    return to_run, not_run


def check_artifacts(
    blocks: Iterable[CheckBlock],
    artifacts: Mapping[str, str],
    *,
    target: str | None,
    engine: Engine | None = None,
) -> list[CodeCheckResult]:
    """Run each block whose target is None or `target` against the artifact of its kind.

    Blocks for other targets are left out (`split_by_target` says which and why). A block whose
    artifact kind the backend did not produce fails, naming the kinds it did produce.
    """
    results = []
    for block in split_by_target(blocks, target)[0]:
        text = artifacts.get(block.artifact)
        if text is None:
            given = ", ".join(sorted(artifacts)) or "none"
            results.append(
                CodeCheckResult(
                    block,
                    False,
                    f"{_Source.parse(block.source).at}: error: no '{block.artifact}' artifact to "
                    f"check (the backend gave: {given})",
                    "",
                )
            )
            continue
        results.append(
            run_filecheck(block, text, artifact_name=f"<{block.artifact}>", engine=engine)
        )
    return results


def run_filecheck(
    block: CheckBlock,
    artifact_text: str,
    *,
    artifact_name: str = "<artifact>",
    engine: Engine | None = None,
) -> CodeCheckResult:
    """Match one block against one artifact's text with `engine` (default: `default_engine()`)."""
    engine = engine or default_engine()
    where = _Source.parse(block.source)
    problem = _pre_check(block.text, block.artifact, where)
    if problem is not None:
        return CodeCheckResult(block, False, str(problem), "")
    if not artifact_text.strip():
        return CodeCheckResult(
            block,
            False,
            f"{where.at}: error: {artifact_name} is empty: the backend generated no "
            f"{block.artifact} code to check",
            "",
        )
    if engine.name == "filecheck-package" and not artifact_text.endswith("\n"):
        artifact_text += "\n"  # filecheck 1.0.6 leaves a final unterminated character out of -NOT
    status, diagnostic = _run(engine, expand(block.text), where, artifact_name, artifact_text)
    return CodeCheckResult(block, status == 0, "" if status == 0 else diagnostic, engine.name)


def validate_block(
    text: str, *, source: str, artifact: str | None = None, engine: Engine | None = None
) -> BlockProblem | None:
    """None when `text` is a well-formed block, else what is wrong and at which suite line.

    `source` is where the text starts ("suites/dense.yaml:42" or "...:42:7"); `artifact`, the
    block's kind, lets a %{name} spelled for another kind be caught.
    """
    return _validate(text, source, artifact, engine or default_engine())


def expecttest_accept_conflict(
    env: Mapping[str, str], numprocesses: int | str | None, dist: str | None
) -> str | None:
    """The error to stop a run with when EXPECTTEST_ACCEPT would corrupt test files, else None.

    expecttest rewrites the calling test file in place. Under pytest-xdist with any distribution
    other than `loadfile`, several workers rewrite the same file at once (`-n 2` with the default
    `--dist load` was seen to leave syntax errors and wrong values). `numprocesses` is xdist's `-n`
    (an int, or "auto"/"logical" before xdist resolves it); `dist` is its `--dist`.
    """
    if not env.get("EXPECTTEST_ACCEPT"):  # expecttest accepts on any non-empty value
        return None
    if numprocesses in (None, 0, "0"):
        return None
    mode = dist if dist not in (None, "no") else "load"
    if mode == "loadfile":
        return None
    return (
        f"EXPECTTEST_ACCEPT={env['EXPECTTEST_ACCEPT']} with pytest-xdist (-n {numprocesses}, "
        f"--dist {mode}) lets several workers rewrite the same test file and corrupts it; "
        "accept with -n 0 or --dist loadfile"
    )


@dataclass(frozen=True)
class _Source:
    """Where a block's text starts: path, line and the column of its first character."""

    path: str
    line: int
    col: int

    @staticmethod
    def parse(source: str) -> _Source:
        m = re.fullmatch(r"(.*?):(\d+)(?::(\d+))?", source)
        if m is None:
            return _Source(source, 1, 1)
        return _Source(m.group(1), int(m.group(2)), int(m.group(3) or 1))

    @property
    def at(self) -> str:
        return f"{self.path}:{self.line}"

    def line_at(self, offset: int) -> str:
        """`path:line` of the block's line `offset` (0-based)."""
        return f"{self.path}:{self.line + offset}"


@functools.lru_cache(maxsize=4096)
def _validate(text: str, source: str, artifact: str | None, engine: Engine) -> BlockProblem | None:
    """`validate_block`, once per distinct block: a scenario's instances share their blocks."""
    where = _Source.parse(source)
    problem = _pre_check(text, artifact, where)
    if problem is not None or engine.syntax_status is None:
        return problem
    status, diagnostic = _run(engine, expand(text), where, "<empty input>", "", "--allow-empty")
    if status != engine.syntax_status:
        return None
    return BlockProblem(where.at, f"{engine.name} rejects the block:\n{diagnostic}")


def _pre_check(text: str, artifact: str | None, where: _Source) -> BlockProblem | None:
    """What FileCheck would pass over in silence: stray lines, no directive, unknown %{names}."""
    has_directive = False
    for offset, line in enumerate(text.split("\n")):
        at = where.line_at(offset)
        for m in _SUBSTITUTION.finditer(line):
            name = m.group(1)
            if name not in IR_SPELLINGS:
                close = difflib.get_close_matches(name, IR_SPELLINGS, n=1)
                hint = f" (did you mean %{{{close[0]}}}?)" if close else ""
                known = ", ".join(f"%{{{n}}}" for n in IR_SPELLINGS)
                return BlockProblem(at, f"unknown substitution %{{{name}}}{hint}; known: {known}")
            kind, spelling = IR_SPELLINGS[name]
            if artifact is not None and kind != artifact:
                return BlockProblem(
                    at,
                    f"%{{{name}}} is a {kind} spelling ({spelling}); the block checks {artifact}",
                )
        directive, comment = _DIRECTIVE.search(line), _COMMENT.search(line)
        if directive and (comment is None or directive.start() < comment.start()):
            has_directive = True
        elif line.strip() and comment is None and not line.strip().startswith("#"):
            token = re.search(r"CHECK[^\s:]*:?", line)
            what = f"unknown directive '{token.group(0)}'" if token else "not a FileCheck directive"
            return BlockProblem(
                at,
                f"{what} in {line.strip()!r} (a block holds {', '.join(DIRECTIVES)} lines, and "
                "comments: COM: or #)",
            )
    if not has_directive:
        return BlockProblem(
            where.at,
            f"no check strings found with prefix 'CHECK:' (a block needs one of "
            f"{', '.join(DIRECTIVES)})",
        )
    return None


def _run(
    engine: Engine,
    text: str,
    where: _Source,
    input_name: str,
    input_text: str,
    *flags: str,
) -> tuple[int, str]:
    """Run `engine` on `text` laid out at `where` over `input_text`: (exit status, its stderr)."""
    with tempfile.TemporaryDirectory(prefix="gemmconf-filecheck-") as tmp:
        cwd, check_file, shown = _lay_out(Path(tmp), where, text)
        input_file = _file_name(input_name)
        (cwd / input_file).write_text(input_text)
        process = subprocess.run(
            [*engine.argv, check_file, "--input-file", input_file, *engine.match_flags, *flags],
            cwd=cwd,
            capture_output=True,  # the package prints a stray "moving to ..." on stdout for -DAG
            text=True,
            timeout=_TIMEOUT_S,
        )
    lines = process.stderr.rstrip("\n").split("\n")
    if len(lines) > _MAX_LINES:  # the package follows a failed -DAG with its whole input range
        lines[_MAX_LINES:] = [f"[{len(lines) - _MAX_LINES} more lines of {engine.name} cut]"]
    diagnostic = "\n".join(lines)
    if shown != check_file:
        diagnostic = diagnostic.replace(check_file, shown)
    if process.returncode not in (0, 1, 2) or (process.returncode and not diagnostic):
        diagnostic = (
            f"{where.at}: error: {engine.name} ({' '.join(engine.argv)}) exited with status "
            f"{process.returncode}: {diagnostic or process.stdout.strip() or 'no output'}"
        )
    return process.returncode, diagnostic


def _lay_out(tmp: Path, where: _Source, text: str) -> tuple[Path, str, str]:
    """Write `text` as a copy of `where.path` with the text at its line and indentation.

    Returns the folder to run in, the check-file argument, and the name to show for it: the
    suite's own relative path ("suites/tma/codecheck.yaml", FileCheck prints what it was given);
    an absolute one is written under `tmp` and its temporary prefix replaced in the diagnostic.
    """
    indent = " " * (where.col - 1)
    body = "\n".join(indent + line if line else line for line in text.split("\n"))
    path = Path(where.path)
    if path.is_absolute():
        relative, shown = Path(*path.parts[1:]), where.path
        cwd = tmp
    else:
        ups = sum(1 for part in path.parts if part == "..")
        relative, shown = path, where.path
        cwd = tmp.joinpath(*(["_"] * ups))  # room for the `..` parts inside tmp
    target = (cwd / relative).resolve()
    if not target.is_relative_to(tmp.resolve()):
        relative, cwd = Path("check-block.txt"), tmp
        target = tmp / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    target.write_text("\n" * (where.line - 1) + body)
    check_file = str(target) if path.is_absolute() else str(relative)
    return cwd, check_file, shown


def _file_name(name: str) -> str:
    """`name` as one file name in the run folder ("<ttgir>" stays as it is)."""
    cleaned = name.replace("/", "_").replace("\0", "_").lstrip("-") or "input"
    return cleaned if cleaned not in (".", "..") else "input"


def _triton_filecheck() -> str | None:
    """The FileCheck binary the triton wheel ships, if any (found without importing triton)."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        binary = os.path.join(folder, "FileCheck")
        if os.path.isfile(binary) and os.access(binary, os.X_OK):
            return binary
    return None


def _llvm_engine(binary: str) -> Engine:
    return Engine("llvm-filecheck", (binary,), ("--dump-input=never",), 2)


def _package_engine() -> Engine:
    # "COM:" and "RUN:" as LLVM reads them: the package's default "COM,RUN" takes any line with
    # "COM" before "CHECK" for a comment (`CHECK: @COMPUTE_CHECKSUM` would be skipped).
    return Engine(
        "filecheck-package",
        (sys.executable, "-m", "filecheck"),
        # not --dump-input=never: the package then prints no diagnostic at all
        ("--comment-prefixes=COM:,RUN:",),
        None,
    )


@functools.lru_cache(maxsize=8)
def _default_engine(choice: str) -> Engine:
    if choice == "filecheck":
        return _package_engine()
    if choice:
        if not (os.path.isfile(choice) and os.access(choice, os.X_OK) and _runs(choice)):
            raise RuntimeError(
                f"{ENGINE_ENV}={choice!r} is neither a FileCheck that runs here nor 'filecheck' "
                "(the filecheck package)"
            )
        return _llvm_engine(choice)
    binary = _triton_filecheck()
    return _llvm_engine(binary) if binary is not None and _runs(binary) else _package_engine()


@functools.lru_cache(maxsize=8)
def _runs(binary: str) -> bool:
    """Whether `binary --version` works here (a wheel's binary may lack a library it needs)."""
    try:
        return (
            subprocess.run([binary, "--version"], capture_output=True, timeout=30).returncode == 0
        )
    except (OSError, subprocess.SubprocessError):
        return False


@functools.lru_cache(maxsize=8)
def _version(engine: Engine) -> str:
    if engine.name == "filecheck-package":
        return importlib.metadata.version("filecheck")
    out = subprocess.run([*engine.argv, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"LLVM version (\S+)", out)
    return m.group(1) if m else "unknown"
