"""The key under which the run's state lives in ``config.stash`` (a leaf: every feature module
imports it, and `state` imports the features' option parsers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    pass

STATE = pytest.StashKey["RunState"]()
