"""Message patterns from files (a scenario's `raises.match`, an expectation entry's
`message`), searched in bounded time, whatever the pattern.

Python's `re` backtracks: a suite file's ``(.*.*)*Q`` searched a 55-character message of eager's
for longer than the item timeout allows, and with ``--no-isolate`` nothing stopped it. Cutting
the message short bounds nothing (``(.*.*)*Q`` takes seconds on 25 characters), and refusing
"nested quantifiers" misses ``(a|a)*`` and ``a*a*a*...``. So a pattern is run here as a Thompson
NFA (each state visited at most once per character of the message): time and memory grow with
the message times the pattern, never faster.

The syntax stays `re`'s: the pattern is parsed by `re`'s own parser, each single-character test
(a literal, a class, ``.``, under the pattern's flags) and each anchor (``^ $ \\A \\Z \\b \\B``)
is decided by `re` itself, so a pattern means what `re.search` makes of it. What needs
backtracking is refused at load: backreferences, lookahead and lookbehind, conditionals, atomic
groups and possessive quantifiers. Bounds: a pattern of at most `MAX_PATTERN_CHARS` characters
and `MAX_STATES` states (counted repeats are written out), searched in the first
`MAX_MESSAGE_CHARS` characters of a message.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from re import _constants as sre
from re import _parser
from typing import Any

MAX_PATTERN_CHARS = 500  # the suite's longest raises.match is 26 characters
MAX_STATES = 1_000
MAX_MESSAGE_CHARS = 10_000

_CATEGORIES = {
    sre.CATEGORY_DIGIT: r"\d",
    sre.CATEGORY_NOT_DIGIT: r"\D",
    sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S",
    sre.CATEGORY_WORD: r"\w",
    sre.CATEGORY_NOT_WORD: r"\W",
}
_ANCHORS = {
    sre.AT_BEGINNING: "^",
    sre.AT_BEGINNING_STRING: r"\A",
    sre.AT_END: "$",
    sre.AT_END_STRING: r"\Z",
    sre.AT_BOUNDARY: r"\b",
    sre.AT_NON_BOUNDARY: r"\B",
}
_REFUSED = {
    sre.GROUPREF: "a backreference",
    sre.GROUPREF_EXISTS: "a conditional group",
    sre.ASSERT: "a lookahead or lookbehind",
    sre.ASSERT_NOT: "a negative lookahead or lookbehind",
    sre.ATOMIC_GROUP: "an atomic group",
    sre.POSSESSIVE_REPEAT: "a possessive quantifier",
}
_ATOM_FLAGS = re.IGNORECASE | re.DOTALL | re.ASCII | re.UNICODE  # what a single character obeys


class PatternError(ValueError):
    """A pattern this matcher does not run; the message says why."""


# instructions: ("char", test), ("split", a, b), ("jump", a), ("anchor", test), ("match",)
Instruction = tuple[Any, ...]


@dataclass(frozen=True)
class MessagePattern:
    """A compiled message pattern: `search(message)` is `re.search(pattern, message) is not
    None`, over the message's first `MAX_MESSAGE_CHARS` characters."""

    pattern: str
    program: tuple[Instruction, ...]

    def search(self, message: str) -> bool:
        text = message[:MAX_MESSAGE_CHARS]
        program = self.program
        current: list[int] = []  # the threads: states that consume the next character
        seen: set[int] = set()  # the states visited at this position
        for position in range(len(text) + 1):
            # a match may start anywhere: the start state joins the threads at each position
            if self._follow(0, text, position, current, seen):
                return True
            if position == len(text):
                return False
            char = text[position]
            following: list[int] = []
            seen = set()
            for pc in current:
                if program[pc][1](char) and self._follow(
                    pc + 1, text, position + 1, following, seen
                ):
                    return True
            current = following
        return False

    def _follow(self, start: int, text: str, position: int, out: list[int], seen: set[int]) -> bool:
        """Add the character-consuming states reachable from `start` without consuming one to
        `out` (each once: `seen`); True where the match state is reachable."""
        stack = [start]
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            instruction = self.program[pc]
            kind = instruction[0]
            if kind == "char":
                out.append(pc)
            elif kind == "match":
                return True
            elif kind == "jump":
                stack.append(instruction[1])
            elif kind == "split":
                stack += (instruction[2], instruction[1])
            elif instruction[1](text, position):  # an anchor that holds here
                stack.append(pc + 1)
        return False


