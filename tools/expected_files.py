"""The suite files that hold an item some entry of an expectations file matches, one per line.

`make test` runs eager, the baseline, on these files alone: on a CPU eager passes every other
item by construction (it is its own comparison; suites/expectations/eager.yaml says where it
does not), and the whole suite on eager took a tenth of make test's suite stage.

    python tools/expected_files.py suites/expectations/eager.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

from gemmconf import api
from gemmconf.expectations import read
from gemmconf.scenario.facts import Facts


def expected_files(expectations: Path, suites: Path) -> list[str]:
    entries = read(expectations).entries
    return sorted(
        {
            instance.source.rsplit(":", 1)[0]
            for instance in api.instances(["*"], suites)
            if any(entry.match(Facts.of(instance)) for entry in entries)
        }
    )


if __name__ == "__main__":
    print("\n".join(expected_files(Path(sys.argv[1]), Path("suites"))))
