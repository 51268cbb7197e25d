"""`gemmconf expect RESULTS --draft PATH`: an expectations file drafted from a run's failures.

After a first wide run a backend's author needs an expectations file that explains every known
failure and denies no pass. Written by hand from wide patterns it goes wrong the way a
bitsandbytes trial's did (2026-12-02): entries that match by dtype or op, narrowed by `kind`,
also match the passes of those items, and 162 of them became strict XPASSes; the author then
wrote a script that listed 1,645 ids by cause. The draft is that file: one entry per cause of
failure, as `gemmconf report groups` groups them (gemmconf.report.groups), each naming its items
by id, the failure kind they share and the hardware class they failed on, so that it explains
each failure of the run and matches no other item. Its reasons are gemmconf's words for the
failures, which the author replaces with what is wrong and where.

Only failures the given expectations files leave unexplained are drafted (the file is then the
entries to add to those); strict XPASSes are left to the entries they contradict.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from gemmconf.kinds import KINDS
from gemmconf.record import Record
from gemmconf.rejudge import Rejudged
from gemmconf.report.groups import FailureGroup, group_failures

HEADER = """\
# A draft of {backend}'s expectations, written by `gemmconf expect {results} --draft {path}`
# (gemmconf {version}): one entry per cause of failure ({failures} failures in {groups} groups,
# as `gemmconf report groups` groups them), each matching its items by id, on the hardware
# they failed on, for the failure kind they share. Each reason is gemmconf's words for the
# failure: say instead what is wrong and where (and give an `issue:` URL where there is one);
# an entry whose failures come and go with the seed wants `strict: false`.
"""


def unexplained(judged: Rejudged, backend: str) -> list[Record]:
    """The backend's failures the files leave unexplained, as the run would record them."""
    return [r for r in judged.view if r.backend == backend and r.outcome == "failed"]


def draft(
    failures: Sequence[Record], backend: str, *, results: str, path: str, version: str
) -> str:
    """The draft's YAML text for `failures` (one backend's)."""
    groups = group_failures(failures)
    by_id = {r.id: r for r in failures}
    head = HEADER.format(
        backend=backend,
        results=results,
        path=path,
        version=version,
        failures=len(failures),
        groups=len(groups),
    )
    lines = [*head.splitlines(), f"backend: {_quoted(backend)}", "expectations:"]
    for group in groups:
        lines += _entry(group, [by_id[i] for i in group.ids])
    if not groups:
        lines[-1] = "expectations: []"
    return "\n".join(lines) + "\n"


def _entry(group: FailureGroup, members: list[Record]) -> list[str]:
    title = " ".join(group.title().split())
    lines = [f"  # {title[:200]}", "  - match:"]
    lines += [f"      - {_quoted(ident)}" for ident in group.ids]
    hardware = sorted({str((r.environment or {}).get("hardware_class") or "") for r in members})
    if all(hardware):
        shown = hardware[0] if len(hardware) == 1 else f"[{', '.join(hardware)}]"
        lines.append(f"    hardware: {shown}")
    if group.kind in KINDS:  # a record of another version may carry none
        lines.append(f"    kind: {_quoted(group.kind)}")
    lines.append(f"    reason: {_quoted(group.cause)}")
    return lines


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is YAML's)."""
    return json.dumps(text)


__all__ = ["draft", "unexplained"]
