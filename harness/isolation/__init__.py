"""Items run where a backend's crash or hang costs one item.

Each pytest process (every xdist worker too) keeps one *worker*: an interpreter the parent did
not fork (the parent may hold a CUDA context), forked from the process's fork server (an
interpreter that imported torch and gemmconf and does nothing else: `forkserver`), or spawned
fresh where there is none. It resolves the backends from their ``--backend`` specs once, then
runs item after item with `run_item` and sends back each `ItemOutcome`. The parent keeps the
setup (availability, hardware skips) and the verdict; the worker does the work, and:

- the worker dies (segfault, abort, exit): the item fails ``crashed: SIGSEGV`` (or the exit
  code) and a fresh worker serves the next item;
- no answer within the item's timeout: SIGTERM, SIGKILL after `TERM_GRACE_S`, and the item
  fails ``timed out after N s``;
- a CUDA error (illegal memory access, device-side assert: `torch.AcceleratorError`, or a
  synchronize that fails after the item) poisons the worker's context: the item fails with the
  error and the worker is replaced;
- a fault of the harness itself (its reference, inputs, a scenario eager contradicts) comes back
  as an outcome of kind "harness error", like any other outcome.

The worker is a ``python -c`` child on a socket pair rather than a `multiprocessing` spawn child:
spawn re-imports the parent's ``__main__`` (a wrapper script that calls ``pytest.main()`` at top
level would run the session again), and its death sentinel is a pipe that a backend's forked
helpers inherit, where a Linux ``pidfd`` tells the death of the worker itself.

`--no-isolate` uses `InProcessRunner`: the same item run in the pytest process, for debuggers,
without timeout or crash protection.


The package's modules, one job each: `request` (what crosses the process boundary), `timeouts`
(how long an item may take), `guard` (one item run with the leak check), `worker` (the worker
interpreter's loop), `forkserver` (workers in milliseconds) and `parent` (the runners the
plugin uses).
"""

from gemmconf.isolation.guard import (
    LEAK_THRESHOLD_BYTES,
    LeakCheck,
    MemoryWatch,
    configured_backend,
    cuda_memory_watch,
    run_guarded,
)
from gemmconf.isolation.parent import InProcessRunner, IsolatedRunner, _exit_text
from gemmconf.isolation.request import ItemRequest, Reply, WorkerError
from gemmconf.isolation.timeouts import TimeoutPolicy, item_flops, parse_timeout, scaled_timeout
from gemmconf.isolation.worker import WorkerConfig, _plain_result, is_cuda_fault, serve, worker_main

__all__ = [
    "LEAK_THRESHOLD_BYTES",
    "InProcessRunner",
    "IsolatedRunner",
    "ItemRequest",
    "LeakCheck",
    "MemoryWatch",
    "Reply",
    "TimeoutPolicy",
    "WorkerConfig",
    "WorkerError",
    "_exit_text",
    "_plain_result",
    "configured_backend",
    "cuda_memory_watch",
    "is_cuda_fault",
    "item_flops",
    "parse_timeout",
    "run_guarded",
    "scaled_timeout",
    "serve",
    "worker_main",
]
