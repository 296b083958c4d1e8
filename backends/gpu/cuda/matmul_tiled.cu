// The matrix product with its output stage (FULLY_CONNECTED, BATCH_MATMUL, TRANSPOSE_CONV's
// patches) over shared-memory tiles: the tiled variant of matmul.cu's matmul_bias_act_f32/_f16,
// same arguments, same results, in two tile shapes (64 x 64, and 32 x 32: as many blocks as
// matmul.cu's), each a row of matmul.py's MATMUL_TACTICS (chosen at prepare by measuring them:
// backends/gpu/tactics.py).
//
//   c[z, r, j] = clamp(bias[j] + sum_{i < k} a(z, r, i) * b(z, i, j), act_min, act_max)
//   a(z, r, i) = a[z * a_batch_stride + r * a_row_stride + i * a_col_stride]   (b likewise)
//
// Launch (matmul.py: matmul_tiled_launch_config): blocks of 256 threads; grid.x = tiles of
// TILE_N columns, grid.y = tiles of TILE_M rows, grid.z = the batch. Per step of MM_TILE_K
// values of i, a block stages a TILE_M x MM_TILE_K tile of a and an MM_TILE_K x TILE_N tile of
// b in __shared__ memory, synchronises, and each thread adds the products to its register block
// of (TILE_M / 16) x (TILE_N / 16) outputs (rows ty + 16 r, columns tx + 16 c). Each output's sum runs in one thread,
// i = 0 .. k-1 in order, as float32 fused multiply-adds: matmul.cu's order, so its bits.
// Storage: float32 or float16 (binary16 bit patterns; tiles hold float32). This file must compile
// with NVRTC and with g++ through host_shim/cuda_host.h in its cooperative mode.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define MM_TILE_K 16
#define MM_THREADS 256

#include "storage.cuh"         // load_as_float / store_from_float for float and float16 bit patterns
#include "matmul.cuh"          // MATMUL_PARAMS / MATMUL_ARGS, store_matmul_output, the tile loaders
#include "tiled_products.cuh"  // add_tile_products: the register-blocked step, shared with conv2d_tiled.cu

template <typename Storage, int TILE_M, int TILE_N>
__device__ __forceinline__ void matmul_bias_activation_tiled(MATMUL_PARAMS(Storage))
{
    constexpr int THREAD_M = TILE_M / 16, THREAD_N = TILE_N / 16;  // outputs per thread: rows x columns
    __shared__ float a_tile[MM_TILE_K][TILE_M + 1];  // a transposed: [i][row]
    __shared__ float b_tile[MM_TILE_K][TILE_N];

    const int t = threadIdx.x;
    const int row0 = blockIdx.y * TILE_M, column0 = blockIdx.x * TILE_N;
    a += blockIdx.z * a_batch_stride;
    b += blockIdx.z * b_batch_stride;
    c += blockIdx.z * c_batch_stride;
    const int tx = t % 16, ty = t / 16;
    float acc[THREAD_M][THREAD_N];
    for (int r = 0; r < THREAD_M; ++r)
        for (int q = 0; q < THREAD_N; ++q) acc[r][q] = 0.0f;

    for (int k0 = 0; k0 < k; k0 += MM_TILE_K) {
        stage_tile<TILE_M, MM_TILE_K, MM_THREADS>(a, row0, k0, m, k, a_row_stride, a_col_stride, t,
            [&](int r, int i, const Storage* p) { a_tile[i][r] = p != nullptr ? load_as_float(p) : 0.0f; });
        stage_tile<MM_TILE_K, TILE_N, MM_THREADS>(b, k0, column0, k, n, b_row_stride, b_col_stride, t,
            [&](int i, int c, const Storage* p) { b_tile[i][c] = p != nullptr ? load_as_float(p) : 0.0f; });
        __syncthreads();
        const int steps = min(MM_TILE_K, k - k0);  // no products past k: the sum is matmul.cu's
        add_tile_products(acc, a_tile, b_tile, steps, tx, ty);
        __syncthreads();
    }

    for (int r = 0; r < THREAD_M; ++r) {
        const int row = row0 + ty + 16 * r;
        if (row >= m) continue;
        for (int q = 0; q < THREAD_N; ++q) {
            const int column = column0 + tx + 16 * q;
            if (column >= n) continue;
            const float sum = acc[r][q];
            store_matmul_output(c, row, column, n, bias != nullptr ? sum + load_as_float(bias + column) : sum, act_min, act_max);
        }
    }
}

// ---- entry points: matmul_bias_act_tiled_<TILE_M>x<TILE_N>_<storage> --------------------------------

extern "C" __global__ void matmul_bias_act_tiled_64x64_f32(MATMUL_PARAMS(float))
{
    matmul_bias_activation_tiled<float, 64, 64>(MATMUL_ARGS);
}

extern "C" __global__ void matmul_bias_act_tiled_64x64_f16(MATMUL_PARAMS(unsigned short))
{
    matmul_bias_activation_tiled<unsigned short, 64, 64>(MATMUL_ARGS);
}

extern "C" __global__ void matmul_bias_act_tiled_32x32_f32(MATMUL_PARAMS(float))
{
    matmul_bias_activation_tiled<float, 32, 32>(MATMUL_ARGS);
}

extern "C" __global__ void matmul_bias_act_tiled_32x32_f16(MATMUL_PARAMS(unsigned short))
{
    matmul_bias_activation_tiled<unsigned short, 32, 32>(MATMUL_ARGS);
}
