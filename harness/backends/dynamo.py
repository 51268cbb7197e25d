"""What every backend adapter built on torch.compile needs, in one place, and the adapter itself
for any torch.compile backend: the documented toolkit for outside packages (with
`gemmconf.backends.base` and `.cache`; README, "Three ways to plug a backend in").

The adapter:

- `DynamoBackend(compiler, *, name=, mode=, options=, fullgraph=)`: a torch.compile backend as a
  gemmconf Backend. `compiler` is a name dynamo knows (`torch._dynamo.list_backends()`; a package
  registers one with `torch._dynamo.register_backend` or under the entry-point group
  `torch_dynamo_backends`) or a compiler function `(gm, example_inputs) -> callable`. Each item
  compiles `torch.compile(fn, backend=compiler, mode=mode, options=options, dynamic=dynamic)`
  with everything below applied. `--backend dynamo:NAME[,key=value...]` is this, built in
  (`make_dynamo`): `dynamo:aot_eager`, `dynamo:inductor,mode=max-autotune-no-cudagraphs`.
- `dynamo_backend(compiler_fn, name=...)`: the same, for a compiler function of one's own.

What `dynamic` means (`Backend.compile(fn, example_inputs, *, dynamic)`) is torch.compile's
`dynamic=`, set by the scenario's compile mode: `False` for `static` (specialize on every shape:
each distinct shape set may compile once), `True` for `dynamic` (symbolic shapes from the first
compile: one compile serves every shape set), `None` for `mark_dynamic` (torch's default: the dims
the scenario names are marked with `torch._dynamo.mark_dynamic` on the example inputs, the rest
are static). A backend that is not torch.compile-based may read it as a hint or ignore it; the
recompile budget (`compiles()`) is what is checked.

The pieces, for adapters that call torch.compile themselves:

- `isolated_entry(fn)`: dynamo caches compiled code on the code object and keeps its automatic-
  dynamic state by (file, line, name); compiling a copy with a fresh code object and name keeps
  one item's compiles and recompile counts from leaking into the next.
- `recompile_limit_patches()`: dynamo's recompile limit raised to RECOMPILE_LIMIT and made to
  raise when hit, so a backend that recompiles on every shape is counted, not silently run eagerly.
- `GraphBreaks`: dynamo's graph-break messages during an item's calls. Where dynamo captured no
  graph at all it runs the whole frame eagerly and never calls the backend (a non-contiguous
  `out=` target; `F.scaled_mm` on torch 2.11, whose `_scaled_mm_v2` dynamo skips): the item is
  then "not compiled" (`uncaptured()`), never a pass of eager's numbers.
- `FrameWatch`: the same judgment for any backend, from dynamo's own counters: the runner
  watches every backend whose compiled callable has no `uncaptured()` of its own (an outside
  backend calling torch.compile itself). Dynamo processed a frame, captured no graph, and the
  backend counts no compile: dynamo ran the program eagerly. A backend that never enters dynamo
  (an aten-override library) leaves the counters alone and is never so judged.
- `DynamoCompiled(fn, compiler, *, dynamic)`: all of the above around one torch.compile of a
  compiler object that counts its own `invocations` (the reference and CUTLASS backends').
- `collecting_output_code(sink)` and `artifacts_of(modules)`: inductor's output modules while it
  compiles, and the kernel sources in them by artifact kind (the inductor adapters' artifacts).
- `compiled_autograd()` and `AutogradWatch`: a backward scenario's backward under compiled
  autograd (`compiled_autograd:`): dynamo's `compiled_autograd` config on while the backend
  compiles and runs, so every torch.compile the backend makes captures the backward pass and
  compiles it with the same backend; the watch counts the captures and the compiles of the
  captured graphs, which the seed asserts.
- `skip_guard_latency_profile()`: dynamo's per-compile guard timing, which the harness never
  reads, left out (a fifth of a small item's compile on a CPU machine).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import itertools
import re
import sys
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "RECOMPILE_LIMIT",
    "AutogradWatch",
    "DynamoBackend",
    "DynamoCompiled",
    "FrameWatch",
    "GraphBreaks",
    "TorchCompiled",
    "artifacts_of",
    "collecting_output_code",
    "compile_callbacks",
    "compiled_autograd",
    "dynamo_backend",
    "isolated_entry",
    "make_dynamo",
    "recompile_limit_patches",
    "registered_backends",
    "scenario_dynamo_config",
    "with_dynamo_config",
]

RECOMPILE_LIMIT = 64

_serial = itertools.count(1)


def skip_guard_latency_profile() -> bool:
    """After each compile dynamo times one run of the new guards for its compile metrics,
    flushing the CPU caches first (torch 2.11-2.13: `guards.profile_guard_manager`, measured at
    about 30 ms per compile on the 2-core CPU machine, a fifth of a small item's compile). No
    result, guard or recompile depends on it, and the harness reads no such metric: this makes it
    report 0 us at once. It never imports dynamo: called before each item, it applies from the
    first item after a compile loaded dynamo. Returns whether it applied (False before that, or
    where torch has no such function)."""
    guards = sys.modules.get("torch._dynamo.guards")
    if guards is None:
        return False
    profile = getattr(guards, "profile_guard_manager", None)
    if profile is None:
        return False
    if not getattr(profile, "skipped_by_gemmconf", False):
        guards.profile_guard_manager = _no_guard_latency
    return True


def _no_guard_latency(*args: Any, **kwargs: Any) -> float:
    return 0.0


_no_guard_latency.skipped_by_gemmconf = True  # type: ignore[attr-defined]


def isolated_entry(fn: Callable[..., Any]) -> types.FunctionType:
    """A function that runs `fn` with a code object and name no other compile has seen."""
    base = re.sub(r"\W", "_", getattr(fn, "__name__", type(fn).__name__))
    name = f"{base}__gemmconf_{next(_serial)}"
    if isinstance(fn, types.FunctionType):
        template = fn
    else:

        def template(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

    entry = types.FunctionType(
        template.__code__.replace(co_name=name, co_qualname=name),
        template.__globals__,
        name,
        template.__defaults__,
        template.__closure__,
    )
    entry.__kwdefaults__ = template.__kwdefaults__
    return entry


def scenario_dynamo_config(instance: Any) -> dict[str, Any]:
    """The scenario's `dynamo_config` (gemmconf.scenario.dynamo_options: the dynamo options its
    seed compiled under), which every torch.compile-based backend applies with the recompile
    limit; empty where it has none."""
    return dict(getattr(instance, "dynamo_config", ()) or ())


def with_dynamo_config(backend: Any, instance: Any) -> Any:
    """`backend` for one item (a `for_instance`, base.py): a copy whose `dynamo_config` is the
    scenario's, or `backend` itself where neither has one."""
    config = scenario_dynamo_config(instance)
    if config == getattr(backend, "dynamo_config", {}):
        return backend
    specialised = copy.copy(backend)
    specialised.dynamo_config = config
    return specialised


