// Tensor-core helpers shared by the float16 kernels (conv2d_mma.cu, matmul_mma.cu), spliced
// into each by sources.read_source: their block's tiles, the instruction (mma.sync m16n8k16,
// emulated by the host shim, which stages each warp's fragments in shared memory and synchronises
// only the warp), where a lane's
// accumulators sit, and the fragments of one warp's step of k read from the staged tiles.
//
// (When these helpers were first written, a helper that also issued the mma, or returned the
// fragments in a struct, renumbered the accumulators' registers and reordered the loads: the
// same program, other bytes. Their tile shape is a template parameter since the narrow tiles of
// issue 31; test_ptxas_limits.py checks every instantiation: no spills, no local memory.)
//
// A block of MMA_THREADS threads (MMA_WARPS warps) computes a TILE_M x TILE_N tile of C = A * B,
// MMA_TILE_K values of k per step, staged as binary16 bits in
//   unsigned short a_tile[TILE_M][MMA_TILE_K + 8];   [row][k]    (+8: fewer bank conflicts)
//   unsigned short b_tile[MMA_TILE_K][TILE_N + 8];   [k][column]
// Its warps stand MmaShape<TILE_M, TILE_N>::WARPS_M x WARPS_N over the tile: warp w multiplies
// the tile's rows 16 (w % WARPS_M) .. + 15 by PRODUCTS x 8 columns from PRODUCTS x 8 (w / WARPS_M),
// PRODUCTS m16n8k16 products sharing their A fragment. 64 x 64: 4 x 2 warps of 4 products (16 x
// 32 each); 64 x 16: 4 x 2 warps of one product; 128 x 8: 8 x 1 warps of one product.

#ifndef LITEDELEGATE_MMA_CUH
#define LITEDELEGATE_MMA_CUH

#define MMA_TILE_K 16
#define MMA_THREADS 256
#define MMA_WARPS (MMA_THREADS / 32)

template <int TILE_M, int TILE_N>
struct MmaShape {
    static constexpr int WARPS_M = TILE_M / 16;
    static constexpr int WARPS_N = MMA_WARPS / WARPS_M;
    static constexpr int PRODUCTS = TILE_N / (8 * WARPS_N);  // m16n8k16 products per warp and step
    static_assert(WARPS_M * WARPS_N == MMA_WARPS && PRODUCTS >= 1 && PRODUCTS * 8 * WARPS_N == TILE_N,
                  "a tile of 16 x 8 products per warp, MMA_WARPS warps");
};

// Two halves (binary16 bits) in one 32-bit register: the lower-indexed element in the low half.
__device__ __forceinline__ unsigned int pack_halves(unsigned short low, unsigned short high) {
    return (unsigned int)low | ((unsigned int)high << 16);
}

// d[j] += a (16 x 16, row-major fragments) * b[j] (16 x 8, column-major fragments), j < PRODUCTS:
// PRODUCTS mma.sync.aligned.m16n8k16 of one warp sharing a (a 16 x 8 PRODUCTS product). Lane =
// 4 * group + t holds
//   a[0] = A[group][2t, 2t+1]       a[1] = A[group+8][2t, 2t+1]
//   a[2] = A[group][2t+8, 2t+9]     a[3] = A[group+8][2t+8, 2t+9]
//   b[j][0] = B_j[2t, 2t+1][group]  b[j][1] = B_j[2t+8, 2t+9][group]
//   d[j] = C_j[group][2t, 2t+1], C_j[group+8][2t, 2t+1]
// (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"; two halves in a
// register: the lower-indexed element in the low 16 bits).
template <int PRODUCTS>
__device__ __forceinline__ void mma_m16n8k16(float d[PRODUCTS][4], const unsigned int a[4], const unsigned int b[PRODUCTS][2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    asm volatile("trap;");  // no m16n8k16 before sm_80: the tensor-core rows never apply there (conv2d.py, matmul.py)
#elif !defined(CUDA_HOST_SHIM)
    for (int j = 0; j < PRODUCTS; ++j) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};"
            : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[j][0]), "r"(b[j][1]));
    }
