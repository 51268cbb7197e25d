"""Prototype: a warp-specialized sm90 fp8 GEMM in Gluon (producer warp + two consumer warpgroups)."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_init,
    warpgroup_mma_wait,
)


@gluon.jit
def _tile(tile, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    per_group = GROUP_M * num_pid_n
    first_m = (tile // per_group) * GROUP_M
    rows = gl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile % per_group) % rows
    pid_n = (tile % per_group) // rows
    return pid_m, pid_n


@gluon.jit
def _loader(
    a_desc, b_desc, a_bufs, b_bufs, ready, empty, num_tiles, num_pid_m, num_pid_n, k_steps,
    BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, HALF_M: gl.constexpr, STAGES: gl.constexpr,
    GROUP_M: gl.constexpr, NUM_PROGRAMS: gl.constexpr,
):
    step = 0
    for tile in range(gl.program_id(0), num_tiles, NUM_PROGRAMS):
        pid_m, pid_n = _tile(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * (2 * HALF_M)
        off_n = pid_n * BLOCK_N
        for kk in range(k_steps):
            s = step % STAGES
            mbarrier.wait(empty.index(s), ((step // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(s), (2 * HALF_M + BLOCK_N) * BLOCK_K)
            k = kk * BLOCK_K
            tma.async_copy_global_to_shared(a_desc, [off_m, k], ready.index(s), a_bufs.index(2 * s))
            tma.async_copy_global_to_shared(
                a_desc, [off_m + HALF_M, k], ready.index(s), a_bufs.index(2 * s + 1)
            )
            tma.async_copy_global_to_shared(b_desc, [off_n, k], ready.index(s), b_bufs.index(s))
            step += 1


@gluon.jit
def _consumer(
    a_bufs, b_bufs, ready, empty, c_desc, c_bufs, a_scale_ptr, b_scale_ptr, M, N,
    num_tiles, num_pid_m, num_pid_n, k_steps,
    HALF: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, HALF_M: gl.constexpr,
    STAGES: gl.constexpr, GROUP_M: gl.constexpr, NUM_PROGRAMS: gl.constexpr,
    OVERLAP: gl.constexpr,
):
    layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 32]
    )
    c_smem = c_bufs.index(HALF)
    step = 0
    for tile in range(gl.program_id(0), num_tiles, NUM_PROGRAMS):
        pid_m, pid_n = _tile(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * (2 * HALF_M) + HALF * HALF_M
        off_n = pid_n * BLOCK_N
        acc = gl.zeros([HALF_M, BLOCK_N], gl.float32, layout)
        if OVERLAP:
            # one K tile's MMA stays in flight while the previous one is added to acc
            s = step % STAGES
            mbarrier.wait(ready.index(s), (step // STAGES) & 1)
            pending = warpgroup_mma(
                a_bufs.index(2 * s + HALF), b_bufs.index(s).permute((1, 0)), acc,
                use_acc=False, is_async=True,
            )
            spare = gl.zeros([HALF_M, BLOCK_N], gl.float32, layout)
            prev = s
            step += 1
            for kk in range(1, k_steps):
                s = step % STAGES
                mbarrier.wait(ready.index(s), (step // STAGES) & 1)
                nxt = warpgroup_mma(
                    a_bufs.index(2 * s + HALF), b_bufs.index(s).permute((1, 0)), spare,
                    use_acc=False, is_async=True,
                )
                done = warpgroup_mma_wait(num_outstanding=1, deps=(pending,))
                mbarrier.arrive(empty.index(prev), count=1)
                acc = acc + done
                spare = done
                pending = nxt
                prev = s
                step += 1
            done = warpgroup_mma_wait(num_outstanding=0, deps=(pending,))
            mbarrier.arrive(empty.index(prev), count=1)
            acc = acc + done
        else:
            for kk in range(k_steps):
                s = step % STAGES
                mbarrier.wait(ready.index(s), (step // STAGES) & 1)
                part = warpgroup_mma(
                    a_bufs.index(2 * s + HALF), b_bufs.index(s).permute((1, 0)), acc,
                    use_acc=False, is_async=True,
                )
                part = warpgroup_mma_wait(num_outstanding=0, deps=(part,))
                mbarrier.arrive(empty.index(s), count=1)
                acc = acc + part
                step += 1

        rows = off_m + gl.arange(0, HALF_M, layout=gl.SliceLayout(1, layout))
        cols = off_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, layout))
        scale_a = gl.load(a_scale_ptr + rows, mask=rows < M, other=0.0)
        scale_b = gl.load(b_scale_ptr + cols, mask=cols < N, other=0.0)
        out = acc * scale_a[:, None] * scale_b[None, :]
        tma.store_wait(0)  # the previous tile's store has left c_smem
        c_smem.store(out.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)


@gluon.jit
def fp8_ws_kernel(
    a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, M, N, K, stride_am, stride_bn, stride_cm,
    BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, HALF_M: gl.constexpr, STAGES: gl.constexpr,
    GROUP_M: gl.constexpr, NUM_PROGRAMS: gl.constexpr, OVERLAP: gl.constexpr,
    CONSUMER_REGS: gl.constexpr, LOADER_REGS: gl.constexpr,
):
    a_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([HALF_M, BLOCK_K], gl.float8e4nv)
    b_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, BLOCK_K], gl.float8e4nv)
    c_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for(
        [HALF_M, BLOCK_N], c_ptr.dtype.element_ty
    )
    a_desc = tma.make_tensor_descriptor(
        a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[HALF_M, BLOCK_K], layout=a_layout
    )
    b_desc = tma.make_tensor_descriptor(
        b_ptr, shape=[N, K], strides=[stride_bn, 1], block_shape=[BLOCK_N, BLOCK_K], layout=b_layout
    )
    c_desc = tma.make_tensor_descriptor(
        c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[HALF_M, BLOCK_N], layout=c_layout
    )
    a_bufs = gl.allocate_shared_memory(gl.float8e4nv, [2 * STAGES, HALF_M, BLOCK_K], a_layout)
    b_bufs = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, BLOCK_N, BLOCK_K], b_layout)
    c_bufs = gl.allocate_shared_memory(c_ptr.dtype.element_ty, [2, HALF_M, BLOCK_N], c_layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=2)
    fence_async_shared()

    num_pid_m = gl.cdiv(M, 2 * HALF_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_steps = gl.cdiv(K, BLOCK_K)
    LOW: gl.constexpr = 0
    HIGH: gl.constexpr = 1
    gl.warp_specialize(
        [
            (
                _consumer,
                (a_bufs, b_bufs, ready, empty, c_desc, c_bufs, a_scale_ptr, b_scale_ptr, M, N,
                 num_tiles, num_pid_m, num_pid_n, k_steps,
                 LOW, BLOCK_N, BLOCK_K, HALF_M, STAGES, GROUP_M, NUM_PROGRAMS, OVERLAP),
            ),
            (
                _consumer,
                (a_bufs, b_bufs, ready, empty, c_desc, c_bufs, a_scale_ptr, b_scale_ptr, M, N,
                 num_tiles, num_pid_m, num_pid_n, k_steps,
                 HIGH, BLOCK_N, BLOCK_K, HALF_M, STAGES, GROUP_M, NUM_PROGRAMS, OVERLAP),
            ),
            (
                _loader,
                (a_desc, b_desc, a_bufs, b_bufs, ready, empty,
                 num_tiles, num_pid_m, num_pid_n, k_steps,
                 BLOCK_N, BLOCK_K, HALF_M, STAGES, GROUP_M, NUM_PROGRAMS),
            ),
        ],
        [4, 1],
        [CONSUMER_REGS, LOADER_REGS],
    )
