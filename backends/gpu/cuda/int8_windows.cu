// Quantized (int8 / uint8) row and reduction ops, one launch per node, bit-exact with TFLite's
// reference kernels (the CPU kernels: backends/cpu/kernels/reduce_quantized.py,
// softmax_quantized.py). (The quantized pools are in pool2d.cu: they need no shared memory,
// and the host shim runs a file without it block by block, not one thread per GPU thread.)
//
// MEAN over constant axes (quantized_mean_*): the input seen as [d0, d1, d2, d3] (the host
// left-pads the shape with 1s), reduce_k 1 for a reduced axis; the outputs are the kept
// coordinates in row-major order (keep_dims or not; pooling.cuh), TFLite's QuantizedMeanOrSum:
//   sum = the int32 sum of the reduced elements (wrapping as TFLite's temp_sum)
//   out = clamp(M(int32(sum - zero_sum), multiplier, shift) + out_zero_point, low, high)
// with zero_sum = z_in * count and (multiplier, shift) with 1/count folded in, from the host
// (reduce_quantized.folded_multiplier).
//
// SOFTMAX (quantized_softmax_<in>_<out>), a row of the last axis per blockDim.x threads, gemmlowp's
// fixed point as TFLite's reference (with the CPU kernel's tables, computed at prepare):
//   d = q - max(row) in [-in_range, 0]; exp[d + in_range] (Q0.31), accumulated[...] (Q12.19)
//   sum = the int32 (wrapping) sum over the row of accumulated[d + in_range]
//   (r, n) = GetReciprocal(sum, 12); exponent = clamp(n + exponent_offset, 0, 31)
//   out = min(RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(r, exp[...]), exponent)
//             + out_min, out_max)
// (TFLite aborts where the exponent leaves [0, 31]: 512 or more values near the row's max;
// the clamp keeps such rows defined, as the GPU op's docstring says.)
//
// Launch (int8_windows.py):
// - MEAN (column_reduction_launch_config): output blockIdx.x * blockDim.x + threadIdx.x, its
//   reduced elements split over the blockDim.y threads of its column (a power of two), whose
//   int32 sums are added through shared memory (block_reduce.cuh);
// - SOFTMAX (row_reduction_launch_config): row blockIdx.x * blockDim.y + threadIdx.y, its values
//   split over the blockDim.x threads of its row (a power of two), which combine the row's max
//   and sum through shared memory, then each writes its own values.
// The maxima and the wrapping int32 sums do not depend on how they are split: the results are
// the sequential loops', bit for bit. So a MEAN of more than one output, or a SOFTMAX of more
// than one row, runs on more than one block.
// This file must compile with NVRTC (no system headers; the .cuh headers are spliced in) and
// with g++ through host_shim/cuda_host.h in its cooperative mode (__shared__, __syncthreads).

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#include "fixed_point.cuh"  // TFLite's integer requantization arithmetic
#include "pooling.cuh"  // the MEAN's walk, shared with pool2d.cu
#include "block_reduce.cuh"  // block_combine: a MEAN's or SOFTMAX row's threads' sums and maxima

// ---- MEAN -----------------------------------------------------------------------------------

template <typename Q>
__device__ __forceinline__ void quantized_mean_4d(
    const Q* __restrict__ input, Q* __restrict__ output, MEAN_AXES_PARAMS,
    long long zero_sum, int multiplier, int shift, int out_zero_point, int low, int high)
{
    __shared__ int partial[REDUCTION_THREADS];
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // the output
    const bool valid = index < mean_outputs(MEAN_AXES_ARGS);
    int sum = 0;  // wraps as TFLite's int32 temp_sum
    if (valid) {
        const auto add = [](int acc, const Q* p) { return wrapping_add(acc, (int)*p); };
        sum = mean_slice_sum(input, d1, d2, d3, mean_output(index, MEAN_AXES_ARGS), threadIdx.y, blockDim.y, 0, add);
    }
    sum = block_combine<false>(partial, sum, WrappingSum());  // every thread: it holds barriers
    if (!valid || threadIdx.y != 0) return;
    const int centered = wrap_int32((long long)sum - zero_sum);
    const int raw = multiply_by_quantized_multiplier(centered, multiplier, shift);
    output[index] = (Q)clamp_int(wrapping_add(raw, out_zero_point), low, high);
}

#define QUANTIZED_MEAN_PARAMS                                                                  \
    MEAN_AXES_PARAMS, long long zero_sum, int multiplier, int shift, int out_zero_point, int low, int high
#define QUANTIZED_MEAN_ARGS MEAN_AXES_ARGS, zero_sum, multiplier, shift, out_zero_point, low, high

extern "C" __global__ void quantized_mean_i8(
    const signed char* __restrict__ input, signed char* __restrict__ output, QUANTIZED_MEAN_PARAMS)
{
    quantized_mean_4d<signed char>(input, output, QUANTIZED_MEAN_ARGS);
}

extern "C" __global__ void quantized_mean_u8(
    const unsigned char* __restrict__ input, unsigned char* __restrict__ output, QUANTIZED_MEAN_PARAMS)
{
    quantized_mean_4d<unsigned char>(input, output, QUANTIZED_MEAN_ARGS);
}

// ---- SOFTMAX ----------------------------------------------------------------------------------

