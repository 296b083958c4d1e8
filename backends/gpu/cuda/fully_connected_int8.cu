// FULLY_CONNECTED on int8 / uint8 tensors (versions 1, 4-6: uint8 per tensor, int8 per tensor or
// per channel, keep_num_dims, no bias slot), the whole node in one kernel: TFLite's reference
// integer FullyConnected as the LiteRT we match builds it, which rescales in double (no
// MultiplyByQuantizedMultiplier), as the CPU kernel does (fully_connected_quantized.rescale_double):
//
//   acc[r, u] = sum_d (weights[d, u] + filter_offset) * (x[r, d] + input_offset) + bias[u]     (int32)
//   out[r, u] = clamp(int32(round(double(acc[r, u]) * scales[u])) + output_offset, act_min, act_max)
//
// Shapes: x [rows, depth], weights [depth, units] (TFLite's [units, depth] transposed once at
// prepare), bias int32 [units] or a null pointer, scales double [units] (double(s_in) * s_w[u] /
// double(s_out), one per unit even for per-tensor weights), out [rows, units]. input_offset =
// -z_in, filter_offset = -z_w (0 for per-channel weights, whose zero points TFLite ignores),
// output_offset = z_out, [act_min, act_max] the fused activation's quantized clamp: all from the
// host (the CPU kernel's own helpers). The accumulator is int32 and wraps as TFLite's; a rounded
// value outside int32 becomes INT32_MIN as on x86 (fixed_point.cuh: rescale_double).
//
// Launch (conv_int8.py: fully_connected_int8_launch_config): as matmul.cu's matmul_bias_act,
// columns (units) along x, groups of MATMUL_ROWS rows along y: a warp's threads read consecutive
// weights (coalesced) and share the row values (one broadcast load). Rows past the end read the
// last row (valid memory) and are not stored.
//
// This file must compile with NVRTC (no system headers; fixed_point.cuh is spliced in) and with
// g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define MATMUL_ROWS 4

#include "fixed_point.cuh"  // rescale_double, wrapping int32 arithmetic

template <typename T>
__device__ __forceinline__ void fully_connected_quantized(
    const T* __restrict__ x,
    const T* __restrict__ weights,
    const int* __restrict__ bias,  // may be null
    const double* __restrict__ scales,
    T* __restrict__ out,
    int rows, int units, int depth,
    int input_offset, int filter_offset, int output_offset, int act_min, int act_max)
{
    const int unit = blockIdx.x * blockDim.x + threadIdx.x;
    const int first_row = (blockIdx.y * blockDim.y + threadIdx.y) * MATMUL_ROWS;
    if (unit >= units || first_row >= rows) return;

    const T* row[MATMUL_ROWS];
    for (int r = 0; r < MATMUL_ROWS; ++r) {
        row[r] = x + (long long)min(first_row + r, rows - 1) * depth;
    }
    int acc[MATMUL_ROWS];
    for (int r = 0; r < MATMUL_ROWS; ++r) acc[r] = 0;
    for (int d = 0; d < depth; ++d) {
        const int w = (int)weights[(long long)d * units + unit] + filter_offset;
        for (int r = 0; r < MATMUL_ROWS; ++r) {
            acc[r] = wrapping_add(acc[r], wrapping_mul(w, (int)row[r][d] + input_offset));
        }
    }
    const int b = bias != nullptr ? bias[unit] : 0;
    const double scale = scales[unit];
    for (int r = 0; r < MATMUL_ROWS && first_row + r < rows; ++r) {
        const int value = rescale_double(wrapping_add(acc[r], b), scale, output_offset, act_min, act_max);
        out[(long long)(first_row + r) * units + unit] = (T)value;
    }
}

// ---- entry points ---------------------------------------------------------------------------
// Arguments: int32 scalars as declared (conv_int8.py: fully_connected_int8_args).

extern "C" __global__ void fully_connected_int8(
    const signed char* __restrict__ x, const signed char* __restrict__ weights, const int* __restrict__ bias,
    const double* __restrict__ scales, signed char* __restrict__ out, int rows, int units, int depth,
    int input_offset, int filter_offset, int output_offset, int act_min, int act_max)
{
    fully_connected_quantized<signed char>(
        x, weights, bias, scales, out, rows, units, depth, input_offset, filter_offset, output_offset, act_min, act_max);
}

extern "C" __global__ void fully_connected_uint8(
    const unsigned char* __restrict__ x, const unsigned char* __restrict__ weights, const int* __restrict__ bias,
    const double* __restrict__ scales, unsigned char* __restrict__ out, int rows, int units, int depth,
    int input_offset, int filter_offset, int output_offset, int act_min, int act_max)
{
    fully_connected_quantized<unsigned char>(
        x, weights, bias, scales, out, rows, units, depth, input_offset, filter_offset, output_offset, act_min, act_max);
}
