"""FlagGems (`flag_gems`, Triton kernels over aten ops) as a gemmconf backend.

`gemmconf run --backend fg_backend:FlagGems` from the folder that holds this file.

FlagGems replaces aten ops with its Triton kernels through `flag_gems.use_gems()` /
`flag_gems.enable()` (a `torch.library.Library("aten", "IMPL")` on the device's dispatch key).
This adapter enters `flag_gems.use_gems(include=GEMM_FUNCS)` for each call of the program
only, as docs/outside-backends.md asks of "a kernel library that overrides aten ops": eager and
the fp64 reference keep aten's own kernels.

On a GPU nothing else is needed (FlagGems finds the vendor, "nvidia", and on an H200 the
"hopper" arch, whose TMA mm replaces the generic one).

On a machine without CUDA, FlagGems 5.0.2 does not import (`RuntimeError: No device were
detected on your machine !`, runtime/backend/device.py:134) and has no interpreter mode. With
TRITON_INTERPRET=1 this adapter runs its GEMM kernels in Triton's interpreter on CPU tensors
(what an author would do on a laptop). What that takes, all in `_import_flag_gems()`:

1. GEMS_VENDOR=nvidia (the CUDA vendor's code; FlagGems' own `_arm` vendor, device "cpu", is
   not in its vendors enum, runtime/common.py, so it cannot be chosen);
2. while flag_gems imports: torch.cuda.device_count / get_device_name answer 1 /
   "cpu-triton-interpreter" (libentry.py:39/619 sizes a per-device cache by the count; LibCache
   names its sqlite file by the name), TRITON_INTERPRET=0 (LibEntry, LibTuner and
   pointwise_dynamic need JITFunctions: libentry.py:621, pointwise_dynamic.py:1247), and a
   JITFunction's cache_key is a hash of its source (its callees from triton.language are
   InterpretedFunctions in this process); all restored after the import;
3. then every JITFunction of flag_gems' modules, and the one at the end of each
   LibEntry/LibTuner/Heuristics chain, becomes an InterpretedFunction; LibEntry.run goes
   through the tuner on every launch (it caches a CompiledKernel, which the interpreter has
   none of, libentry.py:659-812); LibTuner's benchmark times every config the same, so each
   kernel runs the first config of its list (timing the interpreter means nothing; a GPU
   autotunes for real);
4. every flag_gems module's `torch_device_fn` (torch.cuda) becomes a CPU stand-in: `device(d)`
   a null context, `current_device()` 0, no properties (device_info.py falls back to its A100
   defaults, with a warning); the ops register on the "CPU" key;
5. Triton 3.7's interpreter is made to compute what a GPU computes (`_fix_interpreter_bf16`:
   bf16 dot, arithmetic, rounding and sums; bool arguments; loop counters);
   FG_INTERPRETER_BF16_AS_IS=1 leaves it as it is (the first run of the trial).

ARCH=sm_90 (FlagGems' own variable, runtime/backend/__init__.py:73) loads the hopper arch's
ops on a CPU too: its TMA mm then runs in the interpreter (host TensorDescriptors).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import warnings

# FlagGems' function names (use_gems(include=...) takes them, not aten names): what these
# register, by aten op: mm, mm.out, addmm, addmm.out, bmm, bmm.out, baddbmm, mv, addmv,
# addmv.out, dot, vdot, and (GPU) _grouped_mm.
GEMM_FUNCS = [
    "mm", "mm_out", "addmm", "addmm_out", "bmm", "bmm_out", "baddbmm",
    "mv", "addmv", "addmv_out", "dot", "vdot",
]
GPU_ONLY_FUNCS = ["group_mm"]  # ops/group_gemm.py:572 asks torch.cuda for the SM count

NO_KERNEL = {
    "scaled_mm": "no fp8 _scaled_mm kernel (w8a8_block_fp8_matmul is an API of its own)",
    "scaled_mm_v2": "no F.scaled_mm kernel",
    "int_mm": "no _int_mm kernel",
    "scaled_grouped_mm": "no _scaled_grouped_mm kernel",
}

_state: dict = {}


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


class _CpuDeviceFn:
    """Stands in for torch.cuda as flag_gems' `torch_device_fn` on CPU tensors."""

    def device(self, _device):
        return contextlib.nullcontext()

    def current_device(self):
        return 0

    def device_count(self):
        return 1

    def is_available(self):
        return False

    def synchronize(self, *_args):
        return None

    def get_device_name(self, *_args):
        return "cpu-triton-interpreter"

    def get_device_properties(self, *_args):
        raise RuntimeError("no device properties under Triton's interpreter")

    def get_device_capability(self, *_args):
        raise RuntimeError("no device capability under Triton's interpreter")


