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
// Launch (conv_int8.py: fully_connected_int8_launch_config; int8_windows.py:
// column_reduction_launch_config): 1-D grid over (row, tile of blockDim.x units), the tiles of a
// row consecutive; a block's threads are blockDim.x units (x, so that a warp reads consecutive
// weights: coalesced, and shares its row's values: broadcast) by blockDim.y slices of the depth
// (y, a power of two): slice s adds d = s, s + blockDim.y, ...; the slices' int32 sums are then
// added through shared memory (block_reduce.cuh). int32 addition wraps, so the split sum is the
// sequential one bit for bit. So a product of several rows, or of one row and several tiles of
// units, runs on several blocks, and a deep row on several threads.
//
// This file must compile with NVRTC (no system headers; the .cuh headers are spliced in) and
// with g++ through host_shim/cuda_host.h in its cooperative mode (__shared__, __syncthreads).

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#include "fixed_point.cuh"   // rescale_double, wrapping int32 arithmetic
#include "block_reduce.cuh"  // block_combine: the slices' sums added through shared memory

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
    __shared__ int partial[REDUCTION_THREADS];
    const int tiles = (units + blockDim.x - 1) / blockDim.x;
    const long long row = blockIdx.x / tiles;
    const int unit = (int)(blockIdx.x % tiles) * blockDim.x + threadIdx.x;
    const bool valid = unit < units && row < rows;

    int acc = 0;
    if (valid) {
        const T* values = x + row * depth;
        for (int d = threadIdx.y; d < depth; d += blockDim.y) {
            const int w = (int)weights[(long long)d * units + unit] + filter_offset;
            acc = wrapping_add(acc, wrapping_mul(w, (int)values[d] + input_offset));
        }
    }
    acc = block_combine<false>(partial, acc, WrappingSum());  // every thread: it holds barriers
    if (!valid || threadIdx.y != 0) return;
    const int b = bias != nullptr ? bias[unit] : 0;
    out[row * units + unit] = (T)rescale_double(wrapping_add(acc, b), scales[unit], output_offset, act_min, act_max);
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
