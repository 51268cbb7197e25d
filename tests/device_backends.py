"""A planted backend whose import renames torch's PrivateUse1 device, as torchax 0.0.13's does
("jax"): torch.compile then fails while dynamo traces any program in the process. Import it only
in a process of its own (a subprocess run): the rename cannot be undone."""

from __future__ import annotations

import types

import torch

from gemmconf.backends.dynamo import dynamo_backend

torch.utils.rename_privateuse1_backend("planteddev")
_module = types.ModuleType("planteddev")
_module.is_available = lambda: True  # type: ignore[attr-defined]
_module.device_count = lambda: 1  # type: ignore[attr-defined]
_module.current_device = lambda: 0  # type: ignore[attr-defined]
torch._register_device_module("planteddev", _module)


def _pass_through(gm: torch.fx.GraphModule, example_inputs: object) -> object:
    return gm.forward


renaming_compiled = dynamo_backend(_pass_through, name="renaming-compiled")
