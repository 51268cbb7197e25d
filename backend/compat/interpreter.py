"""The Triton interpreter (TRITON_INTERPRET=1): whether it runs, the speed-ups the reference
backend applies to it (triton 3.6-3.7), and one fix. Each changes nothing where the interpreter
lacks what it patches. The speed-ups leave results as they were: they remove repeated work, never
change an answer. The fix (`index_scalars_as_numpy_allows`) makes a kernel run where triton 3.6's
interpreter raised under numpy 2.4 or later.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
from collections.abc import Callable, Iterator
from typing import Any

TRITON_INTERPRET_ENV = "TRITON_INTERPRET"


def interpreting() -> bool:
    """True when @triton.jit kernels run in the Triton interpreter (TRITON_INTERPRET=1)."""
    try:
        from triton import knobs

        return bool(knobs.runtime.interpret)
    except (ImportError, AttributeError):
        return os.environ.get(TRITON_INTERPRET_ENV, "0") not in ("", "0", "false", "False")


def memoize_interpreter_patching() -> bool:
    """Make the Triton interpreter scan `triton.language` once instead of on every call.

    Before each launch, and before each call of a @triton.jit helper inside a kernel, the
    interpreter (triton 3.7.1, `interpreter._patch_builtin(pkg, builder, scope)`) lists the
    module's members with `inspect.getmembers` to wrap its builtins: 15% of the CPU suite's
    time. A module's builtins never change, so this keeps that list from the first scan that
    finds any and wraps, on each call, exactly the members that are still those builtins: what
    the scan would find (once wrapped, a module has none left, as before). Wrappers, scope and
    restore are Triton's own. Returns False, changing nothing, where `_patch_builtin` is absent
    or has another signature."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    original = getattr(interpreter, "_patch_builtin", None)
    if getattr(original, "memoized", False):
        return True
    patch_attr = getattr(interpreter, "_patch_attr", None)
    if original is None or patch_attr is None:
        return False
    if list(inspect.signature(original).parameters) != ["pkg", "builder", "scope"]:
        return False
    is_builtin = interpreter.tl.core.is_builtin
    found: dict[Any, list[tuple[str, Any]]] = {}  # module or class -> its builtins

    def patch_builtin(pkg: Any, builder: Any, scope: Any) -> None:
        members = found.get(pkg)
        if members is None:
            members = [(n, m) for n, m in inspect.getmembers(pkg) if is_builtin(m)]
            if members:  # none: the module is wrapped already (or has no builtins): ask again
                found[pkg] = members
        for name, member in members:
            if getattr(pkg, name, None) is member:
                patch_attr(pkg, name, member, builder, scope)

    patch_builtin.memoized = True  # type: ignore[attr-defined]
    patch_builtin.original = original  # type: ignore[attr-defined]
    interpreter._patch_builtin = patch_builtin
    return True