def compile_message_pattern(pattern: str) -> MessagePattern:
    """Check and compile a message pattern; `PatternError` (or `re.error`) says what is wrong."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(
            f"{len(pattern):,} characters, past the limit of {MAX_PATTERN_CHARS} for a pattern"
        )
    parsed = _parser.parse(pattern, 0)
    builder = _Builder()
    builder.sequence(parsed, parsed.state.flags)
    builder.emit(("match",))
    return MessagePattern(pattern, tuple(builder.program))


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> MessagePattern:
    return compile_message_pattern(pattern)


def search(pattern: str, message: str) -> bool:
    """`re.search(pattern, message) is not None`, in bounded time (see the module's docstring);
    the loader has refused the patterns this cannot run."""
    return _compiled(pattern).search(message)


class _Builder:
    def __init__(self) -> None:
        self.program: list[Instruction] = []

    def emit(self, instruction: Instruction) -> int:
        if len(self.program) >= MAX_STATES:
            raise PatternError(
                f"more than {MAX_STATES:,} states once its counted repeats are written out"
            )
        self.program.append(instruction)
        return len(self.program) - 1

    def sequence(self, items: Any, flags: int) -> None:
        for op, av in items:
            self.item(op, av, flags)

    def item(self, op: Any, av: Any, flags: int) -> None:
        if op in _REFUSED:
            raise PatternError(
                f"{_REFUSED[op]} needs backtracking, which a message pattern may not use (it is "
                "searched in bounded time)"
            )
        if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
            self.emit(("char", _character_test(op, av, flags)))
        elif op is sre.AT:
            self.emit(("anchor", _anchor_test(av, flags)))
        elif op is sre.SUBPATTERN:
            _group, add, remove, items = av
            self.sequence(items, (flags | add) & ~remove)
        elif op is sre.BRANCH:
            self.branch(av[1], flags)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):  # greedy or lazy: the same for search
            self.repeat(*av, flags)
        else:
            raise PatternError(f"{op} is not supported in a message pattern")

    def branch(self, alternatives: list, flags: int) -> None:
        jumps = []
        for index, alternative in enumerate(alternatives):
            if index < len(alternatives) - 1:
                split = self.emit(("split", None, None))
                self.sequence(alternative, flags)
                jumps.append(self.emit(("jump", None)))
                self.program[split] = ("split", split + 1, len(self.program))
            else:
                self.sequence(alternative, flags)
        for jump in jumps:
            self.program[jump] = ("jump", len(self.program))

    def repeat(self, low: int, high: Any, items: Any, flags: int) -> None:
        for _ in range(low):
            self.sequence(items, flags)
        if high is sre.MAXREPEAT:
            split = self.emit(("split", None, None))
            self.sequence(items, flags)
            self.emit(("jump", split))
            self.program[split] = ("split", split + 1, len(self.program))
            return
        splits = []
        for _ in range(high - low):  # each further copy optional, given the one before
            splits.append(self.emit(("split", None, None)))
            self.sequence(items, flags)
        for split in splits:
            self.program[split] = ("split", split + 1, len(self.program))


def _character_test(op: Any, av: Any, flags: int) -> Callable[[str], bool]:
    """One character's test, decided by `re` on the atom alone under the pattern's flags."""
    if op is sre.LITERAL:
        text = re.escape(chr(av))
    elif op is sre.NOT_LITERAL:
        text = f"[^{re.escape(chr(av))}]"
    elif op is sre.ANY:
        text = "."
    else:
        parts = []
        for kind, value in av:
            if kind is sre.NEGATE:
                parts.insert(0, "^")
            elif kind is sre.LITERAL:
                parts.append(re.escape(chr(value)))
            elif kind is sre.RANGE:
                parts.append(f"{re.escape(chr(value[0]))}-{re.escape(chr(value[1]))}")
            elif kind is sre.CATEGORY:
                parts.append(_CATEGORIES[value])
            else:
                raise PatternError(f"{kind} in a character class is not supported")
        text = f"[{''.join(parts)}]"
    atom = re.compile(text, _flags(flags, _ATOM_FLAGS))
    return functools.lru_cache(maxsize=1024)(lambda char: atom.fullmatch(char) is not None)


def _anchor_test(av: Any, flags: int) -> Callable[[str, int], bool]:
    anchor = re.compile(_ANCHORS[av], _flags(flags, _ATOM_FLAGS | re.MULTILINE))
    return lambda text, position: anchor.match(text, position) is not None


def _flags(flags: int, kept: int) -> int:
    """The pattern's flags that bear on one atom (a scoped ``(?a:...)`` in a unicode pattern
    leaves both ASCII and UNICODE set, which `re.compile` refuses)."""
    flags &= kept
    return flags & ~re.UNICODE if flags & re.ASCII else flags
