"""The fused epilogue: up to `MAX_EPILOGUE_STEPS` pointwise ops on the accumulator tile.

Each slot is an op name (a constexpr, `EPILOGUE_OPS`) and a tuple of its runtime arguments,
`(x_ptr, stride_xb, stride_xm, stride_xn, s0, s1)`: one optional tensor broadcast to the output
tile by its strides (0 for broadcast dims; None where the op takes none) and two scalars.
"""

from __future__ import annotations

import triton
import triton.language as tl

from gemmconf_reference.kernels.numerics import round_to_bf16, sigmoid, tanh

MAX_EPILOGUE_STEPS = 4
EPILOGUE_SLOTS = tl.constexpr(MAX_EPILOGUE_STEPS)  # the same, as kernels read a global

EPILOGUE_OPS = (
    "none",
    "axpby",  # s0 * acc + s1 * x        (addmm/baddbmm C, bias, add/sub of a tensor)
    "mul_tensor",  # acc * x
    "div_tensor",  # acc / x
    "affine",  # acc * s0 + s1           (scalar mul/add/sub, alpha)
    "div_scalar",  # acc / s0
    "relu",
    "gelu_erf",
    "gelu_tanh",
    "silu",
    "tanh",
    "sigmoid",
    "clamp",  # min(max(acc, s0), s1)
    "clamp_min",  # max(acc, s0)
    "clamp_max",  # min(acc, s0)
    "round_bf16",  # acc.to(bf16).to(fp32): eager rounds here before a dtype change
    "round_fp16",
    "to_fp32",  # int32 accumulator to fp32 (int_mm followed by float ops)
)


@triton.jit
def epilogue_step(  # noqa: C901 a constexpr branch per epilogue op; Triton compiles one
    acc, slot, pid_b, offs_m, offs_n, mask, OP: tl.constexpr, BF16_RNE: tl.constexpr
):
    """One fused pointwise op on the accumulator tile; `x` is broadcast by its strides."""
    x_ptr, stride_xb, stride_xm, stride_xn, s0, s1 = slot
    if OP == "axpby" or OP == "mul_tensor" or OP == "div_tensor":
        x_ptrs = (
            x_ptr + pid_b * stride_xb + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn
        )
        x = tl.load(x_ptrs, mask=mask, other=0.0)
        x = x.to(acc.dtype)
        if OP == "axpby":
            acc = s0 * acc + s1 * x
        elif OP == "mul_tensor":
            acc = acc * x
        else:
            acc = acc / x
    elif OP == "affine":
        acc = acc * s0 + s1
    elif OP == "div_scalar":
        acc = acc / s0
    elif OP == "relu":
        acc = tl.where(acc < 0, 0, acc)  # keeps NaN, like torch.relu
    elif OP == "gelu_erf":
        acc = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    elif OP == "gelu_tanh":
        inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = 0.5 * acc * (1.0 + tanh(inner))
    elif OP == "silu":
        acc = acc * sigmoid(acc)
    elif OP == "tanh":
        acc = tanh(acc)
    elif OP == "sigmoid":
        acc = sigmoid(acc)
    elif OP == "clamp":
        acc = tl.where(acc < s0, s0, acc)
        acc = tl.where(acc > s1, s1, acc)
    elif OP == "clamp_min":
        acc = tl.where(acc < s0, s0, acc)
    elif OP == "clamp_max":
        acc = tl.where(acc > s0, s0, acc)
    elif OP == "round_bf16":
        if BF16_RNE:
            acc = round_to_bf16(acc)
        else:
            acc = acc.to(tl.bfloat16).to(tl.float32)
    elif OP == "round_fp16":
        acc = acc.to(tl.float16).to(tl.float32)
    elif OP == "to_fp32":
        acc = acc.to(tl.float32)
    return acc