def recompile_limit_patches() -> dict[str, Any]:
    """Patches for `torch._dynamo.config.patch` (key names differ between torch versions)."""
    import torch._dynamo.config as config

    limit_key = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    patches: dict[str, Any] = {limit_key: max(RECOMPILE_LIMIT, getattr(config, limit_key))}
    for fail_key in ("fail_on_recompile_limit_hit", "fail_on_cache_limit_hit"):
        if hasattr(config, fail_key):
            patches[fail_key] = True
            break
    return patches


class GraphBreaks:
    """The graph breaks dynamo reports while `watching()` (its `graph_break` counter), in order."""

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.called = False  # a call was watched

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        self.called = True
        before = _counted("graph_break")
        try:
            yield
        finally:
            for reason, count in _counted("graph_break").items():
                if count > before.get(reason, 0) and reason not in self.reasons:
                    self.reasons.append(reason)

    def uncaptured(self, compiles: int, *, broke: bool = False) -> str | None:
        """Why the backend never received the program (it was called, and nothing compiled), in
        dynamo's words; None when it did. `broke`: only where dynamo reported a graph break (a
        call that raised may have raised while dynamo traced, which is no fallback to eager)."""
        if compiles or not self.called or (broke and not self.reasons):
            return None
        if not self.reasons:
            return "no graph break was reported; dynamo skipped the frame"
        first = self.reasons[0].strip().split("\n\n")[0]
        more = f" (and {len(self.reasons) - 1} more)" if len(self.reasons) > 1 else ""
        return f"{first[:BREAK_CHARS]}{more}"


BREAK_CHARS = 600  # of dynamo's first graph-break message in a reason


def _counted(group: str) -> dict[str, int]:
    """One group of dynamo's counters, empty before dynamo was imported (they start at zero).
    Never imports dynamo: importing it inside a pytester run would import it twice in one
    process."""
    utils = sys.modules.get("torch._dynamo.utils")
    return {} if utils is None else dict(utils.counters[group])


