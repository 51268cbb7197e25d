"""Prototype (session 13): hopper_gemm_kernel with BLOCK_N = 256 for fp8, promoted in two
128-column halves (acc0, acc1 and one partial product: 192 registers)."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

HALF_M = gl.constexpr(64)  # rows per consumer warpgroup (a warpgroup's wgmma has M = 64)
CONSUMER_REGS = gl.constexpr(232)  # registers per thread of the worker consumer (setmaxnreg)
LOADER_REGS = gl.constexpr(40)  # and of the loader warp


@gluon.jit
def _tile_of(tile, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """Output tile `tile`'s (row, column), GROUP_M tile rows at a time (L2 reuse of B)."""
    per_group = GROUP_M * num_pid_n
    first_m = (tile // per_group) * GROUP_M
    rows = gl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


@gluon.jit
def _loader(
    a_desc,
    b_desc,
    a_bufs,
    b_bufs,
    ready,
    empty,
    num_pid_m,
    num_pid_n,
    k_tiles,
    BLOCK_N: gl.constexpr,
    BLOCK_K: gl.constexpr,
    STAGES: gl.constexpr,
    GROUP_M: gl.constexpr,
    NUM_PROGRAMS: gl.constexpr,
    B_KN: gl.constexpr,
):
    half: gl.constexpr = a_desc.block_type.shape[0]
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS):
        pid_m, pid_n = _tile_of(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * 2 * half
        off_n = pid_n * BLOCK_N
        for kt in range(k_tiles):
            s = step % STAGES
            # a slot's first use waits for the phase before the barrier's first: it passes
            mbarrier.wait(empty.index(s), ((step // STAGES) & 1) ^ 1)
            mbarrier.expect(
                ready.index(s),
                2 * a_desc.block_type.nbytes + b_desc.block_type.nbytes,
            )
            k = kt * BLOCK_K
            tma.async_copy_global_to_shared(a_desc, [off_m, k], ready.index(s), a_bufs.index(2 * s))
            tma.async_copy_global_to_shared(
                a_desc, [off_m + half, k], ready.index(s), a_bufs.index(2 * s + 1)
            )
            b_at = [k, off_n] if B_KN else [off_n, k]
            tma.async_copy_global_to_shared(b_desc, b_at, ready.index(s), b_bufs.index(s))
            step += 1


@gluon.jit
def _consumer(
    shared,
    HALF: gl.constexpr,
    BLOCK_N: gl.constexpr,
    STAGES: gl.constexpr,
    GROUP_M: gl.constexpr,
    NUM_PROGRAMS: gl.constexpr,
    B_KN: gl.constexpr,
    PROMOTE: gl.constexpr,
    SCALING: gl.constexpr,
):
    """Consumer warpgroup HALF: rows 64 * HALF.. of each tile (`shared`: both consumers' inputs)."""
    (a_bufs, b_bufs, ready, empty, c_desc, c_bufs, a_scale_ptr, b_scale_ptr) = shared[:8]
    (M, N, stride_sam, stride_sbn, num_pid_m, num_pid_n, k_tiles) = shared[8:]
    half: gl.constexpr = c_desc.block_type.shape[0]
    k_step: gl.constexpr = 256 // a_bufs.dtype.primitive_bitwidth  # a wgmma's K
    layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, k_step]
    )
    c_smem = c_bufs.index(HALF)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS):
        pid_m, pid_n = _tile_of(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * 2 * half + HALF * half
        off_n = pid_n * BLOCK_N
        acc = gl.zeros([half, BLOCK_N], gl.float32, layout)
        prev = 0
        for kt in range(k_tiles):
            s = step % STAGES
            mbarrier.wait(ready.index(s), (step // STAGES) & 1)
            if B_KN:
                b = b_bufs.index(s)
            else:
                b = b_bufs.index(s).permute((1, 0))
            if PROMOTE:
                # this K tile's product alone (use_acc=False: acc only gives the result's
                # type), complete when the call returns; its slot is then free, and the product
                # is promoted into acc
                part = warpgroup_mma(a_bufs.index(2 * s + HALF), b, acc, use_acc=False)
                mbarrier.arrive(empty.index(s), count=1)
                acc = acc + part
            else:
                # chained into acc; waiting down to one group in flight finishes the previous
                # K tile's, whose slot is then free
                acc = warpgroup_mma(a_bufs.index(2 * s + HALF), b, acc, is_async=True)
                acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
                if kt > 0:
                    mbarrier.arrive(empty.index(prev), count=1)
                prev = s
            step += 1
        if not PROMOTE:
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
            mbarrier.arrive(empty.index(prev), count=1)

        if SCALING == "tensorwise":
            acc = acc * gl.load(a_scale_ptr) * gl.load(b_scale_ptr)
        elif SCALING == "rowwise":  # (M, 1) and (1, N) scales
            rows = off_m + gl.arange(0, half, layout=gl.SliceLayout(1, layout))
            cols = off_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, layout))
            scale_a = gl.load(a_scale_ptr + rows * stride_sam, mask=rows < M, other=0.0)
            scale_b = gl.load(b_scale_ptr + cols * stride_sbn, mask=cols < N, other=0.0)
            acc = acc * scale_a[:, None] * scale_b[None, :]
        tma.store_wait(0)  # the previous tile's store has read c_smem
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)




@gluon.jit
def _wide_consumer(
    shared,
    HALF: gl.constexpr,
    BLOCK_N: gl.constexpr,
    STAGES: gl.constexpr,
    GROUP_M: gl.constexpr,
    NUM_PROGRAMS: gl.constexpr,
    B_KN: gl.constexpr,
    PROMOTE: gl.constexpr,
    SCALING: gl.constexpr,
):
    (a_bufs, b_bufs, ready, empty, c_desc, c_bufs, a_scale_ptr, b_scale_ptr) = shared[:8]
    (M, N, stride_sam, stride_sbn, num_pid_m, num_pid_n, k_tiles) = shared[8:]
    half: gl.constexpr = c_desc.block_type.shape[0]
    sub: gl.constexpr = c_desc.block_type.shape[1]
    k_step: gl.constexpr = 256 // a_bufs.dtype.primitive_bitwidth
    layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, sub, k_step]
    )
    c_smem = c_bufs.index(HALF)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS):
        pid_m, pid_n = _tile_of(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * 2 * half + HALF * half
        off_n = pid_n * BLOCK_N
        acc0 = gl.zeros([half, sub], gl.float32, layout)
        acc1 = gl.zeros([half, sub], gl.float32, layout)
        for kt in range(k_tiles):
            s = step % STAGES
            mbarrier.wait(ready.index(s), (step // STAGES) & 1)
            a = a_bufs.index(2 * s + HALF)
            b = b_bufs.index(s)
            part = warpgroup_mma(a, b.slice(0, sub, dim=0).permute((1, 0)), acc0, use_acc=False)
            acc0 = acc0 + part
            part = warpgroup_mma(a, b.slice(sub, sub, dim=0).permute((1, 0)), acc1, use_acc=False)
            mbarrier.arrive(empty.index(s), count=1)
            acc1 = acc1 + part
            step += 1
        rows = off_m + gl.arange(0, half, layout=gl.SliceLayout(1, layout))
        if SCALING == "tensorwise":
            scale = gl.load(a_scale_ptr) * gl.load(b_scale_ptr)
            acc0 = acc0 * scale
            acc1 = acc1 * scale
        elif SCALING == "rowwise":
            scale_a = gl.load(a_scale_ptr + rows * stride_sam, mask=rows < M, other=0.0)
            cols = off_n + gl.arange(0, sub, layout=gl.SliceLayout(0, layout))
            scale_b = gl.load(b_scale_ptr + cols * stride_sbn, mask=cols < N, other=0.0)
            acc0 = acc0 * scale_a[:, None] * scale_b[None, :]
            cols = cols + sub
            scale_b = gl.load(b_scale_ptr + cols * stride_sbn, mask=cols < N, other=0.0)
            acc1 = acc1 * scale_a[:, None] * scale_b[None, :]
        tma.store_wait(0)
        c_smem.store(acc0.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
        tma.store_wait(0)
        c_smem.store(acc1.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [off_m, off_n + sub], c_smem)
    tma.store_wait(0)


@gluon.jit
def hopper_gemm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    a_scale_ptr,
    b_scale_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_sam,
    stride_sbn,
    BLOCK_N: gl.constexpr,
    BLOCK_K: gl.constexpr,
    STAGES: gl.constexpr,
    GROUP_M: gl.constexpr,
    NUM_PROGRAMS: gl.constexpr,
    B_KN: gl.constexpr,
    PROMOTE: gl.constexpr,
    SCALING: gl.constexpr,
    WIDE: gl.constexpr = False,
):
    """C = scale(A @ B) for A (M, K) K-contiguous and B (K, N), K- or N-contiguous (`B_KN`);
    one program per SM."""
    half: gl.constexpr = HALF_M
    a_ty: gl.constexpr = a_ptr.dtype.element_ty
    b_ty: gl.constexpr = b_ptr.dtype.element_ty
    c_ty: gl.constexpr = c_ptr.dtype.element_ty
    a_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([half, BLOCK_K], a_ty)
    c_n: gl.constexpr = BLOCK_N // 2 if WIDE else BLOCK_N
    c_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([half, c_n], c_ty)
    a_desc = tma.make_tensor_descriptor(
        a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[half, BLOCK_K], layout=a_layout
    )
    # B's tile as it sits in memory: (K, N) where N is contiguous (B_KN), else (N, K)
    b_block: gl.constexpr = [BLOCK_K, BLOCK_N] if B_KN else [BLOCK_N, BLOCK_K]
    b_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for(b_block, b_ty)
    b_desc = tma.make_tensor_descriptor(
        b_ptr,
        shape=[K, N] if B_KN else [N, K],
        strides=[stride_bk, 1] if B_KN else [stride_bn, 1],
        block_shape=b_block,
        layout=b_layout,
    )
    b_bufs = gl.allocate_shared_memory(b_ty, [STAGES, b_block[0], b_block[1]], b_layout)
    c_desc = tma.make_tensor_descriptor(
        c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[half, c_n], layout=c_layout
    )
    a_bufs = gl.allocate_shared_memory(a_ty, [2 * STAGES, half, BLOCK_K], a_layout)
    c_bufs = gl.allocate_shared_memory(c_ty, [2, half, c_n], c_layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=2)  # one arrival per consumer
    fence_async_shared()

    num_pid_m = gl.cdiv(M, 2 * half)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    shared = (a_bufs, b_bufs, ready, empty, c_desc, c_bufs, a_scale_ptr, b_scale_ptr)
    shared += (M, N, stride_sam, stride_sbn, num_pid_m, num_pid_n, k_tiles)
    LOW: gl.constexpr = 0
    HIGH: gl.constexpr = 1
    if WIDE:
        gl.warp_specialize(
            [
                (
                    _wide_consumer,
                    (shared, LOW, BLOCK_N, STAGES, GROUP_M, NUM_PROGRAMS, B_KN, PROMOTE, SCALING),
                ),
                (
                    _wide_consumer,
                    (shared, HIGH, BLOCK_N, STAGES, GROUP_M, NUM_PROGRAMS, B_KN, PROMOTE, SCALING),
                ),
                (
                    _loader,
                    (
                        a_desc,
                        b_desc,
                        a_bufs,
                        b_bufs,
                        ready,
                        empty,
                        num_pid_m,
                        num_pid_n,
                        k_tiles,
                        BLOCK_N,
                        BLOCK_K,
                        STAGES,
                        GROUP_M,
                        NUM_PROGRAMS,
                        B_KN,
                    ),
                ),
            ],
            [4, 1],
            [CONSUMER_REGS, LOADER_REGS],
        )
    else:
        gl.warp_specialize(
            [
                (
                    _consumer,
                    (shared, LOW, BLOCK_N, STAGES, GROUP_M, NUM_PROGRAMS, B_KN, PROMOTE, SCALING),
                ),
                (
                    _consumer,
                    (shared, HIGH, BLOCK_N, STAGES, GROUP_M, NUM_PROGRAMS, B_KN, PROMOTE, SCALING),
                ),
                (
                    _loader,
                    (
                        a_desc,
                        b_desc,
                        a_bufs,
                        b_bufs,
                        ready,
                        empty,
                        num_pid_m,
                        num_pid_n,
                        k_tiles,
                        BLOCK_N,
                        BLOCK_K,
                        STAGES,
                        GROUP_M,
                        NUM_PROGRAMS,
                        B_KN,
                    ),
                ),
            ],
            [4, 1],
            [CONSUMER_REGS, LOADER_REGS],
        )
