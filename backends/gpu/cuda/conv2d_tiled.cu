// CONV_2D, versions 1 and 6 (float; v6: grouped), NHWC, as an implicit GEMM with shared-memory
// tiles: the tiled variant of conv2d.cu, in several tile shapes (TILE_M output pixels x TILE_N
// output channels per block), each a row of conv2d.py's CONV2D_TACTICS (chosen at prepare by
// measuring them: backends/gpu/tactics.py).
//
// Per group g the convolution is the product C[m, n] = sum_k A[m, k] * B[k, n]:
//   m = output pixel (b, oy, ox)               M = batches * out_h * out_w
//   n = output channel within the group        N = O
//   k = (ky * filter_w + kx) * I + i           K = filter_h * filter_w * I   (TFLite's (ky, kx, i) order)
//   A[m, k] = input[b, oy * stride_h + ky * dilation_h - pad_top, ox * stride_w + kx * dilation_w - pad_left, g * I + i]
//             (0 where the tap falls outside the input)
//   B[k, n] = filter[g, ky, kx, i, n]          (conv2d.cu's [groups, KH, KW, I, O] layout: B is [K, O], row-major)
// A is never materialised ("implicit"): each tile of it is gathered from the input.
//
// Launch (conv2d.py: conv2d_tiled_launch_config): blocks of 256 threads; grid.x = ceil(M / TILE_M)
// pixel tiles, grid.y = groups * ceil(O / TILE_N) channel tiles. Each block computes a
// TILE_M x TILE_N tile of outputs: per step of TILE_K values of k, its threads stage the A tile
// (TILE_K x TILE_M, gathered; consecutive threads read consecutive input channels of a pixel)
// and the B tile (TILE_K x TILE_N, consecutive threads consecutive filter values) into __shared__
// memory, synchronise, and each thread adds the step's products to its register block of
// (TILE_M / 16) x (TILE_N / 16) outputs: pixels ty + 16 r, channels tx + 16 c (tx = thread % 16,
// ty = thread / 16), so that a warp reads two A values (broadcast) and 16 consecutive B values.
// Each input value staged feeds TILE_N sums, each filter value TILE_M sums.
//
// Order of the sums: each output accumulates in one thread, k = 0, 1, ..., K - 1 in order, as
// float32 fused multiply-adds (no split of K): the order of conv2d.cu's direct kernel and of
// TFLite's reference loop. A tap outside the input adds fmaf(0, w, acc), which is acc itself for a
// finite w (but for the sign of a zero acc: -0 + 0 is +0), so the results equal the direct
// kernel's; the rows of this kernel apply only to a finite filter (0 * inf would be NaN where
// the direct kernel skips the tap). Then the bias, the clamp and the fused epilogue (epilogue.cuh),
// as conv2d.cu.
//
// Storage: float32 (*_f32) or float16 (*_f16, binary16 bit patterns): tiles hold float32, products
// and sums are float32. This file must compile with NVRTC (no system headers; storage.cuh,
// epilogue.cuh and conv2d_gemm.cuh are spliced in) and with g++ through host_shim/cuda_host.h, in
// its cooperative mode (__shared__, __syncthreads).

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define CONV2D_TILE_K 16
#define CONV2D_TILE_THREADS 256

#include "storage.cuh"         // load_as_float / store_from_float for float and float16 bit patterns
#include "epilogue.cuh"        // store_conv_output: bias, clamp, the fused residual ADD / PRELU / RELU
#include "conv2d_window.cuh"   // locate_pixel, tap_input: where a pixel's windows sit, as in the direct kernels
#include "conv2d_gemm.cuh"     // the implicit GEMM's gather (taps), shared with conv2d_mma.cu
#include "matmul.cuh"          // stage_tile: the filter tile, as matmul_tiled.cu's b tiles
#include "tiled_products.cuh"  // add_tile_products: the register-blocked step, shared with matmul_tiled.cu