class FrameWatch:
    """Frames dynamo processed and graphs it captured while `watching()`, with the graph breaks
    it reported: whether a backend that called torch.compile itself ever received the program."""

    def __init__(self) -> None:
        self.frames = 0
        self.graphs = 0
        self.breaks = GraphBreaks()

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        frames = _counted("frames").get("total", 0)
        graphs = _counted("stats").get("unique_graphs", 0)
        with self.breaks.watching():
            try:
                yield
            finally:
                self.frames += _counted("frames").get("total", 0) - frames
                self.graphs += _counted("stats").get("unique_graphs", 0) - graphs

    def uncaptured(self, compiles: int, *, broke: bool = False) -> str | None:
        """`GraphBreaks.uncaptured`, where dynamo processed a frame and captured no graph."""
        if not self.frames or self.graphs:
            return None
        return self.breaks.uncaptured(compiles, broke=broke)


@contextlib.contextmanager
def compiled_autograd(enabled: bool = True) -> Iterator[None]:
    """Dynamo's `compiled_autograd` config on, when `enabled`: a torch.compile made meanwhile
    (torch 2.11-2.13 read it when the compile is made) runs each backward its calls start under
    compiled autograd, which captures the backward graph and compiles it with the torch.compile
    call's own backend. A backend that never calls torch.compile is not changed by it."""
    if not enabled:
        yield
        return
    import torch._dynamo.config as config

    with config.patch(compiled_autograd=True):
        yield


# a dynamo compile id of a graph compiled autograd captured: "!<capture>/<frame>/<compile>"
_CAPTURED_GRAPH_ID = re.compile(r"!\d+/")


class AutogradWatch:
    """What compiled autograd did while `watching()`: the backward graphs it captured (its
    `captures` counter) and the compiles dynamo made of them for the backend (compile starts
    whose id names a captured graph). `compiles` is None where this torch has no compile
    callbacks."""

    def __init__(self) -> None:
        self.captures = 0
        self.compiles: int | None = 0

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        before = _counted("compiled_autograd").get("captures", 0)

        def started(args: Any) -> None:
            if self.compiles is not None and _CAPTURED_GRAPH_ID.match(
                str(getattr(args, "compile_id", ""))
            ):
                self.compiles += 1

        try:
            with compile_callbacks(start=started) as available:
                if not available:
                    self.compiles = None
                yield
        finally:
            self.captures += _counted("compiled_autograd").get("captures", 0) - before


@contextlib.contextmanager
def compile_callbacks(
    start: Callable[[Any], None] | None = None,
    end: Callable[[Any], None] | None = None,
    *,
    import_dynamo: bool = True,
) -> Iterator[bool]:
    """dynamo's compile-start and compile-end callbacks (each given dynamo's `CallbackArgs`)
    registered while open; yields whether this torch has them. `import_dynamo=False`: only where
    dynamo is imported already (importing it takes seconds)."""
    dynamo = importlib.import_module("torch._dynamo") if import_dynamo else None
    dynamo = dynamo or sys.modules.get("torch._dynamo")
    handler = getattr(dynamo, "callback_handler", None)
    if getattr(handler, "register_start_callback", None) is None:
        yield False
        return
    if start is not None:
        handler.register_start_callback(start)
    if end is not None:
        handler.register_end_callback(end)
    try:
        yield True
    finally:  # a torch._dynamo.reset() meanwhile cleared them
        if start is not None:
            with contextlib.suppress(ValueError):
                handler.remove_start_callback(start)
        if end is not None:
            with contextlib.suppress(ValueError):
                handler.remove_end_callback(end)


