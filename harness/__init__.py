"""gemmconf: the conformance suite and pytest harness for PyTorch GEMM backends.

The repository's harness/ folder installs as this package; the reference backend (backend/) as
`gemmconf_reference`; the suite (suites/) as this package's data, found by `bundled_suites()`.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["bundled_suites"]


def bundled_suites() -> Path:
    """The suite that ships with gemmconf: `gemmconf/suites` in an installed wheel, the
    repository's suites/ folder in an editable install of a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "suites", here.parent / "suites"):
        if (candidate / "README.md").is_file() and (candidate / "expectations").is_dir():
            return candidate
    raise FileNotFoundError(f"gemmconf's suite is not installed beside {here}: reinstall gemmconf")
