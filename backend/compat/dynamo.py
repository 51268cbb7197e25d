"""What torch's dynamo and matmul settings differ in between the torch versions supported."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch


def tf32_allowed() -> bool:
    """The harness's "tf32" mode: torch.backends.cuda.matmul.allow_tf32 at compile time."""
    return bool(torch.backends.cuda.matmul.allow_tf32)


@contextlib.contextmanager
def ops_in_graph() -> Iterator[None]:
    """Let dynamo put into its graph the ops the backend lowers that this torch's dynamo skips.

    torch 2.11's dynamo does not know `torch._scaled_mm_v2` (the op of `F.scaled_mm`): it treats
    it as a skipped builtin, graph-breaks, and runs every `F.scaled_mm` eagerly, so no backend
    built on torch.compile receives one (seen on an H100, 2026-11-23). Inside this context the op
    is allowed in the graph, as `torch.compiler.allow_in_graph` would do, for the calls the
    reference backend compiles only: other backends in the same process keep dynamo's own rule.
    Where dynamo already traces the op (torch 2.13), nothing changes."""
    from torch._dynamo import trace_rules

    allowed = getattr(trace_rules, "_allowed_callable_ids", None)
    ops = [getattr(torch, name, None) for name in DYNAMO_SKIPPED_OPS]
    added = [
        op
        for op in ops
        if op is not None and allowed is not None and id(op) not in allowed
        if _skipped_by_dynamo(op)
    ]
    for op in added:
        allowed.add(id(op))
    try:
        yield
    finally:
        for op in added:
            allowed.remove(id(op))


DYNAMO_SKIPPED_OPS = ("_scaled_mm_v2",)  # torch functions some dynamo versions skip


def _skipped_by_dynamo(op: Any) -> bool:
    from torch._dynamo import trace_rules

    try:
        rule = trace_rules.lookup(op)
    except Exception:  # an internal API that moved: change nothing
        return False
    return rule is not None and "Skip" in getattr(rule, "__name__", "")
