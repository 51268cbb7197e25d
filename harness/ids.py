"""Names of one item: the record id (`first/mm[fp32-127x65x33-nn]`, the stable public name that
expectations and reports use) and the pytest item name inside a suite file, which carries the
backend inside the brackets (`mm[fp32-127x65x33-nn@eager]`, `mm_dyn[@eager]`) so that every
bracket is at the end, as in pytest's own parametrized ids: --lf, --ff, --sw, JUnit and the
FAILED lines of the summary then read them."""

from __future__ import annotations

import shlex
from pathlib import Path


def item_name(instance_id: str, label: str) -> str:
    """The pytest item name of instance `instance_id` on backend `label`."""
    name, _, params = instance_id.split("/", 1)[-1].partition("[")
    return f"{name}[{params.removesuffix(']')}@{label}]"


def node_id(source: str, instance_id: str, label: str) -> str:
    """`<suite file>::<item name>` from a record's `source` (`path:line`)."""
    return f"{source.rsplit(':', 1)[0]}::{item_name(instance_id, label)}"


def reproduce_command(
    suite_file: Path,
    instance_id: str,
    label: str,
    options: list[str],
    *,
    suites: Path,
    explicit_suites: bool,
    cwd: Path,
) -> str:
    """The command that runs one item again from `cwd`: pytest on the suite file where it lies
    under `cwd` (a checkout) outside an installed package, else `gemmconf run` with the file
    named relative to the suite folder, as its node ids are (an installed suite; `--suites`
    where it was given). `label` is
    the name the item runs under (in its node id); `options` carry `--backend SPEC` and the rest.
    `python -m pytest`, like `gemmconf run`, imports `--backend module:attr` from `cwd`."""
    file, suites = suite_file.resolve(), suites.resolve()
    name = item_name(instance_id, label)
    # a virtualenv inside the project folder holds the installed suite under `cwd` too: that one
    # is `gemmconf run`'s (a torchao trial pasted `python -m pytest venv/lib/python3.11/...`)
    installed = any(part in ("site-packages", "dist-packages") for part in file.parts)
    if file.is_relative_to(cwd.resolve()) and not installed:
        node = f"{file.relative_to(cwd.resolve())}::{name}"
        return shlex.join(["python", "-m", "pytest", node, *options])
    extra = ["--suites", str(suites)] if explicit_suites else []
    return shlex.join(["gemmconf", "run", f"{file.relative_to(suites)}::{name}", *options, *extra])


# how a failure's details begin the line that says no standalone repro can be written for it
# (gemmconf.report.groups picks a group's representative among the others)
NO_STANDALONE = "No standalone repro"


def standalone_needs(spec: str) -> str:
    """What a standalone repro of a backend (a --backend spec) needs besides the file: torch
    alone for PyTorch's own backends, else torch and the backend's code."""
    base, _, option = spec.partition(":")
    if base in ("eager", "inductor", "inductor-max-autotune"):
        return "torch alone"
    if base == "dynamo":
        return (
            f"torch, and the package that registers {option or 'the compiler'} where torch does not"
        )
    if base == "reference":
        return "torch and gemmconf's reference backend (gemmconf_reference)"
    return "torch and the backend's own package"


def standalone_command(
    instance_id: str,
    spec: str,
    *,
    seed: int | None = 0,
    target_arch: str | None = None,
    out: str | None = None,
) -> str:
    """`gemmconf repro ID --backend SPEC`: the command that writes an item's standalone repro
    (gemmconf.repro), a Python file that needs what `standalone_needs` says."""
    words = ["gemmconf", "repro", instance_id, "--backend", spec]
    if seed:
        words += ["--seed", str(seed)]
    if target_arch:
        words += ["--target-arch", target_arch]
    if out:
        words += ["-o", out]
    return shlex.join(words)
