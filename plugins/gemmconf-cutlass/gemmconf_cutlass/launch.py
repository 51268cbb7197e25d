"""Launching a plan: one shared library per kernel, called through ctypes, or the same plan
computed in torch.

`gpu_launch` builds the plan's kernel (or finds it in the cache), loads its library once per
process and calls `gemmconf_run` with raw device pointers, strides and the current CUDA stream.
`emulate_launch` computes what the kernel would, from the exact pointers-and-strides view it
would get: for tests and the survey on machines without a GPU.
"""

from __future__ import annotations

import ctypes
import threading

import torch

from gemmconf_cutlass import codegen
from gemmconf_cutlass.planning import CutlassLaunchPlan, CutlassOperand


class _Args(ctypes.Structure):
    """Mirror of `gemmconf_cutlass_args` in the generated shim (codegen._ARGS_STRUCT)."""

    _fields_ = [
        ("abi", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("m", ctypes.c_int32),
        ("n", ctypes.c_int32),
        ("k", ctypes.c_int32),
        ("l", ctypes.c_int32),
        ("a", ctypes.c_void_p),
        ("a_stride_m", ctypes.c_int64),
        ("a_stride_k", ctypes.c_int64),
        ("a_stride_l", ctypes.c_int64),
        ("b", ctypes.c_void_p),
        ("b_stride_n", ctypes.c_int64),
        ("b_stride_k", ctypes.c_int64),
        ("b_stride_l", ctypes.c_int64),
        ("c", ctypes.c_void_p),
        ("c_stride_m", ctypes.c_int64),
        ("c_stride_l", ctypes.c_int64),
        ("d", ctypes.c_void_p),
        ("d_stride_m", ctypes.c_int64),
        ("d_stride_l", ctypes.c_int64),
        ("scale_a", ctypes.c_void_p),
        ("scale_b", ctypes.c_void_p),
        ("alpha", ctypes.c_float),
        ("beta", ctypes.c_float),
        ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_uint64),
        ("stream", ctypes.c_void_p),
    ]


def launch_args(plan: CutlassLaunchPlan, *, device: int = 0, stream: int = 0) -> _Args:
    """The ABI struct for a plan (workspace left empty)."""
    p = plan.problem
    args = _Args(abi=codegen.ABI_VERSION, device=device, m=p.m, n=p.n, k=p.k, l=p.batch)
    args.a = plan.a.tensor.data_ptr()
    args.a_stride_m, args.a_stride_k, args.a_stride_l = plan.a.strides
    args.b = plan.b.tensor.data_ptr()
    args.b_stride_n, args.b_stride_k, args.b_stride_l = plan.b.strides
    if plan.c is not None:
        args.c = plan.c.tensor.data_ptr()
        if plan.spec.source == "matrix":
            args.c_stride_m, _, args.c_stride_l = plan.c.strides
        else:
            args.c_stride_l = plan.c.strides[1]
    args.d = plan.d.tensor.data_ptr()
    args.d_stride_m, _, args.d_stride_l = plan.d.strides
    if plan.scale_a is not None:
        args.scale_a, args.scale_b = plan.scale_a.data_ptr(), plan.scale_b.data_ptr()
    args.alpha, args.beta = plan.alpha, plan.beta
    args.stream = stream
    return args


class KernelLibrary:
    """One compiled kernel, loaded: `run(plan)` launches it on the current CUDA stream."""

    def __init__(self, spec: codegen.KernelSpec) -> None:
        self.spec = spec
        self.name = codegen.kernel_name(spec)
        self.built = codegen.build(codegen.render(spec), self.name, ("so", "sass"))
        self._lib = _load_library(str(self.built.path("so")))
        for symbol, restype, argtypes in (
            ("gemmconf_abi_version", ctypes.c_int, []),
            ("gemmconf_last_error", ctypes.c_char_p, []),
            (
                "gemmconf_workspace_size",
                ctypes.c_int,
                [ctypes.POINTER(_Args), ctypes.POINTER(ctypes.c_uint64)],
            ),
            ("gemmconf_run", ctypes.c_int, [ctypes.POINTER(_Args)]),
        ):
            function = getattr(self._lib, symbol)
            function.restype, function.argtypes = restype, argtypes
        abi = self._lib.gemmconf_abi_version()
        if abi != codegen.ABI_VERSION:
            raise RuntimeError(
                f"{self.built.path('so')}: ABI {abi}, expected "
                f"{codegen.ABI_VERSION} (a stale cache entry?)"
            )

    def run(self, plan: CutlassLaunchPlan) -> None:
        device = plan.d.tensor.device
        stream = torch.cuda.current_stream(device)
        args = launch_args(plan, device=device.index or 0, stream=stream.cuda_stream)
        size = ctypes.c_uint64(0)
        self._check(self._lib.gemmconf_workspace_size(ctypes.byref(args), ctypes.byref(size)))
        workspace = None
        if size.value:  # stream-ordered: freed after the launch, reused only after it
            workspace = torch.empty(size.value, dtype=torch.uint8, device=device)
            args.workspace, args.workspace_bytes = workspace.data_ptr(), size.value
        self._check(self._lib.gemmconf_run(ctypes.byref(args)))

    def _check(self, status: int) -> None:
        if status != 0:
            message = (self._lib.gemmconf_last_error() or b"").decode(errors="replace")
            raise RuntimeError(f"CUTLASS kernel {self.name} failed ({status}): {message}")


