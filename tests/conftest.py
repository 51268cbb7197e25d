"""Every test starts from torch's generator seeded by its own node id, so the inputs a test
draws do not depend on which tests its xdist worker happened to run before it (a failure
reproduces with the test alone)."""

from __future__ import annotations

import contextlib
import zlib

import pytest
import torch
import torch._dynamo  # see below

# Imported here, before any test: pytester's in-process runs put sys.modules back as they found
# it, so a first import of dynamo inside one (a backend run with --no-isolate) is dropped after
# it while the operator library dynamo registers stays; the next import in that worker then
# fails ("Only a single TORCH_LIBRARY can be used to register the namespace _inductor_test").
# Seen on an H100 with torch 2.11, whose torch.manual_seed imports dynamo on its first call.
# Triton, which the reference backend imports, has C extensions of its own: the same holds.
with contextlib.suppress(ImportError):
    import triton  # noqa: F401


@pytest.fixture(autouse=True)
def _seeded_by_node_id(request: pytest.FixtureRequest) -> None:
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))
