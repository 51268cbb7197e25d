"""Every test starts from torch's generator seeded by its own node id, so the inputs a test
draws do not depend on which tests its xdist worker happened to run before it (a failure
reproduces with the test alone)."""

from __future__ import annotations

import zlib

import pytest
import torch


@pytest.fixture(autouse=True)
def _seeded_by_node_id(request: pytest.FixtureRequest) -> None:
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))