def _load_library(path: str) -> ctypes.CDLL:
    """dlopen a kernel library. It needs libcudart.so.13, which a CUDA torch has loaded already;
    otherwise (a library built elsewhere, no rpath match) load the runtime torch ships first."""
    try:
        return ctypes.CDLL(path)
    except OSError as exc:
        if "libcudart" not in str(exc):
            raise
        import glob
        import os

        site = os.path.dirname(os.path.dirname(torch.__file__))
        for runtime in sorted(
            glob.glob(os.path.join(site, "nvidia", "*", "lib", "libcudart.so.*"))
        ):
            ctypes.CDLL(runtime, mode=ctypes.RTLD_GLOBAL)
            return ctypes.CDLL(path)
        raise


_LIBRARIES: dict[codegen.KernelSpec, KernelLibrary] = {}
_LIBRARIES_LOCK = threading.Lock()


def kernel_library(spec: codegen.KernelSpec) -> KernelLibrary:
    """The loaded library of `spec`, built (or found in the cache) on first use in the process."""
    with _LIBRARIES_LOCK:
        library = _LIBRARIES.get(spec)
        if library is None:
            library = _LIBRARIES[spec] = KernelLibrary(spec)
        return library


def gpu_launch(plan: CutlassLaunchPlan) -> codegen.Built:
    """Launch a plan on its tensors' GPU; returns the kernel's cache entry (for artifacts)."""
    library = kernel_library(plan.spec)
    library.run(plan)
    return library.built


def emulate_launch(plan: CutlassLaunchPlan) -> None:
    """What the kernel computes for `plan`, in torch, from the same pointers-and-strides view.

    For tests on machines without a GPU: checks that a plan's strides, padding, scales and source
    describe the GEMM, independently of CUTLASS. Writes D like the kernel does.
    """
    p = plan.problem

    def view(
        operand: CutlassOperand, shape: tuple[int, ...], strides: tuple[int, ...]
    ) -> torch.Tensor:
        t = operand.tensor
        return torch.as_strided(t, shape, strides, t.storage_offset())

    sm, sk, sl = plan.a.strides
    a = view(plan.a, (p.batch, p.m, p.k), (sl, sm, sk)).float()
    sn, sk, sl = plan.b.strides
    b = view(plan.b, (p.batch, p.n, p.k), (sl, sn, sk)).float()
    acc = a @ b.transpose(1, 2)
    spec = plan.spec
    if spec.scaling == "alpha":
        scaled = plan.alpha * acc
    elif spec.scaling == "tensorwise":
        scaled = acc * (plan.scale_a[0] * plan.scale_b[0])
    else:
        scaled = plan.scale_a[: p.m].view(1, p.m, 1) * (plan.scale_b[: p.n].view(1, 1, p.n) * acc)
    if spec.source != "none":
        c = plan.c
        if spec.source == "matrix":
            cm, _, cl = c.strides
            source = view(c, (p.batch, p.m, p.n), (cl, cm, 1))
        elif spec.source == "row":
            source = view(c, (p.batch, 1, p.n), (c.strides[1], 0, 1))
        else:
            source = view(c, (p.batch, p.m, 1), (c.strides[1], 1, 0))
        scaled = plan.beta * source.float() + scaled
    dm, _, dl = plan.d.strides
    view(plan.d, (p.batch, p.m, p.n), (dl, dm, 1)).copy_(scaled.to(plan.d.tensor.dtype))
