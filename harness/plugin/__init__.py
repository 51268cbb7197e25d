"""The gemmconf pytest plugin: suite files become items, items become verdicts and records.

Registered under the plugin name ``gemmconf`` through the installed package's ``pytest11`` entry
point (``-p no:gemmconf`` turns it off). One item per (scenario instance, backend); its record id
is ``<suite>/<scenario>[...]``.

Each feature is a plugin module of its own, declaring its options next to the code that reads
them, the way pytest's built-in plugins do: `state` (the run: --backend, --seed), `hardware`
(--require-hardware, --target-arch, worker pinning), `isolating` (--no-isolate,
--item-timeout), `sharding` (--shard, --durations-from; its helper `scheduling` deals xdist's
items by those durations), `benchmark` (--benchmark, --bench-mode), `speed` (kernel counts in
the summary), `items` (collection and running), `recording` (--results, the summary) and `page`
(--conformance-html). Reports extend
the run through the hooks in `hookspecs` (``pytest_gemmconf_record``,
``pytest_gemmconf_run_finished``).

The plugin is opt-in (`state`): it acts only in a run that collects the suite or is given a
gemmconf option, and is silent in any other pytest run of an environment where gemmconf is
installed. Each option also has a name of its own (`--gemmconf-backend` for `--backend`, see
`options`), for projects whose conftest.py defines an option of the same short name.

Items run in a worker process by default (`gemmconf.isolation`): a backend that crashes or hangs
fails its item, not the run. `--no-isolate` runs them in this process, for debuggers.
"""

# Leaves first: `state` imports the option parsers of the feature modules before it.
pytest_plugins = [
    "gemmconf.plugin.options",
    "gemmconf.plugin.hardware",
    "gemmconf.plugin.isolating",
    "gemmconf.plugin.sharding",
    "gemmconf.plugin.benchmark",
    "gemmconf.plugin.speed",
    "gemmconf.plugin.state",
    "gemmconf.plugin.recording",
    "gemmconf.plugin.items",
    "gemmconf.plugin.page",
]
