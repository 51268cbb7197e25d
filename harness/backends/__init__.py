"""Finding the systems under test by name (docs/design.md, "Selecting backends").

A NAME given to ``--backend`` is, in this order:

1. a built-in, optionally with an option after a colon (``inductor-max-autotune:TRITON``), among
   them ``dynamo:NAME`` for any torch.compile backend registered by that name;
2. a name registered by an installed package under the entry-point group ``gemmconf.backends``
   (the entry point loads a Backend or a factory; an option after a colon is passed to it);
3. an import path ``package.module:attr`` naming a Backend, a zero-argument factory of one, or
   a torch.compile backend (a callable of a graph module and its example inputs, or a
   zero-argument factory of one), which runs through `DynamoBackend` under the spec as its name.

Anything else is an `UnknownBackendError` whose message lists what is available.
"""

from __future__ import annotations

import importlib
import inspect
import traceback
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from gemmconf.backends.base import Backend, Compiled, RunOptions

__all__ = [
    "ENTRY_POINT_GROUP",
    "Backend",
    "BackendInfo",
    "Compiled",
    "RunOptions",
    "UnknownBackendError",
    "known_backends",
    "record_name",
    "resolve",
    "split_specs",
]

ENTRY_POINT_GROUP = "gemmconf.backends"

# name -> (import path of a factory taking an optional option string, whether options are taken)
BUILTINS: dict[str, tuple[str, bool]] = {
    "reference": ("gemmconf.backends.reference:make_reference", True),
    "eager": ("gemmconf.backends.eager:EagerBackend", False),
    "inductor": ("gemmconf.backends.inductor:make_inductor", False),
    "inductor-max-autotune": ("gemmconf.backends.inductor:make_inductor_max_autotune", True),
    # any torch.compile backend by its registered name: dynamo:aot_eager, dynamo:openvino, ...
    "dynamo": ("gemmconf.backends.dynamo:make_dynamo", True),
}

# what a torch.compile compiler function given as `module:attr` runs through, found by its path as
# the built-ins are (the adapter's module imports this one)
COMPILER_ADAPTER = "gemmconf.backends.dynamo:dynamo_backend"


class UnknownBackendError(ValueError):
    """A --backend NAME that is neither built in, registered, nor importable."""


@dataclass(frozen=True)
class BackendInfo:
    name: str
    origin: str  # "built-in", "entry point (package)", or the import path


def known_backends() -> list[BackendInfo]:
    """Built-ins and installed plugins, for error messages and `gemmconf backends`."""
    found = [BackendInfo(name, "built-in") for name in BUILTINS]
    for entry in _entry_points():
        package = entry.dist.name if entry.dist else "unknown package"
        found.append(BackendInfo(entry.name, f"entry point ({package})"))
    return found


def _entry_points() -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def split_specs(text: str) -> list[str]:
    """`--backend`'s comma-separated list, where a backend's own option may hold commas
    (`inductor-max-autotune:ATEN,TRITON`, `reference:autotune,persistent=never`,
    `dynamo:inductor,mode=max-autotune`): a piece after a spec with an option continues it,
    unless it names a backend itself (a built-in, an entry point, an import path)."""
    names = {info.name for info in known_backends()}
    specs: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        starts = not piece or ":" in piece or piece in names
        if specs and ":" in specs[-1] and not starts:
            specs[-1] += f",{piece}"
        else:
            specs.append(piece)
    return specs


def resolve(spec: str) -> Backend:
    """The Backend a --backend NAME stands for."""
    spec = spec.strip()
    if not spec:
        raise UnknownBackendError(_unknown_message(spec, "an empty backend name"))
    name, _, option = spec.partition(":")
    if name in BUILTINS:
        path, takes_option = BUILTINS[name]
        if option and not takes_option:
            raise UnknownBackendError(f"backend {name!r} takes no option (got {spec!r})")
        factory = _import(path, spec)
        backend = factory(option) if option else factory()
        return _checked(backend, spec)
    for entry in _entry_points():
        if entry.name == name:
            try:
                loaded = entry.load()
            except Exception as exc:  # ImportError too: the package is installed, its code failed
                raise UnknownBackendError(
                    f"backend {spec!r}: loading its entry point {entry.value!r} raised "
                    f"{_raised_at(exc)}"
                ) from exc
            if option and not _takes_option(loaded):
                raise UnknownBackendError(f"backend {name!r} takes no option (got {spec!r})")
            backend = loaded(option) if option else _instantiate(loaded, spec)
            return _checked(backend, spec)
    if (":" in spec and "." in name) or (":" in spec and _importable(name)):
        return _checked(_instantiate(_import(spec, spec), spec), spec)
    if ":" in spec and option and name.isidentifier():  # `module:attr` whose module is not found
        raise UnknownBackendError(
            _unknown_message(
                spec,
                f"unknown backend {spec!r}: no built-in or entry point is named {name!r}, and "
                f"no module {name!r} is on the import path (for a module in the current folder, "
                "run with PYTHONPATH=. or install its package)",
            )
        )
    raise UnknownBackendError(_unknown_message(spec, f"unknown backend {spec!r}"))


