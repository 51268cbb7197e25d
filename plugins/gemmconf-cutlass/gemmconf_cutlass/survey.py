"""Survey and prebuild: the kernels a suite run needs, found by planning on the CPU.

Building a kernel takes nvcc about a minute (the backend's `compile_timeout_s` gives items the
time for it under `--item-timeout auto`). Before a suite run on a GPU, build what it needs in
parallel, which is much faster (planning runs on the CPU; kernels land in the cache):

    python -m gemmconf_cutlass 'fp8/*' 'first/*' --build --jobs 16

`--check` also runs each planned instance through gemmconf's own runner and oracle
(`gemmconf.api.run`) on the CPU, every launch computed in torch by `emulate_launch`, and lists
what the harness fails: the backend does not judge its own results.

The suite is read through `gemmconf.api`, gemmconf's interface for tools like this one.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

from gemmconf import api
from gemmconf_cutlass import codegen
from gemmconf_cutlass.backend import CutlassBackend
from gemmconf_cutlass.launch import emulate_launch
from gemmconf_cutlass.lowering import Launcher
from gemmconf_cutlass.planning import CutlassLaunchPlan


@dataclass
class Survey:
    """What planning the suite's instances on CPU tensors found."""

    specs: dict[codegen.KernelSpec, list[str]] = field(default_factory=dict)  # -> instance ids
    not_implemented: dict[str, str] = field(default_factory=dict)  # id -> the backend's message
    too_large: list[str] = field(default_factory=list)  # ids not planned (host memory)
    errors: dict[str, str] = field(default_factory=dict)  # id -> an unexpected exception
    failed: dict[str, str] = field(default_factory=dict)  # id -> the harness's verdict (--check)


class _NotedLaunches:
    """A launcher that notes the kernel of every plan it is given, then hands the plan on."""

    def __init__(self, launch: Launcher) -> None:
        self.launch = launch
        self.specs: dict[codegen.KernelSpec, None] = {}  # a dict: first-seen order

    def __call__(self, plan: CutlassLaunchPlan) -> codegen.Built | None:
        self.specs[plan.spec] = None
        return self.launch(plan)


def survey(
    instances: Sequence[api.ScenarioInstance], *, check: bool = False, max_elements: int = 1 << 26
) -> Survey:
    """Compile each instance with planning-only launches; with `check`, also have the harness
    judge it with emulated launches.

    Runs on the CPU: every launch is planned exactly as on a GPU (same strides, padding, copies),
    so the kernels found are the ones a GPU run of these instances builds. Instances with more
    than `max_elements` operand elements in a shape set are left out (their kernels are those of
    smaller instances with the same dtypes, layouts and alignment).
    """
    found = Survey()
    for instance in instances:
        if instance.requires.device == "cpu" or instance.checks.raises:
            continue
        if instance.scaling == "blockwise":  # not implemented, and CPU eager has no blockwise
            found.not_implemented[instance.id] = "blockwise-scaled _scaled_mm"
            continue
        if api.operand_elements(instance) > max_elements:
            found.too_large.append(instance.id)
            continue
        torch._dynamo.reset()  # each instance compiles a fresh function: drop the old ones
        launches = _NotedLaunches(_plan_only)
        try:
            _plan(instance, CutlassBackend(launcher=launches, allow_cpu=True))
            if check:
                emulated = CutlassBackend(launcher=emulate_launch, allow_cpu=True)
                verdict = api.run(instance, emulated, device="cpu")
                if not verdict.passed:
                    found.failed[instance.id] = verdict.summary
        except NotImplementedError as exc:
            found.not_implemented[instance.id] = str(exc)
        except Exception as exc:
            found.errors[instance.id] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        for spec in launches.specs:
            found.specs.setdefault(spec, []).append(instance.id)
    return found


def _plan(instance: api.ScenarioInstance, backend: CutlassBackend) -> None:
    """Compile and call the instance's program on every shape set, as an item does."""
    item = api.program(instance, device="cpu")
    with item.numerics():
        compiled = backend.compile(item.function, item.arguments[0], dynamic=item.dynamic)
        for arguments in item.arguments:
            compiled(*arguments)


def _plan_only(plan: CutlassLaunchPlan) -> None:
    return None  # D keeps whatever torch.empty gave it: only the plan is wanted


def prebuild(
    specs: Sequence[codegen.KernelSpec], *, jobs: int, outputs: Sequence[str] = ("so", "sass")
) -> dict[codegen.KernelSpec, str]:
    """Build kernels in parallel into the cache; returns the failures (spec -> message)."""

    def one(spec: codegen.KernelSpec) -> str | None:
        try:
            codegen.build(codegen.render(spec), codegen.kernel_name(spec), outputs)
        except (codegen.BuildError, codegen.CodegenError) as exc:
            return str(exc)
        return None

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = dict(zip(specs, pool.map(one, specs), strict=True))
    return {spec: message for spec, message in results.items() if message}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gemmconf_cutlass",
        description="Plan suite instances on the CPU to find the CUTLASS kernels a GPU run "
        "needs; optionally have gemmconf check the plans (emulated) and build the kernels.",
    )
    parser.add_argument("patterns", nargs="*", default=["*"], help="instance id patterns")
    parser.add_argument(
        "--suites", default=None, help="suite directory (default: the suite gemmconf installs)"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="also run each instance through gemmconf's runner and oracle, launches emulated "
        "in torch, and list what fails",
    )
    parser.add_argument("--build", action="store_true", help="build the kernels into the cache")
    parser.add_argument("--outputs", default="so,sass", help="with --build (default so,sass)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--max-elements",
        type=int,
        default=1 << 26,
        help="skip instances with more operand elements (host memory and time)",
    )
    args = parser.parse_args(argv)
    instances = api.instances(args.patterns, args.suites)
    start = time.perf_counter()
    found = survey(instances, check=args.check, max_elements=args.max_elements)
    checked = f"{len(found.failed)} failed gemmconf's check, " if args.check else ""
    print(
        f"{len(instances)} instances planned in {time.perf_counter() - start:.0f} s: "
        f"{len(found.specs)} kernels, {len(found.not_implemented)} not implemented, "
        f"{len(found.errors)} errors, {checked}{len(found.too_large)} too large to plan here"
    )
    for spec, ids in found.specs.items():
        print(f"  {codegen.kernel_name(spec)}  ({len(ids)} instances, e.g. {ids[0]})")
    for title, table in (("error", found.errors), ("failed", found.failed)):
        for instance_id, message in table.items():
            print(f"  {title}: {instance_id}: {message}")
    if args.build:
        start = time.perf_counter()
        failed = prebuild(list(found.specs), jobs=args.jobs, outputs=args.outputs.split(","))
        print(
            f"built {len(found.specs) - len(failed)} of {len(found.specs)} kernels in "
            f"{time.perf_counter() - start:.0f} s into {codegen.cache_root()}"
        )
        for spec, message in failed.items():
            print(f"  FAILED {codegen.kernel_name(spec)}:\n{message}")
        if failed:
            return 1
    return 1 if found.errors or found.failed else 0