def _flag_gems_modules(flag_gems):
    """flag_gems' modules, with those its arch loader imports under top-level names (`hopper`,
    `hopper.ops.mm`: runtime/backend/__init__.py puts the vendor folder on sys.path)."""
    root = os.path.dirname(flag_gems.__file__)
    for mod in list(sys.modules.values()):
        path = getattr(mod, "__file__", None) or ""
        if path.startswith(root):
            yield mod


def _interpret_kernels(flag_gems) -> None:
    """Step 3: the GEMM kernels' JITFunctions become InterpretedFunctions."""
    import triton
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    libentry = sys.modules["flag_gems.utils.libentry"]

    def interpreted(jit):
        return InterpretedFunction(jit.fn)

    def swap_chain(node):  # LibEntry -> LibTuner/Autotuner -> Heuristics -> JITFunction
        while hasattr(node, "fn") and not isinstance(node, InterpretedFunction):
            if isinstance(node.fn, JITFunction):
                node.fn = interpreted(node.fn)
                return
            node = node.fn

    for mod in _flag_gems_modules(flag_gems):
        for attr, value in list(vars(mod).items()):
            if isinstance(value, JITFunction):
                setattr(mod, attr, interpreted(value))
            elif isinstance(value, (libentry.LibEntry, triton.runtime.KernelInterface)):
                swap_chain(value)

    # LibEntry caches the CompiledKernel of a first launch and launches it after: the
    # interpreter returns none, so every launch goes through the tuner (libentry.py:688-760)
    libentry.LibEntry.run = lambda self, *args, **kwargs: self.fn.run(*args, **kwargs)
    # autotuning keeps each kernel's first config: timing the interpreter means nothing
    libentry.LibTuner._bench = lambda self, *args, config, **meta: [1.0, 1.0, 1.0]


def _bf16_bits(f32):
    """fp32 values (numpy) to bf16 bit patterns, rounded to nearest even (NaN kept NaN)."""
    import numpy as np

    bits = np.ascontiguousarray(f32, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(f32, dtype=np.float32))
    return np.where(nan, np.uint16(0x7FC0), rounded).astype(np.uint16)