def record_name(spec: str, backend: Any) -> str:
    """The name records, node ids and expectation files use: the spec for built-ins and entry
    points (it keeps their options, `inductor-max-autotune:TRITON`), the backend's name for an
    import path (`my_gemm:MyGemm` runs as its `name`)."""
    name = getattr(backend, "name", spec)
    registered = spec.split(":")[0] in {info.name for info in known_backends()}
    return spec if registered and spec.split(":")[0] == name.split(":")[0] else name


def _takes_option(factory: Any) -> bool:
    """Whether a registered factory can be called with one option string."""
    try:
        inspect.signature(factory).bind("option")
    except TypeError:  # no such parameter, or not callable at all
        return False
    except ValueError:  # no signature to read (a builtin): let the call decide
        return True
    return True


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _import(path: str, spec: str) -> Any:
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownBackendError(
            f"backend {spec!r}: cannot import {module_name!r}: {exc}"
        ) from exc
    except Exception as exc:  # the module's own code raised while it was imported
        raise UnknownBackendError(
            f"backend {spec!r}: importing {module_name!r} raised {_raised_at(exc)}"
        ) from exc
    target: Any = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise UnknownBackendError(
                f"backend {spec!r}: module {module_name!r} has no attribute {attr!r}"
            ) from None
    return target


def _instantiate(obj: Any, spec: str) -> Any:
    """A Backend instance as is; a class or factory called with no arguments; a torch.compile
    backend (`_compiler_function`), given or made by that call, wrapped in `DynamoBackend`
    under the spec as its name (`--backend my_module:my_compiler`, as one writes
    `torch.compile(fn, backend=my_compiler)`). A callable that needs arguments of any other
    shape is an UnknownBackendError naming its signature, not a TypeError from our call."""
    if isinstance(obj, Backend) and not isinstance(obj, type):
        return obj
    if not callable(obj):
        return obj
    if _compiler_function(obj):
        return _as_dynamo_backend(obj, spec)
    if _binds(obj, 0) is False:
        raise UnknownBackendError(
            f"backend {spec!r}: {_callable_label(obj)}{_signature(obj)} needs arguments: "
            "--backend package.module:attr names a Backend, a zero-argument factory of one, or "
            "a torch.compile backend (a callable of a graph module and its example inputs)"
        )
    try:
        made = obj()
    except Exception as exc:
        raise UnknownBackendError(
            f"backend {spec!r}: making it, {_callable_label(obj)}() raised {_raised_at(exc)}"
        ) from exc
    if _compiler_function(made):  # a class of torch.compile backends (its instances compile)
        return _as_dynamo_backend(made, spec)
    return made


def _compiler_function(obj: Any) -> bool:
    """A torch.compile backend: not a class and not a Backend, callable with two positional
    arguments (the graph module and its example inputs) and not with none (a factory)."""
    if isinstance(obj, (type, Backend)) or not callable(obj):
        return False
    return _binds(obj, 2) is True and _binds(obj, 0) is False


def _binds(obj: Any, count: int) -> bool | None:
    """Whether `obj` can be called with `count` positional arguments; None where Python gives
    no signature to read (a builtin)."""
    try:
        inspect.signature(obj).bind(*([None] * count))
    except TypeError:
        return False
    except ValueError:
        return None
    return True


def _raised_at(exc: Exception) -> str:
    """`Type: message (at file:line)`: the innermost frame, where it was raised (a backend's own
    file, a package it imports), which a traceback shows last."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _callable_label(obj: Any) -> str:
    return getattr(obj, "__qualname__", None) or type(obj).__name__


def _as_dynamo_backend(compiler: Any, spec: str) -> Backend:
    return _import(COMPILER_ADAPTER, spec)(compiler, name=spec)


def _checked(backend: Any, spec: str) -> Backend:
    missing = [a for a in ("name", "availability", "compile") if not hasattr(backend, a)]
    if missing:
        hint = ""
        if callable(backend) and not isinstance(backend, type):
            hint = (
                "; a torch.compile backend (a callable of a graph module and example inputs) "
                "runs as given when its signature takes those two, as `dynamo:NAME` where "
                "torch._dynamo registers it, or wrapped: "
                "`backend = gemmconf.backends.dynamo.dynamo_backend(compiler, name=...)` in a "
                "module of yours, passed as --backend module:backend"
            )
        raise UnknownBackendError(
            f"backend {spec!r} resolved to {type(backend).__name__}, which lacks "
            f"{', '.join(missing)} of the Backend protocol (gemmconf.backends.base){hint}"
        )
    return backend


def _unknown_message(spec: str, what: str) -> str:
    known = ", ".join(f"{b.name} ({b.origin})" for b in known_backends())
    return (
        f"{what}. Known backends: {known}; or an import path 'package.module:attr' naming a "
        f"Backend or a factory. Built-ins with options: reference:autotune (and persistent=, "
        f"cudagraphs, ws, split_k=), inductor-max-autotune:TRITON, "
        f":CUTLASS, :ATEN or a comma list, dynamo:NAME for a torch.compile backend registered "
        f"by NAME (dynamo:aot_eager)."
    )
