// The matrix product with its output stage (FULLY_CONNECTED, BATCH_MATMUL, TRANSPOSE_CONV's
// patches) over shared-memory tiles: the tiled variant of matmul.cu's matmul_bias_act_f32/_f16,
// same arguments, same results (conv2d.py: matmul_variant picks it at prepare, from the shapes;
// products of few rows or few outputs stay on matmul.cu).
//
//   c[z, r, j] = clamp(bias[j] + sum_{i < k} a(z, r, i) * b(z, i, j), act_min, act_max)
//   a(z, r, i) = a[z * a_batch_stride + r * a_row_stride + i * a_col_stride]   (b likewise)
//
// Launch (conv2d.py: matmul_tiled_launch_config): blocks of 256 threads; grid.x = tiles of
// MM_TILE columns, grid.y = tiles of MM_TILE rows, grid.z = the batch. Per step of MM_TILE_K
// values of i, a block stages an MM_TILE x MM_TILE_K tile of a and an MM_TILE_K x MM_TILE tile of
// b in __shared__ memory, synchronises, and each thread adds the products to its register block
// of 4 x 4 outputs (rows ty + 16 r, columns tx + 16 c). Each output's sum runs in one thread,
// i = 0 .. k-1 in order, as float32 fused multiply-adds: matmul.cu's order, so its bits.
// Storage: float32 or float16 (binary16 bit patterns; tiles hold float32). This file must compile
// with NVRTC and with g++ through host_shim/cuda_host.h in its cooperative mode.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define MM_TILE 64
#define MM_TILE_K 16
#define MM_THREADS 256

#include "storage.cuh"         // load_as_float / store_from_float for float and float16 bit patterns
#include "matmul.cuh"          // MATMUL_PARAMS / MATMUL_ARGS, store_matmul_output, the tile loaders
#include "tiled_products.cuh"  // add_tile_products: the register-blocked step, shared with conv2d_tiled.cu

template <typename Storage>
__device__ __forceinline__ void matmul_bias_activation_tiled(MATMUL_PARAMS(Storage))
{
    constexpr int PER_THREAD = MM_TILE / 16;                  // 4 x 4 outputs per thread
    __shared__ float a_tile[MM_TILE_K][MM_TILE + 1];  // a transposed: [i][row]
    __shared__ float b_tile[MM_TILE_K][MM_TILE];

    const int t = threadIdx.x;
    const int row0 = blockIdx.y * MM_TILE, column0 = blockIdx.x * MM_TILE;
    a += blockIdx.z * a_batch_stride;
    b += blockIdx.z * b_batch_stride;
    c += blockIdx.z * c_batch_stride;
    const int tx = t % 16, ty = t / 16;
    float acc[PER_THREAD][PER_THREAD];
    for (int r = 0; r < PER_THREAD; ++r)
        for (int q = 0; q < PER_THREAD; ++q) acc[r][q] = 0.0f;

    for (int k0 = 0; k0 < k; k0 += MM_TILE_K) {
        stage_tile<MM_TILE, MM_TILE_K, MM_THREADS>(a, row0, k0, m, k, a_row_stride, a_col_stride, t,
            [&](int r, int i, const Storage* p) { a_tile[i][r] = p != nullptr ? load_as_float(p) : 0.0f; });
        stage_tile<MM_TILE_K, MM_TILE, MM_THREADS>(b, k0, column0, k, n, b_row_stride, b_col_stride, t,
            [&](int i, int c, const Storage* p) { b_tile[i][c] = p != nullptr ? load_as_float(p) : 0.0f; });
        __syncthreads();
        const int steps = min(MM_TILE_K, k - k0);  // no products past k: the sum is matmul.cu's
        add_tile_products(acc, a_tile, b_tile, steps, tx, ty);
        __syncthreads();
    }

    for (int r = 0; r < PER_THREAD; ++r) {
        const int row = row0 + ty + 16 * r;
        if (row >= m) continue;
        for (int q = 0; q < PER_THREAD; ++q) {
            const int column = column0 + tx + 16 * q;
            if (column >= n) continue;
            const float sum = acc[r][q];
            store_matmul_output(c, row, column, n, bias != nullptr ? sum + load_as_float(bias + column) : sum, act_min, act_max);
        }
    }
}

extern "C" __global__ void matmul_bias_act_tiled_f32(MATMUL_PARAMS(float))
{
    matmul_bias_activation_tiled<float>(MATMUL_ARGS);
}

extern "C" __global__ void matmul_bias_act_tiled_f16(MATMUL_PARAMS(unsigned short))
{
    matmul_bias_activation_tiled<unsigned short>(MATMUL_ARGS);
}
