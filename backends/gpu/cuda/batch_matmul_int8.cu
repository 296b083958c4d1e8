// BATCH_MATMUL on int8 tensors (version 2: int8 x int8 -> int8, per tensor), the whole node in
// one kernel: TFLite's reference BatchMatMul, as the CPU kernel computes it
// (backends/cpu/kernels/batch_matmul_quantized.py):
//
//   acc[z, r, j] = sum_{i < k} (a(z, r, i) + input_offset) * (b(z, i, j) + filter_offset)      (int32)
//   c[z, r, j]   = clamp(MultiplyByQuantizedMultiplier(acc, multiplier, shift) + output_offset, act_min, act_max)
//   a(z, r, i) = a[z * a_batch_stride + r * a_row_stride + i * a_col_stride]   (b likewise)
//
// with input_offset = -z_x, filter_offset = -z_y, output_offset = z_out, one multiplier and
// shift (QuantizeMultiplier of double(float(s_x * s_y)) / s_out) and the int8 range as the clamp
// (BATCH_MATMUL has no fused activation): all from the host. The accumulator is int32 and wraps
// as TFLite's. Element strides let an operand enter transposed (adj_x / adj_y) or shared by every
// batch (batch stride 0) without a copy, as matmul.cu's matmul_bias_act; the threads are laid out
// as there (columns along x, groups of MATMUL_ROWS rows along y, batches along z). The
// arithmetic is fixed_point.cuh's.
//
// This file must compile with NVRTC (no system headers; fixed_point.cuh is spliced in) and with
// g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define MATMUL_ROWS 4

#include "fixed_point.cuh"  // multiply_by_quantized_multiplier, wrapping int32 arithmetic, clamp_int

extern "C" __global__ void batch_matmul_int8(
    const signed char* __restrict__ a, const signed char* __restrict__ b, signed char* __restrict__ c,
    int m, int n, int k,
    long long a_batch_stride, long long a_row_stride, long long a_col_stride,
    long long b_batch_stride, long long b_row_stride, long long b_col_stride,
    long long c_batch_stride,
    int input_offset, int filter_offset, int multiplier, int shift, int output_offset, int act_min, int act_max)
{
    const int column = blockIdx.x * blockDim.x + threadIdx.x;
    const int first_row = (blockIdx.y * blockDim.y + threadIdx.y) * MATMUL_ROWS;
    if (column >= n || first_row >= m) return;
    a += blockIdx.z * a_batch_stride;
    b += blockIdx.z * b_batch_stride + column * b_col_stride;
    c += blockIdx.z * c_batch_stride;
    // Rows past the end read the last row (valid memory) and are not stored.
    const signed char* rows[MATMUL_ROWS];
    for (int r = 0; r < MATMUL_ROWS; ++r) {
        rows[r] = a + (long long)min(first_row + r, m - 1) * a_row_stride;
    }
    int acc[MATMUL_ROWS];
    for (int r = 0; r < MATMUL_ROWS; ++r) acc[r] = 0;
    for (int i = 0; i < k; ++i) {
        const int value = (int)b[i * b_row_stride] + filter_offset;
        for (int r = 0; r < MATMUL_ROWS; ++r) {
            acc[r] = wrapping_add(acc[r], wrapping_mul((int)rows[r][i * a_col_stride] + input_offset, value));
        }
    }
    for (int r = 0; r < MATMUL_ROWS && first_row + r < m; ++r) {
        const int scaled = multiply_by_quantized_multiplier(acc[r], multiplier, shift);
        c[(long long)(first_row + r) * n + column] = (signed char)clamp_int(scaled + output_offset, act_min, act_max);
    }
}
