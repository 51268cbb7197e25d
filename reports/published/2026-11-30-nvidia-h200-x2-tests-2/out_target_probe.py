"""Why a GPU run names the planted out_target_unwritten bug "Unwritten output" (the poison
check) where the CPU names it "Unwritten out= target": print the out= target's first bits when
the target check takes its copy, what the call returned, and every problem the item found."""

import sys

import torch

sys.path.insert(0, "tests")
import planted_backends
import test_planted_bugs as planted

from gemmconf.checks import guards
from gemmconf.outcome import render


def bits(t: torch.Tensor) -> list[str]:
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()]
    raw = t.detach().contiguous().reshape(-1)[:3].view(width).cpu().tolist()
    return [hex(v & ((1 << (8 * t.element_size())) - 1)) for v in raw]


watch_init = guards._TargetWatch.__init__
watch_problems = guards._TargetWatch.problems


def init(self, item, targets, like):
    watch_init(self, item, targets, like)
    for (name, target), before in zip(targets, self.before, strict=True):
        print(
            f"  watch: {name} {target.dtype} {tuple(target.shape)} {target.stride()} "
            f"{target.device} ptr {target.data_ptr():#x} bits {bits(before)}"
        )


def problems(self, actual):
    for name, target in self.targets:
        same = isinstance(actual, torch.Tensor) and actual.data_ptr() == target.data_ptr()
        print(f"  after: {name} bits {bits(target)}; the call returned the target: {same}")
    return watch_problems(self, actual)


guards._TargetWatch.__init__ = init
guards._TargetWatch.problems = problems
for path in ("out/out.yaml",):
    for instance in planted.runnable(path):
        if instance.id not in ("out/dtypes[mm-bf16-contiguous]", "out/targets[mm-contiguous]"):
            continue
        print(instance.id, "on", planted.device_of(instance))
        outcome = planted.run_item(
            instance,
            planted_backends.out_target_unwritten,
            seed=0,
            device=planted.device_of(instance),
            target=None,
        )
        print("  problems:", [type(p).__name__ for p in outcome.problems])
        print("  reason:", render(outcome).reason[:300])
