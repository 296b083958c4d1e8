// The register-blocked step of the float32 tiled products (conv2d_tiled.cu, matmul_tiled.cu):
// a block's 256 threads as 16 x 16 (tx = thread % 16, ty = thread / 16), each holding a
// THREAD_M x THREAD_N block of sums, rows ty + 16 r and columns tx + 16 c of the block's tile, so
// that a warp reads two values of A (broadcast) and 16 consecutive values of B per k. Each sum
// adds its products k in order as float32 fused multiply-adds: the order of the direct kernels
// (conv2d.cu, matmul.cu), so their bits. Each .cu that needs it says `#include
// "tiled_products.cuh"`, and sources.read_source splices this text in there.

#ifndef LITEDELEGATE_TILED_PRODUCTS_CUH
#define LITEDELEGATE_TILED_PRODUCTS_CUH

// acc[r][c] += a_tile[kk][ty + 16 r] * b_tile[kk][tx + 16 c] for kk = 0 .. steps - 1 in order:
// one step of k over the staged tiles, A transposed ([k][row]) and B as it is ([k][column]).
template <int THREAD_M, int THREAD_N, int TILE_K, int A_WIDTH, int B_WIDTH>
__device__ __forceinline__ void add_tile_products(
    float (&acc)[THREAD_M][THREAD_N], const float (&a_tile)[TILE_K][A_WIDTH], const float (&b_tile)[TILE_K][B_WIDTH],
    int steps, int tx, int ty)
{
    for (int kk = 0; kk < steps; ++kk) {
        float a[THREAD_M], b[THREAD_N];
        for (int r = 0; r < THREAD_M; ++r) a[r] = a_tile[kk][ty + 16 * r];
        for (int c = 0; c < THREAD_N; ++c) b[c] = b_tile[kk][tx + 16 * c];
        for (int r = 0; r < THREAD_M; ++r)
            for (int c = 0; c < THREAD_N; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
    }
}

#endif  // LITEDELEGATE_TILED_PRODUCTS_CUH
