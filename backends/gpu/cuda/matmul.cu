// The matrix product of the float matmul-based ops, row-major, optionally batched, with
// the output stage fused. It exists because CuPy refuses any cuBLAS call while a stream is
// being captured into a CUDA graph ("calling cuBLAS API during stream capture is currently
// unsupported", cupy_backends/cuda/libs/cublas.pyx: setStream), and the delegate replays
// every partition as a graph. The same kernel runs eagerly too, so graphs on and off give
// the same bits. (The quantized products are the int8 kernels' own: conv2d_int8.cu,
// fully_connected_int8.cu, batch_matmul_int8.cu.)
//
// One thread computes MATMUL_ROWS consecutive rows of one column: a warp's 32 threads take
// 32 consecutive columns, so b is read coalesced and a is broadcast; each b value read is
// used MATMUL_ROWS times. The sum runs over i in order with fused multiply-adds (the
// products of TFLite's reference loop, in its order). No shared memory (matmul_tiled.cu is
// the tiled variant for larger products).
//
// matmul_bias_act_f32 / _f16, for
// FULLY_CONNECTED (bias and activation), BATCH_MATMUL (neither) and the patches product of
// TRANSPOSE_CONV, in one launch; float32 or float16 storage (binary16 bit patterns, as in
// depthwise_conv2d.cu), float32 products and sums:
//
//   c[z, r, j] = clamp(bias[j] + sum_{i < k} a(z, r, i) * b(z, i, j), act_min, act_max)
//   a(z, r, i) = a[z * a_batch_stride + r * a_row_stride + i * a_col_stride]   (b likewise)
//
// Element strides let an operand enter transposed without a copy (BATCH_MATMUL's adj_x /
// adj_y); bias may be null; [act_min, act_max] is the activation's range (-inf..inf: no
// clamp), applied as TFLite's ActivationFunctionWithMinMax so that NaN propagates. The
// threads are laid out with columns along x, groups of MATMUL_ROWS rows along y and
// batches along z; blockDim may be (256, 1, 1) for a product of a few rows.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define MATMUL_ROWS 4

// ---- storage types ---------------------------------------------------------------------------
#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns
#include "matmul.cuh"   // MATMUL_PARAMS / MATMUL_ARGS, store_matmul_output

// ---- the product with the fused output stage --------------------------------------------------

template <typename Storage>
__device__ __forceinline__ void matmul_bias_activation(MATMUL_PARAMS(Storage))
{
    const int column = blockIdx.x * blockDim.x + threadIdx.x;
    const int first_row = (blockIdx.y * blockDim.y + threadIdx.y) * MATMUL_ROWS;
    if (column >= n || first_row >= m) return;
    a += blockIdx.z * a_batch_stride;
    b += blockIdx.z * b_batch_stride + column * b_col_stride;
    c += blockIdx.z * c_batch_stride;
    // Rows past the end read the last row (valid memory) and are not stored.
    const Storage* rows[MATMUL_ROWS];
    for (int r = 0; r < MATMUL_ROWS; ++r) {
        rows[r] = a + (long long)min(first_row + r, m - 1) * a_row_stride;
    }
    float sums[MATMUL_ROWS];
    for (int r = 0; r < MATMUL_ROWS; ++r) sums[r] = 0.0f;
    for (int i = 0; i < k; ++i) {
        const float value = load_as_float(b + i * b_row_stride);
        for (int r = 0; r < MATMUL_ROWS; ++r) {
            sums[r] = fmaf(load_as_float(rows[r] + i * a_col_stride), value, sums[r]);
        }
    }
    const float shift = bias != nullptr ? load_as_float(bias + column) : 0.0f;
    for (int r = 0; r < MATMUL_ROWS && first_row + r < m; ++r) {
        store_matmul_output(c, first_row + r, column, n, bias != nullptr ? sums[r] + shift : sums[r], act_min, act_max);
    }
}

extern "C" __global__ void matmul_bias_act_f32(MATMUL_PARAMS(float))
{
    matmul_bias_activation<float>(MATMUL_ARGS);
}

// float16 storage: a, b, bias and c hold binary16 bit patterns; products and sums are float32.
extern "C" __global__ void matmul_bias_act_f16(MATMUL_PARAMS(unsigned short))
{
    matmul_bias_activation<unsigned short>(MATMUL_ARGS);
}