class DynamoCompiled:
    """`torch.compile(fn, backend=compiler)` for an adapter whose compiler counts `invocations`.

    Compiles an isolated copy of `fn` under the raised recompile limit and reports what the
    compiled function did: its result, or what it raised. When dynamo fails while tracing (eager's
    meta functions reject the inputs), that failure is the backend's answer too: the harness takes
    the error out of dynamo's wrappers (`outcome.unwrap`), and never runs eager in its place.
    Subclasses add `artifacts()`.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        compiler: Any,
        *,
        dynamic: bool | None,
        dynamo_config: Mapping[str, Any] | None = None,
    ) -> None:
        import torch
        import torch._dynamo.config as dynamo_config_module

        self.compiler = compiler
        # the scenario's dynamo_config (scenario_dynamo_config) beside the raised recompile limit
        self._patches = {**recompile_limit_patches(), **(dynamo_config or {})}
        # one patch object re-entered per call: building it anew cost as much again per call
        self._patch = dynamo_config_module.patch(self._patches)
        with self._patch:
            self._compiled = torch.compile(isolated_entry(fn), backend=compiler, dynamic=dynamic)
        self._breaks = GraphBreaks()

    def __call__(self, *args: Any) -> Any:
        with self._patch, self._breaks.watching():
            return self._compiled(*args)

    def compiles(self) -> int:
        return self.compiler.invocations

    def user_callable(self) -> Callable[..., Any]:
        """The torch.compile'd function itself, as a user calls it (what benchmarks time)."""
        return self._compiled

    def uncaptured(self, *, broke: bool = False) -> str | None:
        """Why the backend never received the program, or None (`GraphBreaks.uncaptured`)."""
        return self._breaks.uncaptured(self.compiles(), broke=broke)


# How inductor's output module embeds kernel sources (torch 2.11-2.13):
#   async_compile.triton('triton_poi_fused_relu_0', '''<source>''', device_str='cuda')
#   async_compile.cpp_pybinding(['float*'], r'''<source>''')
#   async_compile.cuda(r'''<source>''', 'so')
_KERNEL_SOURCE = re.compile(
    r"async_compile\.(?P<kind>\w+)\([^\n]*?'''(?P<source>.*?)'''", re.DOTALL
)
# async_compile method -> artifact kind.
_KERNEL_ARTIFACT = {
    "triton": "triton",
    "cpp": "cpp",
    "cpp_pybinding": "cpp",
    "cuda": "cuda",
    "cutlass": "cuda",
    "rocm": "rocm",
    "cutedsl": "cutedsl",
}


@contextlib.contextmanager
def collecting_output_code(sink: list[str]) -> Iterator[None]:
    """Append each output module inductor writes meanwhile to `sink`, chaining any other hook."""
    try:
        from torch._inductor.graph import GraphLowering
    except ImportError:
        yield
        return
    if "save_output_code" not in vars(GraphLowering):
        yield
        return
    saved = vars(GraphLowering)["save_output_code"]
    previous = GraphLowering.save_output_code

    def save_output_code(code: str) -> None:
        sink.append(code)
        if previous is not None:
            previous(code)

    GraphLowering.save_output_code = staticmethod(save_output_code)
    try:
        yield
    finally:
        GraphLowering.save_output_code = saved


def artifacts_of(modules: Sequence[str]) -> dict[str, str]:
    if not modules:
        return {}
    python = "\n".join(
        f"# gemmconf: inductor output module {i} of {len(modules)}\n{code}"
        for i, code in enumerate(modules, start=1)
    )
    kernels: dict[str, list[str]] = {}
    for match in _KERNEL_SOURCE.finditer(python):
        kind = _KERNEL_ARTIFACT.get(match["kind"])
        if kind is not None:
            kernels.setdefault(kind, []).append(match["source"].strip("\n"))
    return {"python": python, **{kind: "\n\n".join(srcs) for kind, srcs in kernels.items()}}


# torch.compile's own keyword arguments a `dynamo:NAME,key=value` option may set; every other key
# goes to the backend in `options=`
COMPILE_KEYWORDS = ("mode", "fullgraph")


def registered_backends() -> list[str]:
    """Every name torch.compile takes as `backend=` here, debug and experimental ones included
    (`aot_eager`): built in, registered with `torch._dynamo.register_backend`, or installed under
    the entry-point group `torch_dynamo_backends`."""
    from torch._dynamo import list_backends

    return list_backends(exclude_tags=())


