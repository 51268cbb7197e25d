"""The gemmconf pytest plugin: suite files become items, items become verdicts and records.

Registered under the plugin name ``gemmconf`` through the installed package's ``pytest11`` entry
point (``-p no:gemmconf`` turns it off). One item per (scenario instance, backend); its record id
is ``<suite>/<scenario>[...]``.

Each feature is a plugin module of its own, declaring its options next to the code that reads
them and keeping its state under its own stash key, the way pytest's built-in plugins do: `run`
(--backend, --seed, --suites; opt-in), `hardware` (--require-hardware, --target-arch, worker
pinning), `isolating` (--no-isolate, --item-timeout), `sharding` (--shard, --durations-from; its
helper `scheduling` deals xdist's items by those durations), `benchmark` (--benchmark,
--bench-mode), `speed` (kernel counts in the summary), `items` (collection and running;
--expectations), `recording` (--results, the summary), `page` (--conformance-html), `terse`
(each failure one line in the terminal, its details on the page) and `long_items` (a line for
an item while it runs long).

No feature imports another. What one must know of another travels as a small typed fact in
`facts` (the machine, the backends, where items run, the shard, the benchmark mode), written by
the feature that knows it, or through the hooks in `hookspecs`, which reports implement too
(``pytest_gemmconf_record``, ``pytest_gemmconf_run_finished``).

The plugin is opt-in (`run`): it acts only in a run that collects the suite or is given a
gemmconf option, and is silent in any other pytest run of an environment where gemmconf is
installed. Each option also has a name of its own (`--gemmconf-backend` for `--backend`, see
`options`), for projects whose conftest.py defines an option of the same short name.

Items run in a worker process by default (`gemmconf.isolation`): a backend that crashes or hangs
fails its item, not the run. `--no-isolate` runs them in this process, for debuggers.
"""

import pytest

from gemmconf.plugin import hookspecs

# The order options are listed in --help.
pytest_plugins = [
    "gemmconf.plugin.options",
    "gemmconf.plugin.hardware",
    "gemmconf.plugin.isolating",
    "gemmconf.plugin.sharding",
    "gemmconf.plugin.benchmark",
    "gemmconf.plugin.speed",
    "gemmconf.plugin.run",
    "gemmconf.plugin.recording",
    "gemmconf.plugin.items",
    "gemmconf.plugin.page",
    "gemmconf.plugin.terse",
    "gemmconf.plugin.long_items",
]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
