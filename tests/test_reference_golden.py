"""Golden snapshots of the reference backend's generated plan (expecttest).

Each snapshot is the stable part of what the backend generates for one program: the call plan
of the lowered GEMM (op, fused nodes, epilogue slots) and the kernel and constexpr flags it gets
on sm90, planned from the recorded launch. Tile sizes come from the sm90 table, not from where
the test runs, so the snapshot is the same on a CPU (interpreter) and on a GPU. Update with
`EXPECTTEST_ACCEPT=1 pytest tests/test_reference_golden.py -n 0` and review the diff.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from expecttest import TestCase

from gemmconf.backends.base import RunOptions
from gemmconf.backends.reference import ReferenceBackend
from gemmconf_reference.launcher import plan_launch
from gemmconf_reference.target import Target

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
SM90 = Target("sm90", 90, False, 132)


def plan_snapshot(fn: Callable[..., Any], *args: torch.Tensor) -> str:
    backend = ReferenceBackend()
    backend.configure(RunOptions(target_arch="sm90"))
    compiled = backend.compile(fn, args, dynamic=None)
    compiled(*args)
    lines = []
    for graph in compiled.compiler.graphs:
        for call in graph.calls:
            lines.append(call.describe(launches=False))
            for record in call.launches.values():
                plan = plan_launch(record.problem, SM90, compiled.compiler.options)
                lines.append(f"sm90 {plan.kernel}:")
                lines += [f"  {name}={value}" for name, value in plan.constexprs]
    return "\n".join(lines)


class TestGoldenPlans(TestCase):
    def test_bf16_mm(self) -> None:
        a = torch.randn(256, 128, device=DEVICE, dtype=torch.bfloat16)
        b = torch.randn(128, 192, device=DEVICE, dtype=torch.bfloat16)
        self.assertExpectedInline(
            plan_snapshot(lambda a, b: torch.mm(a, b), a, b),
            """\
gemm_0_0 <- aten.mm mm(arg0_1, arg1_1): bfloat16 -> bfloat16
  fused after it: nothing
sm90 gemm_kernel_unaligned:
  BLOCK_M=64
  BLOCK_N=64
  BLOCK_K=64
  A_DESC=mk
  B_DESC=kn
  SCALING=none
  INT_ACC=False
  DOT_UPCAST=none
  INPUT_PRECISION=ieee
  FAST_ACCUM=True
  EPI0=none
  EPI1=none
  EPI2=none
  EPI3=none
  INDEX_64=False
  BF16_RNE=False""",
        )

    def test_fp8_rowwise_with_bias(self) -> None:
        a = torch.randn(64, 128, device=DEVICE).to(torch.float8_e4m3fn)
        b = torch.randn(96, 128, device=DEVICE).to(torch.float8_e4m3fn).t()
        sa, sb = torch.rand(64, 1, device=DEVICE), torch.rand(1, 96, device=DEVICE)
        bias = torch.randn(96, device=DEVICE, dtype=torch.bfloat16)

        def fn(a, b, sa, sb, bias):
            return torch._scaled_mm(a, b, sa, sb, bias=bias, out_dtype=torch.bfloat16)

        self.assertExpectedInline(
            plan_snapshot(fn, a, b, sa, sb, bias),
            """\
gemm_0_0 <- aten.scaled_mm _scaled_mm(arg0_1, arg1_1, arg2_1, arg3_1): float8_e4m3fn -> bfloat16
  fused after it: nothing
  EPI0 = axpby(1.0, 1.0, x0=arg4_1) <- _scaled_mm
sm90 gemm_kernel_unaligned:
  BLOCK_M=64
  BLOCK_N=64
  BLOCK_K=128
  A_DESC=mk
  B_DESC=nk
  SCALING=rowwise
  INT_ACC=False
  DOT_UPCAST=none
  INPUT_PRECISION=ieee
  FAST_ACCUM=False
  EPI0=axpby
  EPI1=none
  EPI2=none
  EPI3=none
  INDEX_64=False
  BF16_RNE=False""",
        )

    def test_addmm_relu(self) -> None:
        c = torch.randn(48, device=DEVICE)
        a, b = torch.randn(32, 64, device=DEVICE), torch.randn(64, 48, device=DEVICE)

        def fn(c, a, b):
            return torch.relu(torch.addmm(c, a, b, beta=0.5, alpha=2.0))

        self.assertExpectedInline(
            plan_snapshot(fn, c, a, b),
            """\
gemm_0_0 <- aten.addmm addmm(arg1_1, arg2_1): float32 -> float32
  fused after it: relu
  EPI0 = axpby(2.0, 0.5, x0=arg0_1) <- addmm
  EPI1 = relu <- relu
  fp32 input precision: ieee
sm90 gemm_kernel_unaligned:
  BLOCK_M=64
  BLOCK_N=64
  BLOCK_K=32
  A_DESC=mk
  B_DESC=kn
  SCALING=none
  INT_ACC=False
  DOT_UPCAST=none
  INPUT_PRECISION=ieee
  FAST_ACCUM=True
  EPI0=axpby
  EPI1=relu
  EPI2=none
  EPI3=none
  INDEX_64=False
  BF16_RNE=False""",
        )
