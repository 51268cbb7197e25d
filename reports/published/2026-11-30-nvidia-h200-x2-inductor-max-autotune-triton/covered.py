"""Which records of a run an expectations file leaves unexplained, without running anything:
each record's raw result (failed, xfailed: its kind and reason; passed, xpassed: a pass) put to
the file's first entry that matches it on the record's hardware class and torch version.

    python covered.py RESULTS.json[.gz] EXPECTATIONS.yaml

Prints the records whose outcome under the file would be a failure (a failure no entry expects,
a pass a strict xfail entry denies) and the count of each outcome; exit 1 when any is left."""

import collections
import gzip
import json
import sys
from pathlib import Path

from gemmconf import expectations
from gemmconf.scenario.facts import Facts


def _records(path: str) -> list[dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)["records"]


def main(results: str, file: str) -> int:
    entries = expectations.read(Path(file)).entries
    counts: collections.Counter[str] = collections.Counter()
    left = []
    for r in _records(results):
        if r["outcome"] == "skipped":
            counts["skipped"] += 1
            continue
        env = r.get("environment") or {}
        facts = Facts(
            r["id"],
            r["suite"],
            r["scenario"],
            r["op"],
            r["dtype"],
            tuple(r.get("markers") or ()),
            tuple(sorted((r.get("axes") or {}).items())),
        )
        entry = next(
            (
                e
                for e in entries
                if e.applies_on(env.get("hardware_class"), env.get("torch")) and e.match(facts)
            ),
            None,
        )
        failed = r["outcome"] in ("failed", "xfailed")
        if failed:
            ok = entry is not None and entry.expects(r.get("kind"), r.get("reason") or "")
            outcome = "xfailed" if ok else "failed"
        else:
            denied = entry is not None and entry.status == "xfail" and entry.strict
            outcome = "xpassed (strict)" if denied else "passed"
        counts[outcome] += 1
        if outcome in ("failed", "xpassed (strict)"):
            left.append((outcome, r["id"], r.get("kind"), (r.get("reason") or "")[:120]))
    for row in left:
        print(*row, sep=" | ")
    print(dict(counts))
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