class DynamoBackend:
    """A torch.compile backend as a gemmconf Backend (module docstring): registered by name, or
    a compiler function. Items compile an isolated copy of the program under the raised
    recompile limit; `compiles()` counts the graphs handed to the compiler, and a program dynamo
    ran eagerly without handing it a graph is "not compiled", never a pass."""

    def __init__(
        self,
        compiler: str | Callable[..., Any],
        *,
        name: str | None = None,
        mode: str | None = None,
        options: Mapping[str, Any] | None = None,
        fullgraph: bool = False,
    ) -> None:
        if name is None:
            label = compiler if isinstance(compiler, str) else _callable_name(compiler)
            name = f"dynamo:{label}"
        self.name = name
        self.compiler = compiler
        self.mode = mode
        self.options = dict(options or {})
        self.fullgraph = fullgraph
        self.dynamo_config: dict[str, Any] = {}  # the scenario's, per item (for_instance)

    def for_instance(self, instance: Any) -> DynamoBackend:
        """This backend for one item (base.py): under the scenario's `dynamo_config`."""
        return with_dynamo_config(self, instance)

    def availability(self) -> str | None:
        """None where torch.compile can find the backend here: a name must be registered, and
        an entry point's module must import."""
        if not isinstance(self.compiler, str):
            return None
        if self.compiler not in registered_backends():
            return f"no torch.compile backend named {self.compiler!r} is registered here"
        from torch._dynamo import lookup_backend

        try:
            lookup_backend(self.compiler)  # loads an entry point's module
        except Exception as exc:
            return f"torch.compile backend {self.compiler!r} does not load: {exc}"
        return None

    @property
    def compile_keywords(self) -> dict[str, Any]:
        """What `torch.compile` is given beside the function, `backend=` and `dynamic=`."""
        keywords: dict[str, Any] = {}
        if self.mode is not None:
            keywords["mode"] = self.mode
        if self.options:
            keywords["options"] = dict(self.options)
        if self.fullgraph:
            keywords["fullgraph"] = True
        return keywords

    def compile(
        self, fn: Callable[..., Any], example_inputs: Sequence[Any], *, dynamic: bool | None
    ) -> TorchCompiled:
        return TorchCompiled(
            fn,
            self.compiler,
            dynamic=dynamic,
            dynamo_config=self.dynamo_config,
            **self.compile_keywords,
        )