def _fix_interpreter_bf16() -> None:
    """Step 5: where Triton 3.7's interpreter computes otherwise than a GPU does.

    - tl.dot on bf16 operands multiplies their bit patterns as integers (triton#11584; gemmconf's
      docs/measurements.md, "Triton without a GPU"): operands are widened to fp32 first;
    - fp32 -> bf16 (`acc.to(tl.bfloat16)`, an implicit store cast) truncates: rounded to nearest
      even here, as a GPU's cvt.rn.bf16.f32;
    - bf16 arithmetic (`bias * beta`) adds and multiplies the bit patterns as integers: done in
      fp32 and rounded back here;
    - tl.sum over bf16 sums bit patterns (and over fp16 numpy sums in fp32): a pairwise tree
      rounded to the 16-bit type at each level stands in for a GPU's 16-bit reduction;
    - a Python bool argument fails (int32 data under an int1 type), and a loop counter is a
      Python int (`(k * BLOCK_K).to(tl.int32)` raises);
    - a non-zero bf16 scalar constant raises `'InterpreterBuilder' object has no attribute
      'get_bf16'`.
    """
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter as interp

    builder = interp.InterpreterBuilder
    if getattr(builder, "_fg_bf16_fixed", False):
        return
    builder._fg_bf16_fixed = True

    def widen(handle):
        if handle.dtype.scalar == tl.bfloat16:
            return (handle.data.astype(np.uint32) << 16).view(np.float32)
        return handle.data

    original_dot = builder.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if a.dtype.scalar == tl.bfloat16 or b.dtype.scalar == tl.bfloat16:
            data = np.matmul(widen(a), widen(b), dtype=np.float32).astype(d.data.dtype)
            return interp.TensorHandle(data + d.data, d.dtype.scalar)
        return original_dot(self, a, b, d, input_precision, max_num_imprecise_acc)

    original_cast = builder.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            return interp.TensorHandle(_bf16_bits(src.data), dst_type.scalar)
        return original_cast(self, src, dst_type)

    def get_bf16(self, value):
        return interp.TensorHandle(_bf16_bits(np.array([value], dtype=np.float32)), tl.bfloat16)

    original_binary = builder.binary_op
    bitwise = (np.bitwise_and, np.bitwise_xor, np.bitwise_or, np.left_shift, np.right_shift)

    def binary_op(self, lhs, rhs, op):
        both = lhs.dtype.scalar == tl.bfloat16 and rhs.dtype.scalar == tl.bfloat16
        if not both or op in bitwise:
            return original_binary(self, lhs, rhs, op)
        wide = original_binary(
            self,
            interp.TensorHandle(widen(lhs), tl.float32),
            interp.TensorHandle(widen(rhs), tl.float32),
            op,
        )
        if wide.data.dtype == np.float32:
            return interp.TensorHandle(_bf16_bits(wide.data), tl.bfloat16)
        return wide

    builder.binary_op = binary_op

    # tl.sum over bf16 sums the bit patterns as integers (np.sum on uint16), and over fp16 numpy
    # sums in fp32; a GPU adds 16-bit values in 16 bits, rounding each step of its tree: a
    # pairwise tree rounded at each level stands in for that
    original_sum = interp.ReduceOps.sum

    def tree_sum(self, input):
        dtype = input.dtype.scalar
        if dtype not in (tl.bfloat16, tl.float16):
            return original_sum(self, input)
        data = widen(input.handle) if dtype == tl.bfloat16 else input.handle.data.astype(np.float32)

        def rounded(x):
            if dtype == tl.bfloat16:
                return (_bf16_bits(x).astype(np.uint32) << 16).view(np.float32)
            return x.astype(np.float16).astype(np.float32)

        axis = self.axis if self.axis is not None else None
        x = data.reshape(-1) if axis is None else np.moveaxis(data, axis, -1)
        width = 1 << max(0, (x.shape[-1] - 1).bit_length())
        x = np.concatenate([x, np.zeros(x.shape[:-1] + (width - x.shape[-1],), np.float32)], -1)
        while x.shape[-1] > 1:
            x = rounded(x[..., 0::2] + x[..., 1::2])
        x = x[..., 0]
        if self.keep_dims:
            x = np.expand_dims(x, -1 if axis is None else axis)
        bits = _bf16_bits(x) if dtype == tl.bfloat16 else x.astype(np.float16)
        return self.to_tensor(bits, input.dtype)

    interp.ReduceOps.sum = tree_sum

    # a Python bool argument gets an int32 array under an int1 type ("numpy data itemsize (32
    # bits) exceeds dtype primitive_bitwidth (1 bits)"): hopper's mm passes A_ROW_MAJOR as one
    original_cvt = interp._implicit_cvt

    def implicit_cvt(arg):
        if isinstance(arg, bool):
            return tl.tensor(interp.TensorHandle(np.array([arg], dtype=np.bool_), tl.int1), tl.int1)
        return original_cvt(arg)

    interp._implicit_cvt = implicit_cvt

    # a `for k in range(n)` counter is a Python int, so `(k * BLOCK_K).to(tl.int32)` (hopper's
    # host-TMA mm) raises "'int' object has no attribute 'to'": the counter becomes a tensor at
    # the top of each iteration, as it is in a compiled kernel
    import ast

    class LoopCounters(type(interp.FunctionRewriter.ast_transformer)):
        def visit_For(self, node):
            self.generic_visit(node)
            if isinstance(node.target, ast.Name):
                call = ast.Call(
                    func=ast.Attribute(
                        value=ast.Name(id="interpreter_semantic", ctx=ast.Load()),
                        attr="to_tensor",
                        ctx=ast.Load(),
                    ),
                    args=[ast.Name(id=node.target.id, ctx=ast.Load()), ast.Constant(value=False)],
                    keywords=[],
                )
                target = ast.Name(id=node.target.id, ctx=ast.Store())
                counter = ast.Assign(targets=[target], value=call)
                node.body.insert(0, ast.copy_location(counter, node))
                ast.fix_missing_locations(node)
            return node

    interp.FunctionRewriter.ast_transformer = LoopCounters()
    builder.create_dot = create_dot
    builder.cast_impl = cast_impl
    builder.create_fp_trunc = lambda self, src, dst_type: self.cast_impl(src, dst_type)
    builder.get_bf16 = get_bf16


