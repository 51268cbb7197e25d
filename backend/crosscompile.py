"""Cross-compiling launched kernels to TTIR/TTGIR/PTX for a GPU arch, also on a CPU-only machine.

A `CompileRequest` is plain data: the kernel's name, each runtime argument's type and Triton
specialisation (as a real launch computes it: pointers and ints that are multiples of 16 get
`tt.divisibility=16`, ints equal to 1 become constexpr 1, see `specialize`), the constexprs, and
the warps/stages. `triton.compile(ASTSource(...), target=GPUTarget("cuda", cap, 32))` turns it
into IR with no GPU present.

Why a worker process: with TRITON_INTERPRET=1 every `@triton.jit` function, Triton's own
standard library included, is an interpreter object that the compiler cannot lower (and running
the interpreter leaves `triton.language` patched). So when this process interprets, requests go
to one long-lived child (`crosscompile.serve()`) started with the interpreter off,
which imports `backend.kernels` as real JITFunctions; JSON lines in, JSON lines out. On a GPU
machine compilation happens in-process. Results are cached per (request, target).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gemmconf_reference import compat

ARTIFACT_KINDS = ("ttir", "ttgir", "ptx")


@dataclass(frozen=True)
class ParamSpec:
    """One kernel parameter as the launcher specialises it."""

    name: str
    type: str  # "*bf16", "i32", "fp32", or "constexpr"
    divisible_16: bool = False
    value: Any = None  # the constexpr value (only for type == "constexpr")


def specialize(name: str, value: Any) -> ParamSpec:
    """Triton's launch-time specialisation of one runtime argument (triton 3.x rules)."""
    if value is None:
        return ParamSpec(name, "constexpr", value=None)
    if isinstance(value, torch.Tensor):
        ty = "*" + compat.TRITON_POINTER_TYPES[value.dtype]
        return ParamSpec(name, ty, value.data_ptr() % 16 == 0)
    if isinstance(value, bool):
        return ParamSpec(name, "u1")
    if isinstance(value, int):
        if value == 1:
            return ParamSpec(name, "constexpr", value=1)
        ty = "i32" if -(2**31) <= value < 2**31 else "i64"
        return ParamSpec(name, ty, value % 16 == 0)
    if isinstance(value, float):
        return ParamSpec(name, "fp32")
    raise TypeError(f"cannot specialise argument {name}={value!r}")


@dataclass(frozen=True)
class CompileRequest:
    kernel: str  # a name in backend.kernels.KERNELS
    params: tuple[ParamSpec, ...]  # every parameter in order, constexprs included
    num_warps: int
    num_stages: int

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "params": [[p.name, p.type, p.divisible_16, p.value] for p in self.params],
            "num_warps": self.num_warps,
            "num_stages": self.num_stages,
        }

    def signature_id(self) -> str:
        """A short id of this kernel specialisation: equal ids, the same compiled kernel
        (results.json's `kernel_signatures`; the name of its compile lock)."""
        text = json.dumps(self.to_json(), default=str)
        return hashlib.sha1(text.encode()).hexdigest()[:12]

    @staticmethod
    def from_json(data: dict[str, Any]) -> CompileRequest:
        params = tuple(ParamSpec(n, t, d, v) for n, t, d, v in data["params"])
        return CompileRequest(data["kernel"], params, data["num_warps"], data["num_stages"])


def compile_in_process(request: CompileRequest, capability: int) -> dict[str, str]:
    """The IR texts of one kernel for sm_<capability>; needs real JITFunctions (no interpreter)."""
    import triton

    from gemmconf_reference import kernels

    fn = kernels.KERNELS[request.kernel]
    signature = {p.name: p.type for p in request.params}
    constexprs = {(i,): p.value for i, p in enumerate(request.params) if p.type == "constexpr"}
    attrs = {
        (i,): [["tt.divisibility", 16]]
        for i, p in enumerate(request.params)
        if p.divisible_16 and p.type != "constexpr"
    }
    compiled = triton.compile(
        compat.ast_source(fn, signature, constexprs, attrs),
        target=compat.gpu_target(capability),
        options={"num_warps": request.num_warps, "num_stages": request.num_stages},
    )
    return {kind: compiled.asm[kind] for kind in ARTIFACT_KINDS if kind in compiled.asm}


class _Worker:
    """The child process that compiles while this one interprets."""

    def __init__(self) -> None:
        env = dict(os.environ)
        env[compat.TRITON_INTERPRET_ENV] = "0"
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from gemmconf_reference.crosscompile import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=root,
            text=True,
        )

    def compile(self, request: CompileRequest, capability: int) -> dict[str, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        line = json.dumps({"request": request.to_json(), "capability": capability})
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"cross-compile worker exited (status {self.proc.poll()})")
        result = json.loads(reply)
        if "error" in result:
            raise RuntimeError(
                f"cross-compiling {request.kernel} for sm{capability} failed:\n{result['error']}"
            )
        return result["asm"]

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class CrossCompiler:
    """Compiles requests for a capability, in-process or through the worker, with a cache."""

    def __init__(self) -> None:
        self._cache: dict[tuple[CompileRequest, int], dict[str, str]] = {}
        self._worker: _Worker | None = None
        self._lock = threading.Lock()

    def compile(self, request: CompileRequest, capability: int) -> dict[str, str]:
        key = (request, capability)
        with self._lock:
            if key not in self._cache:
                if compat.interpreting():
                    if self._worker is None:
                        self._worker = _Worker()
                        atexit.register(self._worker.close)
                    self._cache[key] = self._worker.compile(request, capability)
                else:
                    self._cache[key] = compile_in_process(request, capability)
            return self._cache[key]


CROSS_COMPILER = CrossCompiler()


def serve() -> None:
    """Worker loop: one JSON request per line on stdin, one JSON reply per line on stdout."""
    import traceback

    # replies own the real stdout; anything else printed (Triton, ptxas) goes to stderr
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        message = json.loads(line)
        try:
            request = CompileRequest.from_json(message["request"])
            reply: dict[str, Any] = {"asm": compile_in_process(request, message["capability"])}
        except Exception:  # every failure goes back to the parent as text
            reply = {"error": traceback.format_exc()}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