#else
    // The shim: the warp's matrices assembled in shared memory from every lane's fragments (the
    // warp's 32 threads call this together, as mma.sync.aligned requires), then each lane
    // computes its accumulators. Only the warp synchronises, as the instruction does: a block
    // barrier here would hide a __syncthreads() missing around the tiles in the kernel.
    __shared__ float shim_a[MMA_WARPS][16][16];
    __shared__ float shim_b[MMA_WARPS][PRODUCTS][16][8];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int group = lane / 4, t = lane % 4;
    for (int half = 0; half < 2; ++half) {
        shim_a[warp][group][2 * t + half] = cuda_host::half_bits_to_float((unsigned short)(a[0] >> (16 * half)));
        shim_a[warp][group + 8][2 * t + half] = cuda_host::half_bits_to_float((unsigned short)(a[1] >> (16 * half)));
        shim_a[warp][group][2 * t + 8 + half] = cuda_host::half_bits_to_float((unsigned short)(a[2] >> (16 * half)));
        shim_a[warp][group + 8][2 * t + 8 + half] = cuda_host::half_bits_to_float((unsigned short)(a[3] >> (16 * half)));
        for (int j = 0; j < PRODUCTS; ++j) {
            shim_b[warp][j][2 * t + half][group] = cuda_host::half_bits_to_float((unsigned short)(b[j][0] >> (16 * half)));
            shim_b[warp][j][2 * t + 8 + half][group] = cuda_host::half_bits_to_float((unsigned short)(b[j][1] >> (16 * half)));
        }
    }
    __syncwarp();
    for (int j = 0; j < PRODUCTS; ++j) {
        for (int i = 0; i < 4; ++i) {
            const int row = group + (i >= 2 ? 8 : 0), column = 2 * t + (i & 1);
            for (int k = 0; k < 16; ++k) d[j][i] = fmaf(shim_a[warp][row][k], shim_b[warp][j][k][column], d[j][i]);
        }
    }
    __syncwarp();  // the warp's next product overwrites its matrices
#endif
}

// Where a thread's accumulators sit in the block's tile: its warp's first row (warp_m) and
// column (warp_n), and its lane = 4 * group + t in the fragment layout above.
struct MmaLane {
    int warp_m, warp_n;  // the warp's 16 rows and PRODUCTS x 8 columns
    int group, t;
};

template <int TILE_M, int TILE_N>
__device__ __forceinline__ MmaLane mma_lane(int thread) {
    using Shape = MmaShape<TILE_M, TILE_N>;
    const int warp = thread / 32, lane = thread % 32;
    MmaLane l;
    l.group = lane / 4;
    l.t = lane % 4;
    l.warp_m = (warp % Shape::WARPS_M) * 16;
    l.warp_n = (warp / Shape::WARPS_M) * (Shape::PRODUCTS * 8);
    return l;
}

// The accumulators' starting value: 0 in each of the products.
template <int PRODUCTS>
__device__ __forceinline__ void mma_clear(float acc[PRODUCTS][4]) {
    for (int j = 0; j < PRODUCTS; ++j)
        for (int i = 0; i < 4; ++i) acc[j][i] = 0.0f;
}

// One warp's fragments for a step of k (the tiles staged and synchronised): its 16 rows of a_tile
// into a and its PRODUCTS x 8 columns of b_tile into b, as the layout above gives them to this
// lane; the step is then mma_m16n8k16<PRODUCTS>(acc, a, b).
template <int PRODUCTS, int B_WIDTH>
__device__ __forceinline__ void load_mma_fragments(
    const unsigned short a_tile[][MMA_TILE_K + 8], const unsigned short b_tile[][B_WIDTH], const MmaLane& l,
    unsigned int a[4], unsigned int b[PRODUCTS][2])
{
    a[0] = pack_halves(a_tile[l.warp_m + l.group][2 * l.t], a_tile[l.warp_m + l.group][2 * l.t + 1]);
    a[1] = pack_halves(a_tile[l.warp_m + l.group + 8][2 * l.t], a_tile[l.warp_m + l.group + 8][2 * l.t + 1]);
    a[2] = pack_halves(a_tile[l.warp_m + l.group][2 * l.t + 8], a_tile[l.warp_m + l.group][2 * l.t + 9]);
    a[3] = pack_halves(a_tile[l.warp_m + l.group + 8][2 * l.t + 8], a_tile[l.warp_m + l.group + 8][2 * l.t + 9]);
    for (int j = 0; j < PRODUCTS; ++j) {
        const int column = l.warp_n + j * 8 + l.group;
        b[j][0] = pack_halves(b_tile[2 * l.t][column], b_tile[2 * l.t + 1][column]);
        b[j][1] = pack_halves(b_tile[2 * l.t + 8][column], b_tile[2 * l.t + 9][column]);
    }
}

// Accumulator i of product j holds C[mma_row(row0, l, i)][mma_column(column0, l, j, i)]: the row
// and column of C for a block tile starting at row0, column0.
template <typename Index>
__device__ __forceinline__ Index mma_row(Index row0, const MmaLane& l, int i) {
    return row0 + l.warp_m + l.group + (i >= 2 ? 8 : 0);
}
template <typename Index>
__device__ __forceinline__ Index mma_column(Index column0, const MmaLane& l, int j, int i) {
    return column0 + l.warp_n + j * 8 + 2 * l.t + (i & 1);
}

#endif  // LITEDELEGATE_MMA_CUH
