"""Where backends keep what they build between runs: one directory per backend under gemmconf's
cache, `$GEMMCONF_CACHE` or `~/.cache/gemmconf`.

Part of the toolkit for backend authors (with `base` and `dynamo`): a backend package that builds
kernels keeps them in `cache_dir("<its name>")`, so one variable moves every backend's cache (a
cache built on a machine with a compiler can be carried to one without).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir(name: str) -> Path:
    """`name` under gemmconf's cache: `$GEMMCONF_CACHE/name`, else `~/.cache/gemmconf/name`.

    Not created here: a backend makes it when it first writes.
    """
    base = os.environ.get("GEMMCONF_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "gemmconf") / name