def skip_nested_interpreter_patching() -> bool:
    """Keep the Triton interpreter from patching `triton.language` again at every call of a
    @triton.jit helper inside a launch.

    A launch (triton 3.6-3.7, `GridExecutor.__call__`) patches the language modules the kernel's
    globals name, runs every program of the grid, and restores them. Each helper call inside
    (`InterpretedFunction.__call__`) first patches again, once per program: it lists the
    helper's globals for those modules and sets on them what the launch has already set, in a
    scope it never restores. Where the helper's globals name the same language modules as the
    running kernel's (`triton.language` and `triton.language.core`, what Triton looks for: our
    kernels' modules each import `triton.language as tl`), that changes nothing, so this calls
    the helper directly, as Triton does after patching, errors wrapped alike. Helpers that see
    other modules, and calls outside a launch, patch as before. A 4-draw
    `bmm` with 1,024-2,048 batch entries of 8x6x16 (one program each) took 16% less time (dev
    CPU, BENCHMARKS.md "2026-11-26, cb47966"). Returns False, changing nothing, where the
    interpreter lacks those classes or methods."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    found = _attributes(interpreter, "GridExecutor", "InterpretedFunction", "InterpreterError")
    if found is None or not hasattr(interpreter, "tl"):
        return False
    executor, function, error = found
    launch, call = executor.__call__, function.__call__
    if getattr(call, "skips_nested_patching", False):
        return True
    if not hasattr(function, "rewrite") or "fn" not in inspect.signature(executor).parameters:
        return False
    running: list[frozenset[int]] = []  # the language modules the running launch patched
    languages = _language_modules(interpreter)

    def launch_patched(self: Any, *args: Any, **kwargs: Any) -> Any:
        running.append(languages(self.fn.__globals__))
        try:
            return launch(self, *args, **kwargs)
        finally:
            running.pop()

    def call_helper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not running or languages(self.fn.__globals__) != running[-1]:
            return call(self, *args, **kwargs)
        fn = self.rewrite()
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise error(repr(exc)) from exc

    call_helper.skips_nested_patching = True  # type: ignore[attr-defined]
    call_helper.original = call  # type: ignore[attr-defined]
    launch_patched.original = launch  # type: ignore[attr-defined]
    executor.__call__ = launch_patched
    function.__call__ = call_helper
    return True


def index_scalars_as_numpy_allows() -> bool:
    """Let triton 3.6's interpreter use a runtime scalar as an index under numpy 2.4 or later.

    The interpreter (`_patch_lang_tensor`) gives `tl.tensor` an `__index__` that returns
    `int(self.handle.data)`. A scalar's data there is a one-element array of one dimension, and
    numpy 2.4 turned its old deprecation of `int()` on such an array into a TypeError ("only
    0-dimensional arrays can be converted to Python scalars"). So any kernel that loops
    `range(0, K, BLOCK_K)` over a runtime K raised: on the GPU machine's torch 2.11 and triton
    3.6 with its GPU hidden, 2,737 of the reference suite's items failed so (2026-12-02). Triton
    3.7 squeezes the array first. This keeps Triton's own `__index__` and, where it raises that
    TypeError on a one-element array, answers what 3.7 does; a working `__index__` (3.7, an
    older numpy) answers as before. Returns False, changing nothing, where the interpreter has
    no `_patch_lang_tensor(tensor, scope)`."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "indexes_scalars", False):
        return original is not None
    if list(inspect.signature(original).parameters) != ["tensor", "scope"]:
        return False

    def patch_lang_tensor(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        index = vars(tensor).get("__index__")
        if index is not None:
            scope.set_attr(tensor, "__index__", _scalar_index(index))

    patch_lang_tensor.indexes_scalars = True  # type: ignore[attr-defined]
    patch_lang_tensor.original = original  # type: ignore[attr-defined]
    interpreter._patch_lang_tensor = patch_lang_tensor
    return True


def _scalar_index(index: Callable[[Any], int]) -> Callable[[Any], int]:
    """`index` (the interpreter's `tl.tensor.__index__`), answering for a one-element array
    where numpy refuses `int()` of it (`index_scalars_as_numpy_allows`)."""

    def scalar_index(self: Any) -> int:
        try:
            return index(self)
        except TypeError:
            data = self.handle.data
            if getattr(data, "size", None) != 1:
                raise
            return int(data.reshape(()))

    return scalar_index


def _attributes(module: Any, *names: str) -> tuple[Any, ...] | None:
    """`module`'s attributes `names`, in order; None where it lacks one (a Triton version whose
    interpreter is built otherwise, which a patch then leaves alone)."""
    found = tuple(getattr(module, name, None) for name in names)
    return None if any(value is None for value in found) else found


def _language_modules(interpreter: Any) -> Callable[[dict[str, Any]], frozenset[int]]:
    """The ids of the language modules a function's globals name, as the interpreter's patching
    finds them (`_patch_lang`: those among `tl` and `tl.core`), kept per globals dict."""
    tl = interpreter.tl
    found: dict[int, frozenset[int]] = {}

    def languages(scope: dict[str, Any]) -> frozenset[int]:
        known = found.get(id(scope))
        if known is None:
            known = found[id(scope)] = frozenset(
                id(value) for value in scope.values() if value is tl or value is tl.core
            )
        return known

    return languages


def memoize_interpreter_types() -> bool:
    """Let the Triton interpreter look its element and block types up instead of rebuilding them.

    Every operation the interpreter runs (triton 3.6-3.7) asks for the numpy dtype of a Triton
    type (`interpreter._get_np_dtype`, which builds a 19-entry table on each call) and builds
    new `block_type`s for its operands and result (`InterpreterBuilder.get_block_ty`,
    `block_type.with_element_ty`; each validates and formats the shape again). Those three took
    9% of the reference's CPU suite time (cProfile of a shard, BENCHMARKS.md "2026-11-26, 310a380").
    Types are values: the same element type and shape always build an equal `block_type`, which
    nothing changes after it is built, so one instance per (element type, shape) is kept and
    handed out again, and the numpy dtype of each element type is kept once looked up (through
    Triton's own function). A pointer element type, which Triton leaves unhashable, is keyed by
    what its `__eq__` compares; shapes with anything but plain ints are built as before.
    Returns False, changing nothing, where the interpreter lacks these functions."""
    try:
        from triton.language import core
        from triton.runtime import interpreter
    except ImportError:
        return False
    functions = _attributes(interpreter, "_get_np_dtype", "InterpreterBuilder")
    types = _attributes(core, "block_type", "pointer_type")
    if functions is None or types is None:
        return False
    (np_dtype, builder), (block_type, pointer_type) = functions, types
    if not hasattr(builder, "get_block_ty"):
        return False
    if getattr(np_dtype, "memoized", False):
        return True
    if not hasattr(block_type, "with_element_ty"):
        return False
    get_np_dtype = _memoized_np_dtype(np_dtype, block_type, pointer_type)
    block = _memoized_block_type(block_type, pointer_type)

    def get_block_ty(self: Any, dtype: Any, shape: Any) -> Any:
        return block(dtype, shape)

    def with_element_ty(self: Any, scalar_ty: Any) -> Any:
        return block(scalar_ty, self.shape)

    get_np_dtype.memoized = True  # type: ignore[attr-defined]
    get_np_dtype.original = np_dtype  # type: ignore[attr-defined]
    interpreter._get_np_dtype = get_np_dtype
    builder.get_block_ty = get_block_ty
    block_type.with_element_ty = with_element_ty
    _share_tensor_fields(core)
    return True


def _memoized_np_dtype(np_dtype: Any, block_type: Any, pointer_type: Any) -> Callable[[Any], Any]:
    """The interpreter's `_get_np_dtype`, each scalar element type's answer kept once looked up
    (`memoize_interpreter_types`)."""
    np_dtypes: dict[Any, Any] = {}  # scalar element type -> numpy dtype

    def get_np_dtype(tt_dtype: Any) -> Any:
        element = tt_dtype.element_ty if isinstance(tt_dtype, block_type) else tt_dtype
        if isinstance(element, pointer_type):
            return np_dtype(element)
        found = np_dtypes.get(element)
        if found is None:
            found = np_dtypes[element] = np_dtype(element)
        return found

    return get_np_dtype


def _memoized_block_type(block_type: Any, pointer_type: Any) -> Callable[[Any, Any], Any]:
    """`block_type(element, shape)`, one instance per (element type, shape) of plain ints
    (`memoize_interpreter_types`)."""
    blocks: dict[tuple[Any, tuple[int, ...]], Any] = {}  # (element type, shape) -> block_type

    def block(element: Any, shape: Any) -> Any:
        sizes = tuple(shape)
        if not all(type(d) is int for d in sizes):
            return block_type(element, shape)  # constexpr sizes: as Triton builds them
        kind = element
        if isinstance(element, pointer_type):  # unhashable: keyed by what its __eq__ compares
            if isinstance(element.element_ty, pointer_type):
                return block_type(element, shape)
            kind = (pointer_type, element.element_ty, element.address_space, element.const)
        try:
            found = blocks.get((kind, sizes))
        except TypeError:  # another unhashable element type
            return block_type(element, shape)
        if found is None:
            found = blocks[kind, sizes] = block_type(element, list(sizes))
        return found

    return block


TENSOR_FIELDS = frozenset({"handle", "shape", "numel", "type", "dtype"})  # tl.tensor's, 3.6-3.7


_TEMPLATE = "_gemmconf_tensor_fields"  # where a type keeps the fields its first tensor got


def _share_tensor_fields(core: Any) -> bool:
    """Build a `tl.tensor`'s fields once per type: a tensor's shape, numel and dtype follow from
    its type alone (triton 3.6-3.7 rebuilds them for every tensor, the shape as a `tl.tuple`
    that infers its own type: 8% of the reference's CPU suite time once block types are
    shared). The first tensor of a type is built by Triton's `__init__`, and its fields, if
    they are exactly `TENSOR_FIELDS`, are kept on the type; later tensors of that type take
    them with their own handle. Returns False, changing nothing, where the fields differ."""
    tensor = getattr(core, "tensor", None)
    original = getattr(tensor, "__init__", None)
    if original is None or getattr(original, "shares_fields", False):
        return original is not None

    def init(self: Any, handle: Any, type: Any) -> None:
        fields = getattr(type, _TEMPLATE, None)
        if fields is None:
            original(self, handle, type)
            fields = dict(vars(self))
            if fields.keys() != TENSOR_FIELDS:
                return
            with contextlib.suppress(AttributeError):  # a type without __dict__: no sharing
                setattr(type, _TEMPLATE, fields)
            return
        self.__dict__.update(fields)
        self.handle = handle

    init.shares_fields = True  # type: ignore[attr-defined]
    init.original = original  # type: ignore[attr-defined]
    tensor.__init__ = init
    return True


@contextlib.contextmanager
def interpreted_as_compiled() -> Iterator[None]:
    """Inside: the Triton interpreter skips the integer overflow checks it would throw away.

    With `sanitize_overflow` on (triton 3.6-3.7 `InterpreterOptions`, the default), the
    interpreter recomputes every 32-bit integer add, sub and mul of a kernel in 64 bits and
    compares it with the type's range, then hands the result to `device_assert`, which does
    nothing unless the options have `debug` on. A kernel's index arithmetic so costs several
    times its own work for nothing (43% of the reference's interpreter time over `dense`
    shapes_2d on the dev CPU; a 5x33x7 fp32 mm, 16 -> 6 ms a call). Where `debug` is on
    (TRITON_DEBUG), the checks run as before. Scoped to the reference's own launches; changes
    nothing where the interpreter has no such options."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        yield
        return
    builder = getattr(interpreter, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if not getattr(options, "sanitize_overflow", False) or getattr(options, "debug", True):
        yield
        return
    builder.options = dataclasses.replace(options, sanitize_overflow=False)
    try:
        yield
    finally:
        builder.options = options
