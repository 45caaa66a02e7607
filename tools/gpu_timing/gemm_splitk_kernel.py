"""The tuned Triton kernel TritonGemmSplitK: a linear layer as a split-K GEMM, Y = X @ W^T.

X is [M, K] (M = tokens), W is [N, K] (torch.nn.Linear's weight: N = out_features, K =
in_features), Y is [M, N]; all contiguous row-major. FP16 or BF16 inputs and output, fp32
accumulation. Masked loads and stores: any M, N, K.

Split-K (after the SPLIT_K of Triton's former matmul, triton/ops/matmul.py, Triton 2.x): a second
grid axis of SPLIT_K programs per output tile; program z takes the K blocks z, z + SPLIT_K,
z + 2 SPLIT_K, ... of BLOCK_K each. The partial sums are reduced in fp32, deterministically, the way
CUTLASS's "parallel split-K" does it: with SPLIT_K > 1 each program stores its fp32 partial tile
into a workspace [SPLIT_K, M, N] (plain stores, no atomics, no zeroing needed), and a second
kernel (splitk_reduce_kernel, fixed: 1024 elements a program, 4 warps) sums the SPLIT_K partials
of each element in fp32 and casts to the output type. SPLIT_K = 1 stores the cast tile into Y
directly: one launch. So a call (what the harness times, as a user would run it) is one launch for
SPLIT_K = 1 and two for SPLIT_K > 1 (launch()).

Tuning parameters (the harness's order): BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, num_warps,
num_stages. GROUP_M (program-id swizzle for L2 reuse) is fixed at 8, as in triton/ops/matmul.py.

M is not specialized (do_not_specialize): one compiled kernel serves every M. N and K are, as
Triton does by default (1 becomes a constant; a multiple of 16 lets the compiler prove 16-byte
aligned rows), so a config compiles once per (dtype, N class, K class).

Imported only where Triton is installed (the device).
"""
import triton
import triton.language as tl

GROUP_M = 8
REDUCE_BLOCK = 1024
REDUCE_WARPS = 4


@triton.jit(do_not_specialize=["M"])
def gemm_splitk_kernel(x_ptr, w_ptr, y_ptr, ws_ptr, M, N, K,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       SPLIT_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    pid_z = tl.program_id(1)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = pid_z * BLOCK_K + tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    w_ptrs = w_ptr + offs_n[None, :].to(tl.int64) * K + offs_k[:, None]   # the [BLOCK_K, BLOCK_N] tile of W^T

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        k_left = K - kb * (BLOCK_K * SPLIT_K)
        x = tl.load(x_ptrs, mask=mask_m[:, None] & (offs_k[None, :] < k_left), other=0.0)
        w = tl.load(w_ptrs, mask=(offs_k[:, None] < k_left) & mask_n[None, :], other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K * SPLIT_K
        w_ptrs += BLOCK_K * SPLIT_K

    mask = mask_m[:, None] & mask_n[None, :]
    if SPLIT_K == 1:
        y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
        tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        ws_ptrs = (ws_ptr + pid_z.to(tl.int64) * M * N + offs_m[:, None].to(tl.int64) * N + offs_n[None, :])
        tl.store(ws_ptrs, acc, mask=mask)


@triton.jit
def splitk_reduce_kernel(ws_ptr, y_ptr, MN, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.load(ws_ptr + offs, mask=mask, other=0.0)
    for s in tl.static_range(1, SPLIT_K):
        acc += tl.load(ws_ptr + s * MN + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)


def launcher(x, w, y, ws, M, N, K, block_m, block_n, block_k, split_k, num_warps, num_stages):
    """A no-argument function that runs the whole operation once (what a user calls): the GEMM,
    and for split_k > 1 the reduction. ws: fp32, at least split_k * M * N elements."""
    gemm = gemm_splitk_kernel[(triton.cdiv(M, block_m) * triton.cdiv(N, block_n), split_k)]
    if split_k == 1:
        def launch():
            gemm(x, w, y, ws, M, N, K, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, SPLIT_K=1,
                 GROUP_M=GROUP_M, num_warps=num_warps, num_stages=num_stages)
        return launch
    reduce = splitk_reduce_kernel[(triton.cdiv(M * N, REDUCE_BLOCK),)]
    MN = M * N

    def launch():
        gemm(x, w, y, ws, M, N, K, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, SPLIT_K=split_k,
             GROUP_M=GROUP_M, num_warps=num_warps, num_stages=num_stages)
        reduce(ws, y, MN, SPLIT_K=split_k, BLOCK=REDUCE_BLOCK, num_warps=REDUCE_WARPS)
    return launch


def warmup(x, w, y, ws, M, N, K, block_m, block_n, block_k, split_k, num_warps, num_stages):
    """Compiles (or loads from Triton's cache) the GEMM kernel of a config; x, w, y, ws may be
    torch dtypes (placeholders). Returns Triton's compiled kernel."""
    return gemm_splitk_kernel.warmup(x, w, y, ws, M, N, K, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                     SPLIT_K=split_k, GROUP_M=GROUP_M, num_warps=num_warps,
                                     num_stages=num_stages, grid=(1,))
