// CONV_2D on int8 / uint8 tensors (versions 1, 3 and 6: uint8 per tensor, int8 per channel,
// grouped), NHWC, the whole node in one kernel: TFLite's reference ConvPerChannel / Conv.
//
// Shapes (as conv2d.cu, the float kernel):
//   input  [batches, in_h, in_w, in_channels]            in_channels = groups * I
//   filter [groups, filter_h, filter_w, I, O]            laid out once at prepare from
//                                                         TFLite's OHWI [groups * O, KH, KW, I]
//   bias   int32 [groups * O], or a null pointer
//   multipliers, shifts  int32 [groups * O]              QuantizeMultiplier per output channel
//   output [batches, out_h, out_w, groups * O]
// For output channel oc = g * O + o (group g reads input channels g * I .. g * I + I - 1):
//   acc = sum_{ky, kx, i} (filter[g, ky, kx, i, o] + filter_offset) * (in[b, iy, ix, g * I + i] + input_offset)
//   iy = oy * stride_h + ky * dilation_h - pad_top       (ix likewise; taps outside the input skipped)
//   out[b, oy, ox, oc] = clamp(MultiplyByQuantizedMultiplier(acc + bias[oc], multipliers[oc], shifts[oc])
//                              + output_offset, act_min, act_max)
// with input_offset = -z_in, filter_offset = -z_w (0 for int8), output_offset = z_out and
// [act_min, act_max] the fused activation's quantized clamp (CalculateActivationRangeQuantized),
// all computed on the host by the CPU kernel's own helpers. The accumulator is int32 and wraps as
// TFLite's does (the delegate takes only nodes whose accumulators cannot leave int32, so the
// result is also the CPU kernel's exact one). The arithmetic is fixed_point.cuh's.
//
// Launch (conv_int8.py: conv2d_int8_launch_config): as conv2d.cu, 1-D, one thread per (group of
// CONV2D_PIXELS consecutive output pixels, output channel), the channel fastest, so that a warp
// reads consecutive filter values and shares its input values. The walk over each thread's
// windows is conv2d.cu's (conv2d_window.cuh), with the quantized multiply-add of conv_int8.cuh
// (depthwise_conv2d_int8.cu's too). Pixels past the end compute on pixel 0 (valid memory)
// and are not stored.
//
// This file must compile with NVRTC (no system headers; the .cuh headers are spliced in) and with
// g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#include "fixed_point.cuh"  // multiply_by_quantized_multiplier, wrapping int32 arithmetic, clamp_int
#include "conv_int8.cuh"  // the tensors and output stage as the kernels take them, QuantizedMultiplyAdd
#include "conv2d_window.cuh"  // direct_convolution: conv2d.cu's kernel, with an int32 accumulator

template <typename T>
__device__ __forceinline__ void conv2d_quantized(
    QUANTIZED_CONV_TENSORS(T), CONV2D_WINDOW_PARAMS, QUANTIZED_OUTPUT_STAGE_PARAMS)
{
    // The output stage: the bias, TFLite's requantization, the offset and the clamp (conv_int8.cuh).
    const auto store = [&](int sum, long long pixel, int oc) {
        const int b = bias != nullptr ? bias[oc] : 0;
        output[pixel * out_channels + oc] =
            (T)quantized_output(wrapping_add(sum, b), multipliers[oc], shifts[oc], output_offset, act_min, act_max);
    };
    direct_convolution<int>(input, filter, CONV2D_WINDOW_ARGS, QuantizedMultiplyAdd{input_offset, filter_offset}, store);
}

// ---- entry points ---------------------------------------------------------------------------
// Arguments: int32 scalars as declared (CONV2D_WINDOW_PARAMS: conv2d_window.cuh; conv_int8.py:
// conv2d_int8_args).

extern "C" __global__ void conv2d_int8(
    QUANTIZED_CONV_TENSORS(signed char), CONV2D_WINDOW_PARAMS, QUANTIZED_OUTPUT_STAGE_PARAMS)
{
    conv2d_quantized<signed char>(QUANTIZED_CONV_TENSOR_ARGS, CONV2D_WINDOW_ARGS, QUANTIZED_OUTPUT_STAGE_ARGS);
}

extern "C" __global__ void conv2d_uint8(
    QUANTIZED_CONV_TENSORS(unsigned char), CONV2D_WINDOW_PARAMS, QUANTIZED_OUTPUT_STAGE_PARAMS)
{
    conv2d_quantized<unsigned char>(QUANTIZED_CONV_TENSOR_ARGS, CONV2D_WINDOW_ARGS, QUANTIZED_OUTPUT_STAGE_ARGS);
}
