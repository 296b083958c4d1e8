// DEPTHWISE_CONV_2D on int8 / uint8 tensors (versions 1-2: uint8 per tensor, v2 dilated; 3: int8
// per channel), NHWC, the whole node in one kernel: TFLite's reference DepthwiseConvPerChannel /
// DepthwiseConv, one thread per output element (batch, y, x, output channel).
//
// Shapes (TFLite's layouts):
//   input  [batches, in_h, in_w, in_channels]
//   filter [1, filter_h, filter_w, out_channels]      out_channels = in_channels * multiplier
//   bias   int32 [out_channels], or a null pointer
//   multipliers, shifts  int32 [out_channels]         QuantizeMultiplier per output channel
//   output [batches, out_h, out_w, out_channels]
// Output channel oc reads input channel oc / multiplier:
//   acc = sum_{ky, kx} (filter[0, ky, kx, oc] + filter_offset) * (in[b, iy, ix, oc / multiplier] + input_offset)
//   iy = oy * stride_h + ky * dilation_h - pad_top       (ix likewise; taps outside the input skipped)
//   out[b, oy, ox, oc] = clamp(MultiplyByQuantizedMultiplier(acc + bias[oc], multipliers[oc], shifts[oc])
//                              + output_offset, act_min, act_max)
// with input_offset = -z_in, filter_offset = -z_w (0 for int8), output_offset = z_out and the
// fused activation's quantized clamp, all from the host (the CPU kernel's own helpers). The
// accumulator is int32 and wraps as TFLite's (the delegate takes only nodes whose accumulators
// cannot leave int32). The arithmetic is fixed_point.cuh's.
//
// Launch (conv_int8.py): 1-D blocks of 256 threads, one thread per output element, the
// channel fastest (a warp reads consecutive channels of one pixel: coalesced).
//
// This file must compile with NVRTC (no system headers; the .cuh headers are spliced in) and with
// g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#include "fixed_point.cuh"  // multiply_by_quantized_multiplier, wrapping int32 arithmetic, clamp_int
#include "conv_int8.cuh"  // the tensors and output stage as the kernels take them, QuantizedMultiplyAdd
#include "coordinates.cuh"  // coordinates_4d, for depthwise_window.cuh
#include "depthwise_window.cuh"  // the threads' outputs and the walk over the taps, as depthwise_conv2d.cu

template <typename T>
__device__ __forceinline__ void depthwise_conv2d_quantized(
    QUANTIZED_CONV_TENSORS(T), DEPTHWISE_WINDOW_PARAMS, QUANTIZED_OUTPUT_STAGE_PARAMS)
{
    DepthwiseSum<int> sum;
    if (!depthwise_sum(input, filter, DEPTHWISE_WINDOW_ARGS, QuantizedMultiplyAdd{input_offset, filter_offset}, sum)) {
        return;  // the last block is partial
    }

    const int oc = sum.oc;
    int acc = sum.acc;
    if (bias != nullptr) acc = wrapping_add(acc, bias[oc]);
    output[sum.index] = (T)quantized_output(acc, multipliers[oc], shifts[oc], output_offset, act_min, act_max);
}

// ---- entry points ---------------------------------------------------------------------------
// Arguments: int32 scalars as declared (conv_int8.py: depthwise_int8_args).

extern "C" __global__ void depthwise_conv2d_int8(
    QUANTIZED_CONV_TENSORS(signed char), DEPTHWISE_WINDOW_PARAMS, QUANTIZED_OUTPUT_STAGE_PARAMS)
{
    depthwise_conv2d_quantized<signed char>(QUANTIZED_CONV_TENSOR_ARGS, DEPTHWISE_WINDOW_ARGS, QUANTIZED_OUTPUT_STAGE_ARGS);
}

extern "C" __global__ void depthwise_conv2d_uint8(
    QUANTIZED_CONV_TENSORS(unsigned char), DEPTHWISE_WINDOW_PARAMS, QUANTIZED_OUTPUT_STAGE_PARAMS)
{
    depthwise_conv2d_quantized<unsigned char>(QUANTIZED_CONV_TENSOR_ARGS, DEPTHWISE_WINDOW_ARGS, QUANTIZED_OUTPUT_STAGE_ARGS);
}
