// Tensor-core helpers shared by the float16 kernels (conv2d_mma.cu, matmul_mma.cu), spliced
// into each by sources.read_source. The including kernel defines MMA_WARPS (warps per block):
// the host shim's emulation of mma.sync stages each warp's fragments in shared memory.

// Two halves (binary16 bits) in one 32-bit register: the lower-indexed element in the low half.
__device__ __forceinline__ unsigned int pack_halves(unsigned short low, unsigned short high) {
    return (unsigned int)low | ((unsigned int)high << 16);
}

// d[j] += a (16 x 16, row-major fragments) * b[j] (16 x 8, column-major fragments), j = 0..3: four
// mma.sync.aligned.m16n8k16 of one warp sharing a (a 16 x 32 product). Lane = 4 * group + t holds
//   a[0] = A[group][2t, 2t+1]       a[1] = A[group+8][2t, 2t+1]
//   a[2] = A[group][2t+8, 2t+9]     a[3] = A[group+8][2t+8, 2t+9]
//   b[j][0] = B_j[2t, 2t+1][group]  b[j][1] = B_j[2t+8, 2t+9][group]
//   d[j] = C_j[group][2t, 2t+1], C_j[group+8][2t, 2t+1]
// (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"; two halves in a
// register: the lower-indexed element in the low 16 bits).
__device__ __forceinline__ void mma_m16n32k16(float d[4][4], const unsigned int a[4], const unsigned int b[4][2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    asm volatile("trap;");  // no m16n8k16 before sm_80: conv2d_variant never picks this kernel there
#elif !defined(CUDA_HOST_SHIM)
    for (int j = 0; j < 4; ++j) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};"
            : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[j][0]), "r"(b[j][1]));
    }
#else
    // The shim: the warp's matrices assembled in shared memory from every lane's fragments (all
    // the block's threads call this together), then each lane computes its accumulators.
    __shared__ float shim_a[MMA_WARPS][16][16];
    __shared__ float shim_b[MMA_WARPS][4][16][8];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int group = lane / 4, t = lane % 4;
    for (int half = 0; half < 2; ++half) {
        shim_a[warp][group][2 * t + half] = cuda_host::half_bits_to_float((unsigned short)(a[0] >> (16 * half)));
        shim_a[warp][group + 8][2 * t + half] = cuda_host::half_bits_to_float((unsigned short)(a[1] >> (16 * half)));
        shim_a[warp][group][2 * t + 8 + half] = cuda_host::half_bits_to_float((unsigned short)(a[2] >> (16 * half)));
        shim_a[warp][group + 8][2 * t + 8 + half] = cuda_host::half_bits_to_float((unsigned short)(a[3] >> (16 * half)));
        for (int j = 0; j < 4; ++j) {
            shim_b[warp][j][2 * t + half][group] = cuda_host::half_bits_to_float((unsigned short)(b[j][0] >> (16 * half)));
            shim_b[warp][j][2 * t + 8 + half][group] = cuda_host::half_bits_to_float((unsigned short)(b[j][1] >> (16 * half)));
        }
    }
    __syncthreads();
    for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 4; ++i) {
            const int row = group + (i >= 2 ? 8 : 0), column = 2 * t + (i & 1);
            for (int k = 0; k < 16; ++k) d[j][i] = fmaf(shim_a[warp][row][k], shim_b[warp][j][k][column], d[j][i]);
        }
    }
    __syncthreads();  // the next product overwrites the matrices
#endif
}