// CountLeadingZeros of a uint32 (32 for 0), portable (the host shim has no __clz).
__device__ __forceinline__ int count_leading_zeros_u32(unsigned x) {
    if (x == 0u) return 32;
    int n = 0;
    if ((x & 0xFFFF0000u) == 0u) { n += 16; x <<= 16; }
    if ((x & 0xFF000000u) == 0u) { n += 8; x <<= 8; }
    if ((x & 0xF0000000u) == 0u) { n += 4; x <<= 4; }
    if ((x & 0xC0000000u) == 0u) { n += 2; x <<= 2; }
    if ((x & 0x80000000u) == 0u) { n += 1; }
    return n;
}

// gemmlowp's one_over_one_plus_x_for_x_in_0_1: 1 / (1 + a), Q0.31 in and out (Newton-Raphson
// on the half denominator in Q2.29; backends/cpu/kernels/_fixed_point.py, step for step).
__device__ __forceinline__ int one_over_one_plus_x_for_x_in_0_1(int a) {
    const int half_denominator = rounding_half_sum(a, FP_INT32_MAX);
    const int constant_48_over_17 = 1515870810;
    const int constant_neg_32_over_17 = -1010580540;
    const int f2_one = 1 << 29;
    int x = wrapping_add(constant_48_over_17, saturating_rounding_doubling_high_mul(half_denominator, constant_neg_32_over_17));
    for (int i = 0; i < 3; ++i) {
        const int half_denominator_times_x = saturating_rounding_doubling_high_mul(half_denominator, x);
        const int one_minus_half_denominator_times_x = wrapping_sub(f2_one, half_denominator_times_x);
        // Rescale from Q4.27 to Q2.29: a saturating shift left by 2.
        x = wrapping_add(x, saturating_shift_left(saturating_rounding_doubling_high_mul(x, one_minus_half_denominator_times_x), 2));
    }
    return saturating_shift_left(x, 1);  // Q1.30 to Q0.31
}

template <typename QIn, typename QOut>
__device__ __forceinline__ void quantized_softmax_rows(
    const QIn* __restrict__ input, const int* __restrict__ exp_table, const int* __restrict__ accumulated,
    QOut* __restrict__ output, long long rows, int depth, int in_range, int exponent_offset, int out_min, int out_max)
{
    __shared__ int partial[REDUCTION_THREADS];
    const long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    const bool valid = row < rows;
    const QIn* x = input + (valid ? row : 0) * depth;
    QOut* y = output + (valid ? row : 0) * depth;

    int row_max = -2147483647 - 1;
    if (valid) {
        for (int i = threadIdx.x; i < depth; i += blockDim.x) row_max = (int)x[i] > row_max ? (int)x[i] : row_max;
    }
    row_max = block_combine<true>(partial, row_max, Maximum());  // every thread: it holds barriers
    const int offset = valid ? in_range - row_max : 0;  // the tables' index: d + in_range

    int sum = 0;  // Q12.19, wrapping as TFLite's int32 accumulator
    if (valid) {
        for (int i = threadIdx.x; i < depth; i += blockDim.x) sum = wrapping_add(sum, accumulated[(int)x[i] + offset]);
    }
    sum = block_combine<true>(partial, sum, WrappingSum());
    if (!valid) return;

    // GetReciprocal(sum, 12): sum's leading bit moved to bit 31, then 1 / (1 + fraction).
    const int headroom_plus_one = count_leading_zeros_u32((unsigned)sum);
    const int num_bits_over_unit = 12 - headroom_plus_one;
    const unsigned shifted = headroom_plus_one < 32 ? (unsigned)sum << headroom_plus_one : 0u;
    const int shifted_sum_minus_one = (int)(shifted - 0x80000000u);
    const int reciprocal = one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one);
    const int exponent = clamp_int(num_bits_over_unit + exponent_offset, 0, 31);

    for (int i = threadIdx.x; i < depth; i += blockDim.x) {
        const int scaled = saturating_rounding_doubling_high_mul(reciprocal, exp_table[(int)x[i] + offset]);
        const int value = rounding_divide_by_pot(scaled, exponent) + out_min;
        y[i] = (QOut)(value < out_max ? value : out_max);
    }
}

#define QUANTIZED_SOFTMAX_PARAMS(QIn, QOut)                                                     \
    const QIn* __restrict__ input, const int* __restrict__ exp_table,                         \
    const int* __restrict__ accumulated, QOut* __restrict__ output, long long rows,           \
    int depth, int in_range, int exponent_offset, int out_min, int out_max
#define QUANTIZED_SOFTMAX_ARGS                                                                  \
    input, exp_table, accumulated, output, rows, depth, in_range, exponent_offset, out_min, out_max

extern "C" __global__ void quantized_softmax_i8_i8(QUANTIZED_SOFTMAX_PARAMS(signed char, signed char))
{
    quantized_softmax_rows<signed char, signed char>(QUANTIZED_SOFTMAX_ARGS);
}

extern "C" __global__ void quantized_softmax_u8_u8(QUANTIZED_SOFTMAX_PARAMS(unsigned char, unsigned char))
{
    quantized_softmax_rows<unsigned char, unsigned char>(QUANTIZED_SOFTMAX_ARGS);
}

extern "C" __global__ void quantized_softmax_i8_i16(QUANTIZED_SOFTMAX_PARAMS(signed char, short))
{
    quantized_softmax_rows<signed char, short>(QUANTIZED_SOFTMAX_ARGS);
}

extern "C" __global__ void quantized_softmax_u8_i16(QUANTIZED_SOFTMAX_PARAMS(unsigned char, short))
{
    quantized_softmax_rows<unsigned char, short>(QUANTIZED_SOFTMAX_ARGS);
}