template <typename Storage, int TILE_M, int TILE_N>
__device__ __forceinline__ void conv2d_tiled_nhwc(CONV2D_GEMM_BODY_PARAMS(Storage))  // bias may be null
{
    constexpr int THREAD_M = TILE_M / 16;                                     // outputs per thread: pixels
    constexpr int THREAD_N = TILE_N / 16;                                     //   x channels
    constexpr int A_ROWS = CONV2D_TILE_THREADS / CONV2D_TILE_K;               // pixels staged per pass
    constexpr int A_LOADS = TILE_M / A_ROWS;                                  // A values a thread stages
    __shared__ float a_tile[CONV2D_TILE_K][TILE_M + 1];  // A transposed: [k][pixel] (+1: fewer bank conflicts on store)
    __shared__ float b_tile[CONV2D_TILE_K][TILE_N];

    const int t = threadIdx.x;
    const int group_in = in_channels / groups;    // I
    const int group_out = out_channels / groups;  // O
    const int channel_tiles = (group_out + TILE_N - 1) / TILE_N;
    const int g = blockIdx.y / channel_tiles;
    const int n0 = (blockIdx.y % channel_tiles) * TILE_N;
    const long long m0 = (long long)blockIdx.x * TILE_M;
    const long long pixels = (long long)batches * out_h * out_w;
    const int depth = filter_h * filter_w * group_in;  // K
    const Storage* group_input = input + g * group_in;
    const Storage* group_filter = filter + (long long)g * depth * group_out;

    // The pixels this thread stages (A_LOADS of them, A_ROWS apart) at column a_k of the step.
    const int a_k = t % CONV2D_TILE_K;
    GatherPixel a_pixels[A_LOADS];
    locate_pixels<A_LOADS, A_ROWS>(
        a_pixels, m0 + t / CONV2D_TILE_K, pixels, in_h, in_w, in_channels, out_h, out_w, stride_h, stride_w, pad_top, pad_left);

    const int tx = t % 16, ty = t / 16;
    float acc[THREAD_M][THREAD_N];
    for (int r = 0; r < THREAD_M; ++r)
        for (int c = 0; c < THREAD_N; ++c) acc[r][c] = 0.0f;

    for (int k0 = 0; k0 < depth; k0 += CONV2D_TILE_K) {
        // Stage A: value k0 + a_k of each of this thread's pixels (0 outside the input).
        const GemmTap tap = gemm_tap(k0 + a_k, depth, group_in, filter_w);
        for (int j = 0; j < A_LOADS; ++j) {
            const Storage* at;
            const bool inside = gather_at(group_input, a_pixels[j], tap, in_h, in_w, in_channels, dilation_h, dilation_w, at);
            a_tile[a_k][t / CONV2D_TILE_K + j * A_ROWS] = inside ? load_as_float(at) : 0.0f;
        }
        // Stage B: rows k0 .. k0 + TILE_K of the group's [K, O] filter, columns n0 .. n0 + TILE_N
        // (matmul.cuh's loader of matmul_tiled.cu's b tiles).
        stage_tile<CONV2D_TILE_K, TILE_N, CONV2D_TILE_THREADS>(group_filter, k0, n0, depth, group_out, group_out, 1, t,
            [&](int row, int n, const Storage* p) { b_tile[row][n] = p != nullptr ? load_as_float(p) : 0.0f; });
        __syncthreads();
        const int steps = min(CONV2D_TILE_K, depth - k0);  // no products past K: the sum is the direct one
        add_tile_products(acc, a_tile, b_tile, steps, tx, ty);
        __syncthreads();  // the tiles are overwritten by the next step
    }

    // Epilogue: bias, clamp, fused nodes. Unrolled, so that acc[r][c] stays in registers (a loop
    // left rolled would index the accumulators at run time: through local memory).
#pragma unroll
    for (int r = 0; r < THREAD_M; ++r) {
        const long long pixel = m0 + ty + 16 * r;
        if (pixel >= pixels) continue;
#pragma unroll
        for (int c = 0; c < THREAD_N; ++c) {
            const int n = n0 + tx + 16 * c;
            if (n >= group_out) continue;
            const int oc = g * group_out + n;
            store_conv_output(output, bias, acc[r][c], pixel, oc, out_channels, act_min, act_max, epilogue);
        }
    }
}

// ---- entry points: conv2d_tiled_<TILE_M>x<TILE_N>_<storage> --------------------------------------
// Arguments: conv2d.cu's conv2d_fused_* (CONV2D_GEMM_PARAMS, conv2d_gemm.cuh).

extern "C" __global__ void conv2d_tiled_64x64_f32(CONV2D_GEMM_PARAMS(float)) {
    conv2d_tiled_nhwc<float, 64, 64>(CONV2D_GEMM_ARGS);
}

extern "C" __global__ void conv2d_tiled_64x64_f16(CONV2D_GEMM_PARAMS(unsigned short)) {
    conv2d_tiled_nhwc<unsigned short, 64, 64>(CONV2D_GEMM_ARGS);
}

extern "C" __global__ void conv2d_tiled_128x32_f32(CONV2D_GEMM_PARAMS(float)) {
    conv2d_tiled_nhwc<float, 128, 32>(CONV2D_GEMM_ARGS);
}

extern "C" __global__ void conv2d_tiled_128x32_f16(CONV2D_GEMM_PARAMS(unsigned short)) {
    conv2d_tiled_nhwc<unsigned short, 128, 32>(CONV2D_GEMM_ARGS);
}

// Smaller tiles, for the layers whose 64 x 64 or 128 x 32 tiles would leave most of the GPU idle
// at batch 1 (as many blocks as conv2d.cu's direct kernel, or more: conv2d.py's fill rule), and
// for thin layers (16 or 8 output channels per group: conv2d.py's fit rule).

extern "C" __global__ void conv2d_tiled_32x32_f32(CONV2D_GEMM_PARAMS(float)) {
    conv2d_tiled_nhwc<float, 32, 32>(CONV2D_GEMM_ARGS);
}

extern "C" __global__ void conv2d_tiled_32x32_f16(CONV2D_GEMM_PARAMS(unsigned short)) {
    conv2d_tiled_nhwc<unsigned short, 32, 32>(CONV2D_GEMM_ARGS);
}

extern "C" __global__ void conv2d_tiled_64x16_f32(CONV2D_GEMM_PARAMS(float)) {
    conv2d_tiled_nhwc<float, 64, 16>(CONV2D_GEMM_ARGS);
}

extern "C" __global__ void conv2d_tiled_64x16_f16(CONV2D_GEMM_PARAMS(unsigned short)) {
    conv2d_tiled_nhwc<unsigned short, 64, 16>(CONV2D_GEMM_ARGS);
}

extern "C" __global__ void conv2d_tiled_32x16_f32(CONV2D_GEMM_PARAMS(float)) {
    conv2d_tiled_nhwc<float, 32, 16>(CONV2D_GEMM_ARGS);
}

extern "C" __global__ void conv2d_tiled_32x16_f16(CONV2D_GEMM_PARAMS(unsigned short)) {
    conv2d_tiled_nhwc<unsigned short, 32, 16>(CONV2D_GEMM_ARGS);
}
