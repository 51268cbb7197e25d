"""Every test starts from torch's generator seeded by its own node id, so the inputs a test
draws do not depend on which tests its xdist worker happened to run before it (a failure
reproduces with the test alone).

The suite the plugin's self-tests run: `suite` (the tiny suite in a pytester folder) and
`make_suite` (any suite text, with expectation files), both laid out by `suite_files.lay_out`.
A test file whose assertions count other scenarios defines its own `suite` from `make_suite`.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Callable

import pytest
import suite_files
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
# The same for inductor's cache artifacts, which register themselves with torch's mega-cache at
# import: a re-import after a pytester run dropped them raises "Artifact of type=autotune already
# registered" (tests/test_speed.py then tests/test_launch_path.py in one worker):
# torch.compile imports this chain on its first use.
import torch._dynamo.repro.after_dynamo

from gemmconf.isolation import forkserver
from gemmconf.isolation.parent import worker_environment
from gemmconf.plugin.hardware import pin_threads

try:  # pytest 9.2 and later: the structured node id that --dist loadgroup's suffix must reach
    from _pytest.nodeid import NodeId
except ImportError:  # earlier pytest reads the id xdist writes the suffix to (the GPU machine's)
    NodeId = None


def pytest_configure(config: pytest.Config) -> None:
    """An xdist worker of these tests: torch's CPU threads at its share of the cores from the
    start, as the plugin sets them for a run's workers (`hardware.pin_threads`), and for what it
    starts (OMP_NUM_THREADS). The plugin is silent in these tests' own run, so each worker kept
    a pool of every core until its first in-process gemmconf run pinned it (pin_worker, in the
    worker's environment, which pytester does not restore): three workers of two threads on the
    2-core dev CPU spun against each other, and a test's CPU depended on what its worker had run
    before (test_planted_bugs.py alone, -n 3: 291 CPU-s, where the full tests stage measured
    51)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    pin_threads(os.cpu_count() or 1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1))


@pytest.fixture(scope="session", autouse=True)
def _one_fork_server_for_what_the_tests_start() -> None:
    """This test process's fork server, started now and named to every process a test starts
    (`forkserver.share`): a `gemmconf run` or pytest in a subprocess then forks its isolation
    workers from it instead of importing torch again for the first one."""
    forkserver.share(worker_environment())


def _group_suffix(item: pytest.Item) -> str:
    """The suffix `--dist loadgroup` gives the node id of an item marked `xdist_group`
    ("@name", the names sorted and joined by "_" as xdist joins them), "" for any other."""
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return f"@{'_'.join(sorted(names))}" if names else ""


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--dist loadgroup` in an xdist worker: the group suffix on each grouped item's node id,
    which is how the controller learns the groups. xdist 3.8.0 writes it to `item._nodeid`,
    which pytest 9.2's `nodeid` no longer reads (it reads the structured `_id`;
    pytest-dev/pytest-xdist#1386): every `xdist_group` of these tests was dealt item by item,
    and a module-scoped run they share was made once per worker that drew one of them
    (test_planted_bugs' outcomes, test_plugin's eager_and_planted_runs)."""
    if NodeId is None or not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        suffix = _group_suffix(item)
        if suffix and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)


@pytest.fixture(autouse=True)
def _seeded_by_node_id(request: pytest.FixtureRequest) -> None:
    """Seeded by the node id without its xdist group suffix: the same seed alone and in a
    `--dist loadgroup` run."""
    nodeid = request.node.nodeid.removesuffix(_group_suffix(request.node))
    torch.manual_seed(zlib.crc32(nodeid.encode()))


@pytest.fixture
def make_suite(pytester: pytest.Pytester) -> Callable[..., pytest.Pytester]:
    """`make_suite(text=TINY, expectations=None, cache=False)`: that suite in the pytester
    folder, as `suite_files.lay_out` writes it (suites/tiny.yaml and a tox.ini naming it)."""

    def make(text: str = suite_files.TINY, **layout) -> pytest.Pytester:
        suite_files.lay_out(pytester.path, text, **layout)
        return pytester

    return make


@pytest.fixture
def suite(make_suite: Callable[..., pytest.Pytester]) -> pytest.Pytester:
    """The tiny suite (`suite_files.TINY`, 6 instances) in the pytester folder."""
    return make_suite()
