"""FileCheck code checks on a backend's generated code (DESIGN.md, "Generated code").

A scenario carries `CheckBlock`s: LLVM FileCheck directives for one artifact kind ("ttgir",
"ptx", ...) and optionally one target class ("sm90"). `check_artifacts` runs the blocks meant for
the current target against the artifacts a backend produced and returns one `CodeCheckResult` per
block, each with an LLVM-style diagnostic that points into the scenario file:

    suites/dense.yaml:44:8: error: CHECK: expected string not found in input
    CHECK: ttng.warp_group_dot
           ^
    <ttgir>:12:3: note: scanning from here
      %0 = tt.dot %a, %b, %acc
      ^

Matching is done in-process by the `filecheck` package (1.0.x, LLVM syntax). It has no documented
in-memory API, so `run_filecheck` drives its parser and matcher step by step the way
`filecheck.matcher.Matcher.run` does, and writes the diagnostics itself (the package prints its own
format to stderr, relative to the check text, and a stray debug line to stdout).

`validate_block` parses a block without matching so a scenario file with a malformed block fails at
load time, with the same rules `run_filecheck` applies.
"""

from __future__ import annotations

import difflib
import functools
import io
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass

from filecheck.compiler import compile_uops
from filecheck.error import CheckError, ErrorOnMatch, ParseError
from filecheck.finput import FInput
from filecheck.matcher import Matcher
from filecheck.ops import RE, Capture, CheckOp, CountOp, Literal, NumSubst, Subst
from filecheck.options import Options
from filecheck.parser import Parser, pattern_for_opts
from filecheck.preprocess import Preprocessor

PREFIX = "CHECK"
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

# "COM:" (not filecheck's default "COM,RUN") so that a pattern such as `COMPUTE_CHECK` is not
# mistaken for a comment line.
_OPTIONS = Options(match_filename="<checks>", check_prefixes=[PREFIX], comment_prefixes=["COM:"])
_CHECK_LINE, _COMMENT_LINE = pattern_for_opts(_OPTIONS)
_COM = re.compile(r"(^|[^A-Za-z0-9_-])COM:")
_POSITIVE = frozenset({"CHECK", "NEXT", "SAME", "EMPTY", "LABEL", "COUNT"})
_FUZZY_MAX_LINES = 2000


@dataclass(frozen=True)
class CheckBlock:
    """One FileCheck block from a scenario file."""

    artifact: str  # "python", "triton", "ttir", "ttgir", "ptx", "cuda", ...
    text: str  # LLVM FileCheck directives
    source: str  # "suites/dense.yaml:42" (or "...:42:7") where the block's text starts
    target: str | None = None  # "sm80"/"sm90"/"sm100"; None: any target


@dataclass(frozen=True)
class CodeCheckResult:
    block: CheckBlock
    passed: bool
    diagnostic: str  # "" when passed, else an LLVM-style error whose first line stands alone


def run_filecheck(
    block: CheckBlock, artifact_text: str, *, artifact_name: str = "<artifact>"
) -> CodeCheckResult:
    """Match one block against one artifact's text."""
    where = _Source.parse(block.source)
    parsed = _parse(block.text)
    if parsed.problem is not None:
        return CodeCheckResult(block, False, _located_error(where, parsed, parsed.problem))
    content = FInput.canonicalize_line_ends(artifact_text)
    if not content.strip():
        return CodeCheckResult(
            block,
            False,
            f"{where.path}:{where.line}:{where.col}: error: {artifact_name} is "
            f"empty: the backend generated no {block.artifact} code to check",
        )
    if not content.endswith("\n"):
        content += "\n"  # filecheck 1.0.6 leaves a final unterminated character out of CHECK-NOT
    diagnostic = _match(parsed, content, where, artifact_name)
    return CodeCheckResult(block, diagnostic is None, diagnostic or "")


def check_artifacts(
    blocks: Iterable[CheckBlock], artifacts: Mapping[str, str], *, target: str | None
) -> list[CodeCheckResult]:
    """Run each block whose target is None or `target` against the artifact of its kind.

    With `target=None` (a CPU run without --target-arch) only target-less blocks run. A block whose
    artifact kind the backend did not produce fails, naming the kinds it did produce.
    """
    results = []
    for block in blocks:
        if block.target is not None and block.target != target:
            continue
        text = artifacts.get(block.artifact)
        if text is None:
            where = _Source.parse(block.source)
            given = ", ".join(sorted(artifacts)) or "none"
            results.append(
                CodeCheckResult(
                    block,
                    False,
                    f"{where.path}:{where.line}:{where.col}: error: no "
                    f"'{block.artifact}' artifact to check (the backend gave: {given})",
                )
            )
            continue
        results.append(run_filecheck(block, text, artifact_name=f"<{block.artifact}>"))
    return results


