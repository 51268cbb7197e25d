"""Names of one item: the record id (`first/mm[fp32-127x65x33-nn]`, the stable public name that
expectations and reports use) and the pytest item name inside a suite file, which carries the
backend inside the brackets (`mm[fp32-127x65x33-nn@eager]`, `mm_dyn[@eager]`) so that every
bracket is at the end, as in pytest's own parametrized ids: --lf, --ff, --sw, JUnit and the
FAILED lines of the summary then read them."""

from __future__ import annotations


def item_name(instance_id: str, label: str) -> str:
    """The pytest item name of instance `instance_id` on backend `label`."""
    name, _, params = instance_id.split("/", 1)[-1].partition("[")
    return f"{name}[{params.removesuffix(']')}@{label}]"


def node_id(source: str, instance_id: str, label: str) -> str:
    """`<suite file>::<item name>` from a record's `source` (`path:line`)."""
    return f"{source.rsplit(':', 1)[0]}::{item_name(instance_id, label)}"
