"""The tuned Triton kernel: a 1x1 convolution in NHWC as a GEMM, Y[M,N] = X[M,K] @ W[K,N].

M = n*h*w (NHWC pixels), N = k (output channels), K = c (input channels); X, W and Y are
contiguous row-major. FP16 inputs: fp32 accumulation, fp16 output. FP32 inputs: TF32 dot
(input_precision="tf32"), fp32 accumulation and output.

Tuning parameters (the harness's order): BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M (program-id
swizzle: GROUP_M row blocks are walked together for L2 reuse), num_warps, num_stages (software
pipelining depth, Triton's launch option).

M is not specialized (do_not_specialize): one compiled kernel serves every M. N and K are, as
Triton does by default (N or K == 1 becomes a constant; a multiple of 16 lets the compiler prove
16-byte aligned rows), so a config compiles once per (dtype, N class, K class).

Imported only where Triton is installed (the device); tools/gpu_timing/triton_gemm1x1.py imports
it lazily so that --help works anywhere.
"""
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["M"])
def gemm1x1_kernel(x_ptr, w_ptr, y_ptr, M, N, K,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr, IS_FP32: tl.constexpr):
    pid = tl.program_id(0)
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
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    w_ptrs = w_ptr + offs_k[:, None] * N + offs_n[None, :]

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - kb * BLOCK_K
        x = tl.load(x_ptrs, mask=mask_m[:, None] & (offs_k[None, :] < k_left), other=0.0)
        w = tl.load(w_ptrs, mask=(offs_k[:, None] < k_left) & mask_n[None, :], other=0.0)
        if IS_FP32:
            acc = tl.dot(x, w, acc, input_precision="tf32")
        else:
            acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * N

    y = acc.to(y_ptr.dtype.element_ty)
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
    tl.store(y_ptrs, y, mask=mask_m[:, None] & mask_n[None, :])
