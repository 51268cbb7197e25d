"""`gemmconf new-backend NAME`: a backend package to start from.

It writes a pip-installable package: a backend object behind gemmconf's Backend protocol (it
runs the function as it is: replace `compile` with your own), an entry point that makes
`--backend NAME` find it once installed, and an expectations file of its own, shipped with it
and named by the backend's `expectations` attribute.
"""

from __future__ import annotations

import re
from pathlib import Path

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
description = "The {name} GEMM backend, tested with gemmconf"
requires-python = ">=3.11"
dependencies = ["gemmconf", "torch"]

# `gemmconf run --backend {name}` finds the backend through this entry point.
[project.entry-points."gemmconf.backends"]
{name} = "{package}.backend:Backend"

[tool.setuptools]
packages = ["{package}"]

[tool.setuptools.package-data]
{package} = ["expectations.yaml"]
"""

BACKEND = '''\
"""The {name} backend: gemmconf calls `compile` once per item, then the result per shape set."""

from pathlib import Path


class Compiled:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *inputs):
        return self.fn(*inputs)  # replace: run your kernels here

    def artifacts(self) -> dict[str, str]:
        return {{}}  # generated code by kind ("triton", "ptx", ...), for the suite's code checks

    def compiles(self) -> int:
        return 1  # how many (re)compilations so far: the recompile checks read it


class Backend:
    name = "{name}"
    expectations = Path(__file__).with_name("expectations.yaml")  # known failures, shipped

    def availability(self) -> str | None:
        return None  # or why it cannot run on this machine: its items are then skipped

    def supports(self, instance) -> str | None:
        # instance.op: the op's name in gemmconf's suites/README.md (scaled_mm is
        # torch._scaled_mm, scaled_mm_v2 F.scaled_mm; out= forms are mm_out, ...)
        if instance.op in ("scaled_mm", "scaled_mm_v2", "int_mm"):  # declared, not discovered
            return f"{{instance.op}} is not implemented"
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        return Compiled(fn)
'''

EXPECTATIONS = """\
# Known failures of the {name} backend, shipped with the package (see gemmconf's suites/README.md,
# "an expectation"). The first entry that matches an item wins (a later one that expects its
# failure, where the first expects another kind or message); an entry that matches nothing in
# the suite is an error; an xfail that passes fails the run (unless `strict: false`).
backend: {name}
expectations:
  # - match: {{op: [scaled_mm, scaled_mm_v2, int_mm]}}  # record fields: op, dtype, markers, axes
  #   status: xfail                             # xfail (the default) or skip
  #   reason: fp8 and int8 are not implemented yet
  # - match: "dense/layouts_2d[*-padded_odd-*]"  # or an id pattern: * and ?, brackets literal
  #   reason: odd leading strides are read as contiguous
  #   issue: https://example.invalid/issues/1
  # - match: "fscaled/blockwise[*]"
  #   hardware: [sm80, sm100]                    # only where items run on these classes
  #   reason: blockwise scales are sm90-only for now
  #
  # A backend built on torch.compile fails these before it is handed a graph (dynamo or a meta
  # function raises, or dynamo runs the call eagerly; torch 2.11-2.13): gemmconf's own
  # torch.compile backends list them too (suites/expectations/reference.yaml, inductor.yaml).
  # - {{match: "grouped/not_bf16[*]", reason: dynamo cannot trace fp16/fp32 torch._grouped_mm}}
  # - {{match: "fscaled/*_unswizzled[*]", reason: the meta function raises RuntimeError}}
  # - {{match: "out/targets[*-strided]", reason: not compiled, dynamo runs the out= call eagerly}}
  # - {{match: "out/resized[*]", reason: not compiled, dynamo runs the out= call eagerly}}
  # - {{match: "scaled_grouped/rejected_cuda[*]", reason: meta function raises RuntimeError}}
  # - {{match: "zero_size/scaled_grouped_errors[b0]", reason: meta function raises RuntimeError}}
  []
"""

README = """\
# {name}

A GEMM backend for PyTorch, tested with [gemmconf](https://pypi.org/project/gemmconf/).

```
pip install -e .
gemmconf run --backend {name} -m cpu          # the conformance suite; reports/ here
gemmconf run --backend {name} --lf            # only what failed last time
gemmconf report diff before.json reports/results.json
```

`{package}/backend.py` is the backend; `{package}/expectations.yaml` lists its known failures.
"""

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def write(name: str, where: Path) -> Path:
    """Write the package for backend `name` into `where/name`; returns that folder."""
    if not NAME_RE.match(name):
        raise ValueError(f"{name!r}: a backend name is letters, digits, '-' and '_'")
    folder = where / name
    if folder.exists():
        raise FileExistsError(f"{folder} exists: choose another name or folder")
    package = name.replace("-", "_").lower()
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"{package}/__init__.py": '"""The {name} GEMM backend."""\n',
        f"{package}/backend.py": BACKEND,
        f"{package}/expectations.yaml": EXPECTATIONS,
    }
    for relative, template in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(name=name, package=package))
    return folder
