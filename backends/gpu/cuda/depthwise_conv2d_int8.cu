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
// This file must compile with NVRTC (no system headers; fixed_point.cuh is spliced in) and with
// g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#include "fixed_point.cuh"  // multiply_by_quantized_multiplier, wrapping int32 arithmetic, clamp_int

template <typename T>
__device__ __forceinline__ void depthwise_conv2d_quantized(
    const T* __restrict__ input,
    const T* __restrict__ filter,
    const int* __restrict__ bias,  // may be null
    const int* __restrict__ multipliers,
    const int* __restrict__ shifts,
    T* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels,
    int out_h, int out_w, int multiplier,
    int filter_h, int filter_w,
    int stride_h, int stride_w,
    int dilation_h, int dilation_w,
    int pad_top, int pad_left,
    int input_offset, int filter_offset, int output_offset, int act_min, int act_max)
{
    const int out_channels = in_channels * multiplier;
    const long long total = (long long)batches * out_h * out_w * out_channels;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;  // the last block is partial

    // index = ((b * out_h + oy) * out_w + ox) * out_channels + oc
    long long rest = index;
    const int oc = (int)(rest % out_channels);
    rest /= out_channels;
    const int ox = (int)(rest % out_w);
    rest /= out_w;
    const int oy = (int)(rest % out_h);
    const long long b = rest / out_h;
    const int ic = oc / multiplier;

    const T* image = input + b * in_h * in_w * in_channels + ic;
    int acc = 0;
    for (int ky = 0; ky < filter_h; ++ky) {
        const int iy = oy * stride_h + ky * dilation_h - pad_top;
        if (iy < 0 || iy >= in_h) continue;
        for (int kx = 0; kx < filter_w; ++kx) {
            const int ix = ox * stride_w + kx * dilation_w - pad_left;
            if (ix < 0 || ix >= in_w) continue;
            const int x = (int)image[((long long)iy * in_w + ix) * in_channels] + input_offset;
            const int w = (int)filter[(ky * filter_w + kx) * out_channels + oc] + filter_offset;
            acc = wrapping_add(acc, wrapping_mul(w, x));
        }
    }
    if (bias != nullptr) acc = wrapping_add(acc, bias[oc]);
    const int scaled = multiply_by_quantized_multiplier(acc, multipliers[oc], shifts[oc]);
    output[index] = (T)clamp_int(scaled + output_offset, act_min, act_max);
}

// ---- entry points ---------------------------------------------------------------------------
// Arguments: int32 scalars as declared (conv_int8.py: depthwise_int8_args).

extern "C" __global__ void depthwise_conv2d_int8(
    const signed char* __restrict__ input, const signed char* __restrict__ filter, const int* __restrict__ bias,
    const int* __restrict__ multipliers, const int* __restrict__ shifts, signed char* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int multiplier,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, int input_offset, int filter_offset, int output_offset, int act_min, int act_max)
{
    depthwise_conv2d_quantized<signed char>(
        input, filter, bias, multipliers, shifts, output, batches, in_h, in_w, in_channels, out_h, out_w, multiplier,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left,
        input_offset, filter_offset, output_offset, act_min, act_max);
}

extern "C" __global__ void depthwise_conv2d_uint8(
    const unsigned char* __restrict__ input, const unsigned char* __restrict__ filter, const int* __restrict__ bias,
    const int* __restrict__ multipliers, const int* __restrict__ shifts, unsigned char* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int multiplier,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, int input_offset, int filter_offset, int output_offset, int act_min, int act_max)
{
    depthwise_conv2d_quantized<unsigned char>(
        input, filter, bias, multipliers, shifts, output, batches, in_h, in_w, in_channels, out_h, out_w, multiplier,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left,
        input_offset, filter_offset, output_offset, act_min, act_max);
}
