// The matrix product with its output stage (FULLY_CONNECTED, BATCH_MATMUL) in float16 storage on
// tensor cores: matmul_tiled.cu's tiles with the products done by mma.sync.aligned.m16n8k16 (half
// inputs, float32 accumulation), for the delegate's float16 precision on sm_80 and newer
// (matmul.py: a row of MATMUL_TACTICS). Same arguments as matmul.cu's matmul_bias_act_f16:
//
//   c[z, r, j] = clamp(bias[j] + sum_{i < k} a(z, r, i) * b(z, i, j), act_min, act_max)
//   a(z, r, i) = a[z * a_batch_stride + r * a_row_stride + i * a_col_stride]   (b likewise)
//
// Launch (matmul.py: matmul_tiled_launch_config, tile 64 x 64): blocks of 256 threads (8 warps); grid.x = tiles of
// 64 columns, grid.y = tiles of 64 rows, grid.z = the batch. Per step of 16 values of i the block
// stages a 64 x 16 tile of a and a 16 x 64 tile of b (binary16 bits, 0 past the ends) in __shared__
// memory; each warp multiplies its 16 rows (warp % 4) by its 32 columns (warp / 4). Numerics and
// the host shim's emulation of the instruction as in conv2d_mma.cu. This file must compile with
// NVRTC and with g++ through host_shim/cuda_host.h in its cooperative mode.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns
#include "matmul.cuh"   // MATMUL_PARAMS / MATMUL_ARGS, store_matmul_output, the tile loaders (matmul_tiled.cu's)
#include "mma.cuh"      // MmaShape, mma_lane, load_mma_fragments, mma_m16n8k16 (mma.sync; emulated by the host shim)

#define MM_MMA_TILE 64  // rows and columns of c per block

extern "C" __global__ void matmul_bias_act_mma_f16(MATMUL_PARAMS(unsigned short))
{
    constexpr int PRODUCTS = MmaShape<MM_MMA_TILE, MM_MMA_TILE>::PRODUCTS;  // 4: each warp 16 rows x 32 columns
    __shared__ unsigned short a_tile[MM_MMA_TILE][MMA_TILE_K + 8];  // [row][i]
    __shared__ unsigned short b_tile[MMA_TILE_K][MM_MMA_TILE + 8];  // [i][column]

    const int t = threadIdx.x;
    const int row0 = blockIdx.y * MM_MMA_TILE, column0 = blockIdx.x * MM_MMA_TILE;
    a += blockIdx.z * a_batch_stride;
    b += blockIdx.z * b_batch_stride;
    c += blockIdx.z * c_batch_stride;
    const MmaLane lane = mma_lane<MM_MMA_TILE, MM_MMA_TILE>(t);
    float acc[PRODUCTS][4];
    mma_clear<PRODUCTS>(acc);

    for (int k0 = 0; k0 < k; k0 += MMA_TILE_K) {
        stage_tile<MM_MMA_TILE, MMA_TILE_K, MMA_THREADS>(a, row0, k0, m, k, a_row_stride, a_col_stride, t,
            [&](int r, int i, const unsigned short* p) { a_tile[r][i] = p != nullptr ? *p : (unsigned short)0; });
        stage_tile<MMA_TILE_K, MM_MMA_TILE, MMA_THREADS>(b, k0, column0, k, n, b_row_stride, b_col_stride, t,
            [&](int i, int c, const unsigned short* p) { b_tile[i][c] = p != nullptr ? *p : (unsigned short)0; });
        __syncthreads();
        unsigned int a_fragment[4], b_fragment[PRODUCTS][2];
        load_mma_fragments<PRODUCTS>(a_tile, b_tile, lane, a_fragment, b_fragment);
        mma_m16n8k16<PRODUCTS>(acc, a_fragment, b_fragment);
        __syncthreads();  // the tiles are overwritten by the next step
    }

    for (int j = 0; j < PRODUCTS; ++j) {
        for (int i = 0; i < 4; ++i) {
            const int row = mma_row(row0, lane, i);
            const int column = mma_column(column0, lane, j, i);
            if (row >= m || column >= n) continue;
            const float sum = acc[j][i];
            store_matmul_output(c, row, column, n, bias != nullptr ? sum + load_as_float(bias + column) : sum, act_min, act_max);
        }
    }
}
