"""Prototype: the warp-specialized sm90 kernel for 16-bit GEMMs (no promotion; async wgmma chain)."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)


@gluon.jit
def _tile_of(tile, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    per_group = GROUP_M * num_pid_n
    first_m = (tile // per_group) * GROUP_M
    rows = gl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


@gluon.jit
def _loader(a_desc, b_desc, a_bufs, b_bufs, ready, empty, num_pid_m, num_pid_n, k_tiles,
            BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, STAGES: gl.constexpr,
            GROUP_M: gl.constexpr, NUM_PROGRAMS: gl.constexpr, B_KN: gl.constexpr):
    half: gl.constexpr = a_desc.block_type.shape[0]
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS):
        pid_m, pid_n = _tile_of(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * 2 * half
        off_n = pid_n * BLOCK_N
        for kt in range(k_tiles):
            s = step % STAGES
            mbarrier.wait(empty.index(s), ((step // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(s), 2 * a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            k = kt * BLOCK_K
            tma.async_copy_global_to_shared(a_desc, [off_m, k], ready.index(s), a_bufs.index(2 * s))
            tma.async_copy_global_to_shared(a_desc, [off_m + half, k], ready.index(s), a_bufs.index(2 * s + 1))
            if B_KN:
                tma.async_copy_global_to_shared(b_desc, [k, off_n], ready.index(s), b_bufs.index(s))
            else:
                tma.async_copy_global_to_shared(b_desc, [off_n, k], ready.index(s), b_bufs.index(s))
            step += 1


@gluon.jit
def _consumer(shared, HALF: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
              GROUP_M: gl.constexpr, NUM_PROGRAMS: gl.constexpr, B_KN: gl.constexpr):
    (a_bufs, b_bufs, ready, empty, c_desc, c_bufs, M, N, num_pid_m, num_pid_n, k_tiles) = shared
    half: gl.constexpr = c_desc.block_type.shape[0]
    k_step: gl.constexpr = 256 // a_bufs.dtype.primitive_bitwidth
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
            acc = warpgroup_mma(a_bufs.index(2 * s + HALF), b, acc, is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
            if kt > 0:
                mbarrier.arrive(empty.index(prev), count=1)
            prev = s
            step += 1
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        mbarrier.arrive(empty.index(prev), count=1)
        tma.store_wait(0)
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)


@gluon.jit
def ws16_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_b, stride_cm,
                BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, STAGES: gl.constexpr,
                GROUP_M: gl.constexpr, NUM_PROGRAMS: gl.constexpr, B_KN: gl.constexpr,
                CONSUMER_REGS: gl.constexpr, LOADER_REGS: gl.constexpr):
    half: gl.constexpr = 64
    a_ty: gl.constexpr = a_ptr.dtype.element_ty
    c_ty: gl.constexpr = c_ptr.dtype.element_ty
    a_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([half, BLOCK_K], a_ty)
    c_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([half, BLOCK_N], c_ty)
    a_desc = tma.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                        block_shape=[half, BLOCK_K], layout=a_layout)
    if B_KN:
        b_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_K, BLOCK_N], a_ty)
        b_desc = tma.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_b, 1],
                                            block_shape=[BLOCK_K, BLOCK_N], layout=b_layout)
        b_bufs = gl.allocate_shared_memory(a_ty, [STAGES, BLOCK_K, BLOCK_N], b_layout)
    else:
        b_layout2: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, BLOCK_K], a_ty)
        b_desc = tma.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[stride_b, 1],
                                            block_shape=[BLOCK_N, BLOCK_K], layout=b_layout2)
        b_bufs = gl.allocate_shared_memory(a_ty, [STAGES, BLOCK_N, BLOCK_K], b_layout2)
    c_desc = tma.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                        block_shape=[half, BLOCK_N], layout=c_layout)
    a_bufs = gl.allocate_shared_memory(a_ty, [2 * STAGES, half, BLOCK_K], a_layout)
    c_bufs = gl.allocate_shared_memory(c_ty, [2, half, BLOCK_N], c_layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=2)
    fence_async_shared()
    num_pid_m = gl.cdiv(M, 2 * half)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    shared = (a_bufs, b_bufs, ready, empty, c_desc, c_bufs, M, N, num_pid_m, num_pid_n, k_tiles)
    LOW: gl.constexpr = 0
    HIGH: gl.constexpr = 1
    gl.warp_specialize(
        [
            (_consumer, (shared, LOW, BLOCK_N, STAGES, GROUP_M, NUM_PROGRAMS, B_KN)),
            (_consumer, (shared, HIGH, BLOCK_N, STAGES, GROUP_M, NUM_PROGRAMS, B_KN)),
            (_loader, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, num_pid_m, num_pid_n, k_tiles,
                       BLOCK_N, BLOCK_K, STAGES, GROUP_M, NUM_PROGRAMS, B_KN)),
        ],
        [4, 1],
        [CONSUMER_REGS, LOADER_REGS],
    )