def _import_flag_gems():
    if "module" in _state:
        return _state["module"]
    import torch

    if torch.cuda.is_available() or not _interpreting():
        import flag_gems

        _state["module"] = flag_gems
        return flag_gems
    os.environ.setdefault("GEMS_VENDOR", "nvidia")
    os.environ.setdefault("FLAGGEMS_CACHE_DIR", os.path.join(os.getcwd(), ".flaggems-cpu"))
    saved = {n: getattr(torch.cuda, n) for n in ("device_count", "get_device_name")}
    torch.cuda.device_count = lambda: 1
    torch.cuda.get_device_name = lambda *_a: "cpu-triton-interpreter"
    # flag_gems' decorators need JITFunctions (libentry.py:620-624, pointwise_dynamic.py:1247);
    # their cache_key walks the kernel's callees, which are InterpretedFunctions where triton
    # was imported under TRITON_INTERPRET=1 (triton.language's own @jit helpers): hash the
    # source alone while flag_gems imports
    from triton.runtime.jit import JITFunction

    from triton.runtime.jit import JITCallable

    saved_key = JITCallable.__dict__["cache_key"]
    JITCallable.cache_key = property(lambda jit: hashlib.sha256(jit.src.encode()).hexdigest())
    os.environ["TRITON_INTERPRET"] = "0"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import flag_gems
    finally:
        os.environ["TRITON_INTERPRET"] = "1"
        JITCallable.cache_key = saved_key
        for name, fn in saved.items():
            setattr(torch.cuda, name, fn)
    _interpret_kernels(flag_gems)
    if os.environ.get("FG_INTERPRETER_BF16_AS_IS") != "1":
        _fix_interpreter_bf16()
    shim = _CpuDeviceFn()
    for mod in _flag_gems_modules(flag_gems):
        if getattr(mod, "torch_device_fn", None) is torch.cuda:
            mod.torch_device_fn = shim
    flag_gems.runtime.backend.torch_device_object = shim
    flag_gems.runtime.device.dispatch_key = "CPU"
    _state["module"] = flag_gems
    return flag_gems


class Compiled:
    def __init__(self, fn, funcs):
        self.fn = fn
        self.funcs = funcs

    def __call__(self, *inputs):
        flag_gems = _import_flag_gems()
        with warnings.catch_warnings():  # torch's "Overriding a previously registered kernel"
            warnings.simplefilter("ignore", UserWarning)
            gems = flag_gems.use_gems(include=self.funcs)
            gems.__enter__()
        try:
            return self.fn(*inputs)
        finally:
            gems.__exit__(None, None, None)

    def artifacts(self) -> dict[str, str]:
        return {}

    def compiles(self) -> int:
        return 1


class FlagGems:
    name = "flaggems"

    def availability(self) -> str | None:
        if importlib.util.find_spec("flag_gems") is None:
            return "flag_gems is not installed"
        import torch

        if not torch.cuda.is_available() and not _interpreting():
            return (
                "FlagGems needs a CUDA device here, or TRITON_INTERPRET=1 to run its Triton "
                "kernels on CPU tensors in Triton's interpreter"
            )
        return None

    @property
    def compile_timeout_s(self) -> float:
        # a first call on a GPU autotunes: LibTuner times every config of the kernel's list
        # (22 for mm) for each new shape key, each compiled first
        return 120.0 if self._on_gpu() else 0.0

    def _on_gpu(self) -> bool:
        import torch

        return torch.cuda.is_available()

    def supports(self, instance) -> str | None:
        op = instance.op
        if op in NO_KERNEL:
            return NO_KERNEL[op]
        if op == "grouped_mm":
            if not self._on_gpu():
                return "group_mm asks torch.cuda for the SM count (ops/group_gemm.py:572)"
            return None
        return None

    def compile(self, fn, example_inputs, *, dynamic):
        funcs = GEMM_FUNCS + (GPU_ONLY_FUNCS if self._on_gpu() else [])
        return Compiled(fn, funcs)