def validate_block(text: str, *, source: str | None = None) -> str | None:
    """None when `text` is a well-formed check block, else what is wrong with it.

    Without `source` the message is one line that names the line and column within the block
    ("line 3, column 8: ..."); with `source` ("suites/dense.yaml:42") it is the full LLVM-style
    diagnostic that `run_filecheck` would give, located in that file.
    """
    parsed = _parse(text)
    if parsed.problem is None:
        return None
    if source is not None:
        return _located_error(_Source.parse(source), parsed, parsed.problem)
    problem = parsed.problem
    line = parsed.lines[problem.line - 1].strip() if problem.line <= len(parsed.lines) else ""
    shown = f" (in {line!r})" if line else ""
    return f"line {problem.line}, column {problem.col}: {problem.message}{shown}"


def expecttest_accept_conflict(
    env: Mapping[str, str], numprocesses: int | str | None, dist: str | None
) -> str | None:
    """The error to stop a run with when EXPECTTEST_ACCEPT would corrupt test files, else None.

    expecttest rewrites the calling test file in place. Under pytest-xdist with any distribution
    other than `loadfile`, several workers rewrite the same file at once (FACTS.md: `-n 2` with the
    default `--dist load` left syntax errors and wrong values). `numprocesses` is xdist's `-n`
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


@dataclass(frozen=True)
class _Problem:
    """Something wrong with a block, at a 1-based line and column of its text."""

    line: int
    col: int
    message: str


@dataclass(frozen=True)
class _Parsed:
    lines: tuple[str, ...]
    ops: tuple[CheckOp, ...]
    problem: _Problem | None


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> _Parsed:
    """Parse and lint a block once; the same block is matched against many artifacts."""
    lines = tuple(text.split("\n"))
    ops: list[CheckOp] = []
    problems = list(_line_problems(lines))
    parser = Parser(_OPTIONS, io.StringIO(text), _CHECK_LINE, _COMMENT_LINE)
    try:
        ops.extend(parser)
    except ParseError as ex:
        line = lines[ex.line_no - 1] if ex.line_no <= len(lines) else ""
        message = ex.message
        directive = _CHECK_LINE.search(line)
        if message.startswith("found empty check string") and directive:
            # filecheck names the prefix only ('CHECK:' for an empty 'CHECK-NOT:')
            message = (
                f"found empty check string with prefix '{directive.group(2)}"
                f"{directive.group(3) or ''}:'"
            )
        problems.append(_Problem(ex.line_no, _parse_error_col(ex, line), message))
    except ValueError as ex:  # posix class translation, e.g. [[:foo:]]
        line_no = parser.line_no
        problems.append(_Problem(line_no, _pattern_col(lines[line_no - 1]), str(ex)))
    problems += _op_problems(ops, lines)
    if not ops and not problems:
        problems.append(
            _Problem(
                1,
                1,
                f"no check strings found with prefix '{PREFIX}:' "
                f"(a block needs at least one of {', '.join(DIRECTIVES)})",
            )
        )
    problem = min(problems, key=lambda p: (p.line, p.col)) if problems else None
    return _Parsed(lines, tuple(ops), problem)


def _line_problems(lines: tuple[str, ...]) -> Iterator[_Problem]:
    """Every non-blank line of a block is a directive or a comment (`COM:` or `#`)."""
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or _COMMENT_LINE.search(line) or _CHECK_LINE.search(line):
            continue
        if _COM.search(line) or stripped.startswith("#"):
            continue
        token = re.search(r"CHECK\S*", line)
        if token:
            yield _Problem(
                n,
                token.start() + 1,
                f"unknown FileCheck directive '{token.group(0)}' (known: {', '.join(DIRECTIVES)})",
            )
        else:
            yield _Problem(
                n,
                len(line) - len(line.lstrip()) + 1,
                "not a FileCheck directive (write CHECK:, CHECK-NEXT:, ...; "
                "comments start with COM: or #)",
            )


def _op_problems(ops: list[CheckOp], lines: tuple[str, ...]) -> Iterator[_Problem]:
    """What LLVM FileCheck rejects and filecheck 1.0.6 would silently get wrong."""
    defined: set[str] = set()
    seen_positive = False
    for op in ops:
        line = lines[op.source_line - 1]
        name = _directive(op)
        if op.name in ("NEXT", "SAME", "EMPTY") and not seen_positive:
            yield _Problem(
                op.source_line,
                _directive_col(line),
                f"found '{name}' without previous '{PREFIX}:' line",
            )
        seen_positive = seen_positive or op.name in _POSITIVE
        if op.name == "LABEL" and any(isinstance(u, Capture | Subst) for u in op.uops):
            yield _Problem(
                op.source_line,
                _pattern_col(line),
                f"found '{name}:' with variable definition or use",
            )
            continue
        problem = _uop_problem(op, line, defined)
        if problem is not None:
            yield problem
            continue
        defined.update(u.name for u in op.uops if isinstance(u, Capture) and u.name)


def _uop_problem(op: CheckOp, line: str, defined: set[str]) -> _Problem | None:
    local: set[str] = set()
    n_regex = 0
    groups = 0  # capture groups before the current uop, as `re` counts them
    expected: dict[str, tuple[int, int]] = {}  # capture name -> (group number, column)
    for uop in op.uops:
        if isinstance(uop, RE):
            col = _nth_col(line, "{{", n_regex)
            n_regex += 1
            try:
                groups += re.compile(uop.content).groups + ("|" in uop.content)
            except re.error as ex:
                return _Problem(op.source_line, col, f"invalid regex {{{{{uop.content}}}}}: {ex}")
        elif isinstance(uop, Capture):
            col = _find_col(line, f"[[{uop.name}:", f"[[#{uop.name}:", "[[#")
            try:
                inner = re.compile(uop.pattern).groups
            except re.error as ex:
                return _Problem(
                    op.source_line, col, f"invalid regex in [[{uop.name}:{uop.pattern}]]: {ex}"
                )
            expected[uop.name] = (groups + 1, col)
            groups += 1 + inner
            local.add(uop.name)
        elif isinstance(uop, NumSubst):
            return _Problem(
                op.source_line,
                _find_col(line, f"[[#{uop.variable}"),
                f"numeric expressions ([[#{uop.variable}{uop.expr}]]) are not "
                "supported by the filecheck package",
            )
        elif isinstance(uop, Subst) and uop.variable not in defined | local:
            col = _find_col(line, f"[[{uop.variable}]]", f"[[#{uop.variable}")
            return _Problem(op.source_line, col, f"undefined variable: {uop.variable}")
    try:
        _, captures = compile_uops(op, dict.fromkeys(defined, "0"), _OPTIONS)
    except CheckError as ex:
        return _Problem(op.source_line, _pattern_col(line), ex.message)
    for name, (group, col) in expected.items():
        if captures[name][0] != group:
            return _Problem(
                op.source_line,
                col,
                (
                    f"filecheck would capture the wrong text into {name}: it miscounts the "
                    "groups of the regex before it (nested groups, '(?...)' or '(' in a "
                    "character class); use plain, non-nested (...) groups there"
                ),
            )
    return None


def _match(parsed: _Parsed, content: str, where: _Source, artifact_name: str) -> str | None:
    """Run the block's directives over `content`; None on success, else the diagnostic."""
    run = _Run(parsed, content, where, artifact_name)
    # filecheck 1.0.6 prints "moving to ..." to stdout while matching CHECK-DAG, and warnings
    # (e.g. an empty capture) to stderr: neither belongs in the test output.
    sink = io.StringIO()
    with redirect_stdout(sink), redirect_stderr(sink):
        return run.execute()


