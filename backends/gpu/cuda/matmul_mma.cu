// The matrix product with its output stage (FULLY_CONNECTED, BATCH_MATMUL) in float16 storage on
// tensor cores: matmul_tiled.cu's tiles with the products done by mma.sync.aligned.m16n8k16 (half
// inputs, float32 accumulation), for the delegate's float16 precision on sm_80 and newer
// (conv2d.py: matmul_variant). Same arguments as matmul.cu's matmul_bias_act_f16:
//
//   c[z, r, j] = clamp(bias[j] + sum_{i < k} a(z, r, i) * b(z, i, j), act_min, act_max)
//   a(z, r, i) = a[z * a_batch_stride + r * a_row_stride + i * a_col_stride]   (b likewise)
//
// Launch (conv2d.py: matmul_tiled_launch_config): blocks of 256 threads (8 warps); grid.x = tiles of
// 64 columns, grid.y = tiles of 64 rows, grid.z = the batch. Per step of 16 values of i the block
// stages a 64 x 16 tile of a and a 16 x 64 tile of b (binary16 bits, 0 past the ends) in __shared__
// memory; each warp multiplies its 16 rows (warp % 4) by its 32 columns (warp / 4). Numerics and
// the host shim's emulation of the instruction as in conv2d_mma.cu. This file must compile with
// NVRTC and with g++ through host_shim/cuda_host.h in its cooperative mode.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define MMA_TILE 64
#define MMA_TILE_K 16
#define MMA_THREADS 256
#define MMA_WARPS (MMA_THREADS / 32)

#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns

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

extern "C" __global__ void matmul_bias_act_mma_f16(
    const unsigned short* __restrict__ a, const unsigned short* __restrict__ b,
    const unsigned short* __restrict__ bias, unsigned short* __restrict__ c, int m, int n, int k,
    long long a_batch_stride, long long a_row_stride, long long a_col_stride,
    long long b_batch_stride, long long b_row_stride, long long b_col_stride,
    long long c_batch_stride, float act_min, float act_max)
{
    constexpr int A_ROWS = MMA_THREADS / MMA_TILE_K;  // 16 rows staged per pass
    constexpr int A_LOADS = MMA_TILE / A_ROWS;        // 4
    constexpr int B_ROWS = MMA_THREADS / MMA_TILE;    // 4 k rows staged per pass
    constexpr int B_LOADS = MMA_TILE_K / B_ROWS;      // 4
    __shared__ unsigned short a_tile[MMA_TILE][MMA_TILE_K + 8];  // [row][i]
    __shared__ unsigned short b_tile[MMA_TILE_K][MMA_TILE + 8];  // [i][column]

    const int t = threadIdx.x;
    const int row0 = blockIdx.y * MMA_TILE, column0 = blockIdx.x * MMA_TILE;
    a += blockIdx.z * a_batch_stride;
    b += blockIdx.z * b_batch_stride;
    c += blockIdx.z * c_batch_stride;
    const int warp = t / 32, lane = t % 32;
    const int lane_group = lane / 4, lane_t = lane % 4;
    const int warp_m = (warp % 4) * 16, warp_n = (warp / 4) * 32;
    float acc[4][4];
    for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) acc[j][i] = 0.0f;

    for (int k0 = 0; k0 < k; k0 += MMA_TILE_K) {
        for (int j = 0; j < A_LOADS; ++j) {
            const int i = k0 + t % MMA_TILE_K;
            const int row = row0 + t / MMA_TILE_K + j * A_ROWS;
            a_tile[t / MMA_TILE_K + j * A_ROWS][t % MMA_TILE_K] =
                (i < k && row < m) ? a[row * a_row_stride + i * a_col_stride] : (unsigned short)0;
        }
        for (int j = 0; j < B_LOADS; ++j) {
            const int i_local = t / MMA_TILE + j * B_ROWS;
            const int i = k0 + i_local;
            const int column = column0 + t % MMA_TILE;
            b_tile[i_local][t % MMA_TILE] =
                (i < k && column < n) ? b[i * b_row_stride + column * b_col_stride] : (unsigned short)0;
        }
        __syncthreads();
        unsigned int fa[4];
        fa[0] = pack_halves(a_tile[warp_m + lane_group][2 * lane_t], a_tile[warp_m + lane_group][2 * lane_t + 1]);
        fa[1] = pack_halves(a_tile[warp_m + lane_group + 8][2 * lane_t], a_tile[warp_m + lane_group + 8][2 * lane_t + 1]);
        fa[2] = pack_halves(a_tile[warp_m + lane_group][2 * lane_t + 8], a_tile[warp_m + lane_group][2 * lane_t + 9]);
        fa[3] = pack_halves(a_tile[warp_m + lane_group + 8][2 * lane_t + 8], a_tile[warp_m + lane_group + 8][2 * lane_t + 9]);
        unsigned int fb[4][2];
        for (int j = 0; j < 4; ++j) {
            const int column = warp_n + j * 8 + lane_group;
            fb[j][0] = pack_halves(b_tile[2 * lane_t][column], b_tile[2 * lane_t + 1][column]);
            fb[j][1] = pack_halves(b_tile[2 * lane_t + 8][column], b_tile[2 * lane_t + 9][column]);
        }
        mma_m16n32k16(acc, fa, fb);
        __syncthreads();  // the tiles are overwritten by the next step
    }

    for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 4; ++i) {
            const int row = row0 + warp_m + lane_group + (i >= 2 ? 8 : 0);
            const int column = column0 + warp_n + j * 8 + 2 * lane_t + (i & 1);
            if (row >= m || column >= n) continue;
            float result = bias != nullptr ? acc[j][i] + load_as_float(bias + column) : acc[j][i];
            // TFLite's ActivationFunctionWithMinMax: NaN propagates (fmaxf/fminf would drop it).
            result = result < act_min ? act_min : result;
            result = result > act_max ? act_max : result;
            store_from_float(c + (long long)row * n + column, result);
        }
    }
}