def dynamo_backend(
    compiler_fn: Callable[..., Any],
    *,
    name: str | None = None,
    mode: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> DynamoBackend:
    """A gemmconf Backend of a torch.compile compiler function `(gm, example_inputs) ->
    callable`, named `name` (default `dynamo:<its __name__>`): in a module of one's own,
    `backend = dynamo_backend(my_compiler, name="my-compiler")`, then
    `gemmconf run --backend my_module:backend`."""
    return DynamoBackend(compiler_fn, name=name, mode=mode, options=options)


class TorchCompiled:
    """One `torch.compile` of an isolated copy of `fn` (DynamoBackend.compile): the harness's
    Compiled, with its compile count, graph-break watch and, for inductor, its output code."""

    def __init__(
        self,
        fn: Callable[..., Any],
        compiler: str | Callable[..., Any],
        *,
        dynamic: bool | None,
        dynamo_config: Mapping[str, Any] | None = None,
        **keywords: Any,
    ) -> None:
        import torch
        import torch._dynamo.config as dynamo_config_module

        self._invocations: int | None = None  # counted by our wrapper of a compiler function
        self._frame_ids: set[int | None] = set()  # dynamo's frame of each graph it handed over
        backend: Any = compiler
        if not isinstance(compiler, str):
            self._invocations = 0
            backend = self._counted(compiler)
        self._inductor = compiler == "inductor"
        self._modules: list[str] = []  # inductor's output modules, in compile order
        patches = {**recompile_limit_patches(), **(dynamo_config or {})}
        self._patch = dynamo_config_module.patch(patches)
        with self._patch:
            self._compiled = torch.compile(
                isolated_entry(fn), backend=backend, dynamic=dynamic, **keywords
            )
        self._watch = FrameWatch()

    def _counted(self, compiler: Callable[..., Any]) -> Callable[..., Any]:
        def counted(gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
            self._invocations = (self._invocations or 0) + 1
            self._frame_ids.add(_frame_id())
            return compiler(gm, example_inputs, **kwargs)

        counted.__name__ = _callable_name(compiler)
        return counted

    def __call__(self, *args: Any) -> Any:
        with contextlib.ExitStack() as scope:
            scope.enter_context(self._patch)
            scope.enter_context(self._watch.watching())
            if self._inductor:
                scope.enter_context(collecting_output_code(self._modules))
            return self._compiled(*args)

    def compiles(self) -> int:
        """Graphs handed to the compiler so far: its calls, or for a backend named as a string
        (which torch.compile looks up itself), the graphs dynamo captured during our calls."""
        if self._invocations is not None:
            return self._invocations
        return self._watch.graphs

    def graph_frames(self) -> int | None:
        """How many different frames (functions dynamo traced) the compiler's graphs came from;
        None where our wrapper did not see each graph (a backend named as a string) or dynamo
        did not say."""
        if self._invocations is None or None in self._frame_ids:
            return None
        return len(self._frame_ids)

    def artifacts(self) -> dict[str, str]:
        """Inductor's output modules and kernel sources (`python`, `triton`, `cpp`); none for
        other backends, whose generated code gemmconf cannot know."""
        if not self._modules:
            return {}
        return artifacts_of(self._modules)

    def uncaptured(self, *, broke: bool = False) -> str | None:
        """Why the backend never received the program, or None (`FrameWatch.uncaptured`)."""
        return self._watch.uncaptured(self.compiles(), broke=broke)

    def user_callable(self) -> Callable[..., Any]:
        """The torch.compile'd function itself, as a user calls it (what benchmarks time)."""
        return self._compiled


def _frame_id() -> int | None:
    """The frame dynamo is compiling now (torch 2.11-2.13: `CompileContext.current_compile_id`;
    a recompile of one frame keeps its id); None where this torch does not say."""
    try:
        from torch._guards import CompileContext

        compile_id = CompileContext.current_compile_id()
        return None if compile_id is None else int(compile_id.frame_id)
    except Exception:
        return None


def _unregistered_by_torch(name: str) -> str:
    """Where torch has a module of the name's backend but no backend of that name is
    registered, a clause saying so and which of two cases it is: the module's source calls no
    `register_backend` (torch 2.13's `onnxrt`: a placeholder, its registration commented out, so
    no package installed brings it back), or it does and its registration did not run here (a
    package it needs is missing, or its import raised: the error is named)."""
    import importlib.util

    import torch

    module = f"torch._dynamo.backends.{name}"
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return ""
    said = f" (torch {torch.__version__} has a module {module}, but no backend registered from it: "
    if not _calls_register_backend(spec.origin):
        return said + (
            "its source registers none (a placeholder, its registration commented out), so "
            "installing a package does not bring it back; an older torch or another backend "
            "does)"
        )
    try:
        importlib.import_module(module)
    except Exception as exc:
        return said + f"importing it raised {type(exc).__name__}: {exc})"
    return said + "its registration did not run here: it may need a package that is missing)"


def _calls_register_backend(path: str | None) -> bool:
    """Whether the Python source at path names `register_backend` in its code (a call or a
    decorator; comments are not code); True where it cannot be read, so that nothing is claimed."""
    import ast

    try:
        tree = ast.parse(Path(path or "").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return True
    return any(
        (isinstance(node, ast.Name) and node.id == "register_backend")
        or (isinstance(node, ast.Attribute) and node.attr == "register_backend")
        for node in ast.walk(tree)
    )


def make_dynamo(option: str | None = None) -> DynamoBackend:
    """Registry factory for `dynamo:NAME[,key=value...]`: the torch.compile backend NAME through
    `DynamoBackend`. `mode=` and `fullgraph=` go to torch.compile, every other key to the backend
    in `options=` (values `True`/`False`, numbers, else strings). An unknown NAME is an
    UnknownBackendError listing the registered ones."""
    from gemmconf.backends import UnknownBackendError

    parts = [p.strip() for p in (option or "").split(",")]
    name = parts[0]
    registered = registered_backends()
    if not name or name not in registered:
        what = (
            "the dynamo backend needs a name: dynamo:NAME"
            if not name
            else f"no torch.compile backend is named {name!r} here{_unregistered_by_torch(name)}"
        )
        raise UnknownBackendError(
            f"{what}; torch._dynamo.list_backends() (debug ones included): "
            f"{', '.join(registered)}. A package registers one with "
            "torch._dynamo.register_backend or under the entry-point group torch_dynamo_backends"
        )
    keywords: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for part in parts[1:]:
        key, equals, text = part.partition("=")
        if not key or not equals:
            raise ValueError(
                f"dynamo:{option}: option {part!r} is not key=value (mode=..., fullgraph=True, "
                "or an option of the backend's own)"
            )
        value = _option_value(text)
        if key in COMPILE_KEYWORDS:
            keywords[key] = value
        else:
            options[key] = value
    if "mode" in keywords and options:
        raise ValueError(
            f"dynamo:{option}: torch.compile takes mode= or options=, not both; give the "
            "mode's settings as options"
        )
    return DynamoBackend(
        name,
        name=f"dynamo:{option}",
        mode=keywords.get("mode"),
        options=options,
        fullgraph=bool(keywords.get("fullgraph", False)),
    )


def _option_value(text: str) -> Any:
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _callable_name(compiler: Callable[..., Any]) -> str:
    return str(getattr(compiler, "__name__", type(compiler).__name__))