class _Run:
    """One match of a parsed block over one artifact, mirroring `filecheck.Matcher.run`."""

    def __init__(self, parsed: _Parsed, content: str, where: _Source, artifact_name: str):
        self.parsed = parsed
        self.content = content
        self.where = where
        self.artifact_name = artifact_name
        self.file = FInput(artifact_name, content)
        self.matcher = Matcher(_OPTIONS, self.file, iter(parsed.ops))  # type: ignore[arg-type]
        self.scan_start = 0  # where the current directive began searching
        self.prev_end = 0  # where the previous match ended
        self.count_done = 0  # matches so far of the current CHECK-COUNT-<n>

    def execute(self) -> str | None:
        ops = self.parsed.ops
        preprocessor = Preprocessor(_OPTIONS, self.file, ops)
        try:
            preprocessor.run()  # finds every CHECK-LABEL first, splitting the input into regions
        except CheckError as ex:
            self.scan_start = preprocessor.range.start
            return self._not_found(ex.op)
        steps = {
            "DAG": self.matcher.check_dag,
            "COUNT": self._count,
            "NOT": self.matcher.enqueue_not,
            "EMPTY": self.matcher.check_empty,
            "NEXT": self.matcher.match_immediately,
            "SAME": self.matcher.match_eventually,
            "LABEL": self.matcher.check_label,
            "CHECK": self.matcher.match_eventually,
        }
        try:
            for op in ops:
                self.prev_end = self.file.range.start
                self.matcher._pre_check(op)
                self.scan_start = self.file.range.start
                try:
                    steps[op.name](op)
                except CheckError as ex:
                    return self._check_error(ex)
                self.matcher._post_check(op)
            # the CHECK-NOTs after the last positive match run to the end of the input
            self.file.range.start = len(self.content) - 1
            self.matcher._post_check(CheckOp("SYNTH", "NOP", "", -1, []))
        except ErrorOnMatch as ex:
            return self._excluded(ex.op, ex.match)
        except CheckError as ex:
            return self._error(ex.op, ex.message)
        return None

    def _count(self, op: CheckOp) -> None:
        assert isinstance(op, CountOp)
        for done in range(op.count):
            self.count_done = done
            self.scan_start = self.file.range.start
            self.matcher.match_eventually(op)

    def _check_error(self, ex: CheckError) -> str:
        op = ex.op
        try:
            compile_uops(op, self.matcher.ctx.live_variables, _OPTIONS)
        except (CheckError, NotImplementedError):
            return self._error(op, ex.message)
        if op.name == "NEXT":
            return self._misplaced(op, "is not on the line after the previous match")
        if op.name == "SAME":
            return self._misplaced(op, "is not on the same line as the previous match")
        if op.name == "EMPTY":
            return self._error(
                op,
                "is not on the line after the previous match",
                [self._note(self.prev_end, "previous match ended here")],
            )
        return self._not_found(op)

    def _not_found(self, op: CheckOp) -> str:
        message = "expected string not found in input"
        if op.name == "COUNT":
            message += f" ({self.count_done} out of {op.count})"  # type: ignore[attr-defined]
        notes = [self._note(self.scan_start, "scanning from here")]
        guess = self._possible_match(op)
        if guess is not None:
            notes.append(self._note(guess[0], "possible intended match here", guess[1]))
        return self._error(op, message, notes)

    def _misplaced(self, op: CheckOp, what: str) -> str:
        """A CHECK-NEXT/-SAME that failed: found elsewhere, or not at all."""
        anywhere = CheckOp(op.prefix, "CHECK", op.arg, op.source_line, op.uops)
        pattern, _ = compile_uops(anywhere, self.matcher.ctx.live_variables, _OPTIONS)
        found = pattern.search(self.content, self.prev_end)
        if found is None:
            self.scan_start = self.prev_end
            return self._not_found(op)
        if op.name == "NEXT" and self._line_of(found.start()) == self._line_of(self.prev_end):
            what = "is on the same line as previous match"
        return self._error(
            op,
            what,
            [
                self._note(
                    found.start(),
                    f"'{_directive(op).lower()[len(PREFIX) + 1 :]}' match was here",
                    found.end() - found.start(),
                ),
                self._note(self.prev_end, "previous match ended here"),
            ],
        )

    def _excluded(self, op: CheckOp, found: re.Match[str]) -> str:
        return self._error(
            op,
            "excluded string found in input",
            [self._note(found.start(), "found here", found.end() - found.start())],
        )

    def _error(self, op: CheckOp, message: str, notes: Iterable[str] = ()) -> str:
        line = self.parsed.lines[op.source_line - 1]
        problem = _Problem(op.source_line, _pattern_col(line), f"{_directive(op)}: {message}")
        return "\n".join([_located_error(self.where, self.parsed, problem), *notes])

    def _line_of(self, pos: int) -> int:
        return self.content.count("\n", 0, pos) + 1

    def _note(self, pos: int, note: str, length: int = 1) -> str:
        start = self.content.rfind("\n", 0, pos) + 1
        end = self.content.find("\n", pos)
        end = len(self.content) if end < 0 else end
        text = self.content[start:end]
        col = pos - start + 1
        return (
            f"{self.artifact_name}:{self._line_of(pos)}:{col}: note: {note}\n"
            f"{text}\n{_caret(text, col, min(length, end - pos))}"
        )

    def _possible_match(self, op: CheckOp) -> tuple[int, int] | None:
        """Like LLVM's "possible intended match": the line that best contains the literal text."""
        needle = "".join(u.content for u in op.uops if isinstance(u, Literal)).strip()
        if len(needle) < 4:
            return None
        end = min(self.file.range.end, len(self.content))
        best: tuple[float, int, int] | None = None
        trigrams = {needle[i : i + 3] for i in range(len(needle) - 2)}
        pos = self.scan_start
        for _ in range(_FUZZY_MAX_LINES):
            if pos >= end:
                break
            eol = self.content.find("\n", pos, end)
            eol = end if eol < 0 else eol
            line = self.content[pos:eol]
            if sum(t in line for t in trigrams) < len(trigrams) / 2:  # cheap pre-filter
                pos = eol + 1
                continue
            matcher = difflib.SequenceMatcher(None, needle, line, autojunk=False)
            # runs of 3+ characters, close together: a typo or a changed operand, not noise
            blocks = [b for b in matcher.get_matching_blocks() if b.size >= 3]
            score = sum(b.size for b in blocks) / len(needle)
            if blocks and score >= 0.8 and (best is None or score > best[0]):
                first, last = blocks[0].b, blocks[-1].b + blocks[-1].size
                if last - first <= 1.5 * len(needle) + 2:
                    best = (score, pos + first, last - first)
            pos = eol + 1
        return None if best is None else (best[1], best[2])


