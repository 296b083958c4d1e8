// What the quantized convolutions, CONV_2D (conv2d_int8.cu) and DEPTHWISE_CONV_2D
// (depthwise_conv2d_int8.cu), share around their window walks: their tensors and output stage as
// the kernels take them (conv_int8.py's argument lists), the quantized multiply-add of the walk,
// and TFLite's output stage:
//   acc = sum (filter + filter_offset) * (in + input_offset)          int32, wrapping
//   out = clamp(MultiplyByQuantizedMultiplier(acc + bias[oc], multipliers[oc], shifts[oc])
//               + output_offset, act_min, act_max)
// with input_offset = -z_in, filter_offset = -z_w (0 for int8), output_offset = z_out and the
// fused activation's quantized clamp, all from the host.
//
// Needs fixed_point.cuh, included before it. Each .cu that needs this says
// `#include "conv_int8.cuh"`; sources.read_source splices this text in there.

#ifndef LITEDELEGATE_CONV_INT8_CUH
#define LITEDELEGATE_CONV_INT8_CUH

// The tensors (bias may be null; multipliers and shifts per output channel) and the output
// stage's scalars, in the kernels' order, and the arguments that pass them on.
#define QUANTIZED_CONV_TENSORS(T)                                                               \
    const T* __restrict__ input, const T* __restrict__ filter, const int* __restrict__ bias,  \
    const int* __restrict__ multipliers, const int* __restrict__ shifts, T* __restrict__ output
#define QUANTIZED_CONV_TENSOR_ARGS input, filter, bias, multipliers, shifts, output
#define QUANTIZED_OUTPUT_STAGE_PARAMS                                                           \
    int input_offset, int filter_offset, int output_offset, int act_min, int act_max
#define QUANTIZED_OUTPUT_STAGE_ARGS input_offset, filter_offset, output_offset, act_min, act_max

// The quantized multiply-add of the walks (conv2d_window.cuh, depthwise_window.cuh): the offset
// values' product added to the int32 sum, wrapping as TFLite's int32 accumulator.
struct QuantizedMultiplyAdd {
    int input_offset, filter_offset;

    template <typename T>
    __device__ __forceinline__ int weight(const T* w) const { return (int)*w + filter_offset; }

    template <typename T>
    __device__ __forceinline__ int operator()(int acc, int w, const T* x) const {
        return wrapping_add(acc, wrapping_mul(w, (int)*x + input_offset));
    }
};

// The output value of a sum (its bias already added): requantized, offset and clamped.
__device__ __forceinline__ int quantized_output(int acc, int multiplier, int shift, int output_offset, int act_min, int act_max)
{
    const int scaled = multiply_by_quantized_multiplier(acc, multiplier, shift);
    return clamp_int(scaled + output_offset, act_min, act_max);
}

#endif  // LITEDELEGATE_CONV_INT8_CUH