def _located_error(where: _Source, parsed: _Parsed, problem: _Problem) -> str:
    """`path:line:col: error: message`, the check line and a caret, in the scenario file."""
    text = parsed.lines[problem.line - 1] if problem.line <= len(parsed.lines) else ""
    shown = " " * (where.col - 1) + text
    col = where.col - 1 + problem.col
    return (
        f"{where.path}:{where.line + problem.line - 1}:{col}: error: {problem.message}\n"
        f"{shown}\n{_caret(shown, col)}"
    )


def _caret(text: str, col: int, length: int = 1) -> str:
    indent = "".join("\t" if ch == "\t" else " " for ch in text[: col - 1])
    return indent + "^" + "~" * (max(length, 1) - 1)


def _directive(op: CheckOp) -> str:
    """The directive as written: CHECK, CHECK-NEXT, CHECK-COUNT-3 (filecheck drops that dash)."""
    if op.name == "CHECK":
        return op.prefix
    if op.name == "COUNT":
        return f"{op.prefix}-COUNT-{op.count}"  # type: ignore[attr-defined]
    return f"{op.prefix}-{op.name}"


def _directive_col(line: str) -> int:
    m = _CHECK_LINE.search(line)
    return m.start(2) + 1 if m else 1


def _pattern_col(line: str) -> int:
    """1-based column where a directive's pattern starts (LLVM points its errors there)."""
    m = _CHECK_LINE.search(line)
    if m is None:
        return 1
    arg = m.group(6)
    return m.start(6) + len(arg) - len(arg.lstrip()) + 1


def _nth_col(line: str, token: str, n: int) -> int:
    start = _pattern_col(line) - 1
    for _ in range(n + 1):
        found = line.find(token, start)
        if found < 0:
            return _pattern_col(line)
        start = found + len(token)
    return found + 1


def _find_col(line: str, *tokens: str) -> int:
    for token in tokens:
        found = line.find(token)
        if found >= 0:
            return found + 1
    return _pattern_col(line)


def _parse_error_col(ex: ParseError, line: str) -> int:
    message = ex.message
    if message.startswith("found empty check string"):
        return _directive_col(line)
    for opener in ("[[", "{{"):
        if f"no {']]' if opener == '[[' else '}}'}" in message and opener in line:
            return line.rfind(opener) + 1
    if "unknown format: " in message:
        part = message.split("unknown format: ", 1)[1]
        if part in line:
            return line.find(part) + 1
    return _pattern_col(line)
