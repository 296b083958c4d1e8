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
// reads consecutive filter values and shares its input values. Pixels past the end compute on
// the last pixel (valid memory) and are not stored.
//
// This file must compile with NVRTC (no system headers; fixed_point.cuh is spliced in) and with
// g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define CONV2D_PIXELS 4

#include "fixed_point.cuh"  // multiply_by_quantized_multiplier, wrapping int32 arithmetic, clamp_int

template <typename T>
__device__ __forceinline__ void conv2d_quantized(
    const T* __restrict__ input,
    const T* __restrict__ filter,
    const int* __restrict__ bias,  // may be null
    const int* __restrict__ multipliers,
    const int* __restrict__ shifts,
    T* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels,
    int out_h, int out_w, int out_channels, int groups,
    int filter_h, int filter_w,
    int stride_h, int stride_w,
    int dilation_h, int dilation_w,
    int pad_top, int pad_left,
    int input_offset, int filter_offset, int output_offset, int act_min, int act_max)
{
    const long long pixels = (long long)batches * out_h * out_w;
    const long long pixel_groups = (pixels + CONV2D_PIXELS - 1) / CONV2D_PIXELS;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= pixel_groups * out_channels) return;  // the last block is partial

    const int oc = (int)(index % out_channels);
    const long long first_pixel = (index / out_channels) * CONV2D_PIXELS;
    const int group_in = in_channels / groups;    // I
    const int group_out = out_channels / groups;  // O
    const int g = oc / group_out;
    // This thread's filter column: filter[g, ky, kx, i, o] = filter_column[(ky * KW + kx) * I * O + i * O].
    const T* filter_column = filter + (long long)g * filter_h * filter_w * group_in * group_out + (oc - g * group_out);
    const T* group_input = input + g * group_in;

    long long image[CONV2D_PIXELS];
    int origin_y[CONV2D_PIXELS], origin_x[CONV2D_PIXELS];
    for (int r = 0; r < CONV2D_PIXELS; ++r) {
        const long long pixel = first_pixel + r < pixels ? first_pixel + r : pixels - 1;
        const int ox = (int)(pixel % out_w);
        const long long rest = pixel / out_w;
        const int oy = (int)(rest % out_h);
        const long long b = rest / out_h;
        image[r] = b * in_h * in_w * in_channels;
        origin_y[r] = oy * stride_h - pad_top;
        origin_x[r] = ox * stride_w - pad_left;
    }

    int acc[CONV2D_PIXELS];
    for (int r = 0; r < CONV2D_PIXELS; ++r) acc[r] = 0;

    for (int ky = 0; ky < filter_h; ++ky) {
        for (int kx = 0; kx < filter_w; ++kx) {
            const T* tap[CONV2D_PIXELS];
            bool inside[CONV2D_PIXELS];
            bool any = false;
            for (int r = 0; r < CONV2D_PIXELS; ++r) {
                const int iy = origin_y[r] + ky * dilation_h;
                const int ix = origin_x[r] + kx * dilation_w;
                inside[r] = iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
                tap[r] = group_input + image[r] + ((long long)(inside[r] ? iy : 0) * in_w + (inside[r] ? ix : 0)) * in_channels;
                any = any || inside[r];
            }
            if (!any) continue;
            const T* weights = filter_column + (long long)(ky * filter_w + kx) * group_in * group_out;
            for (int i = 0; i < group_in; ++i) {
                const int w = (int)weights[(long long)i * group_out] + filter_offset;
                for (int r = 0; r < CONV2D_PIXELS; ++r) {
                    if (inside[r]) acc[r] = wrapping_add(acc[r], wrapping_mul(w, (int)tap[r][i] + input_offset));
                }
            }
        }
    }

    const int b = bias != nullptr ? bias[oc] : 0;
    const int multiplier = multipliers[oc];
    const int shift = shifts[oc];
    for (int r = 0; r < CONV2D_PIXELS && first_pixel + r < pixels; ++r) {
        const int scaled = multiply_by_quantized_multiplier(wrapping_add(acc[r], b), multiplier, shift);
        output[(first_pixel + r) * out_channels + oc] = (T)clamp_int(scaled + output_offset, act_min, act_max);
    }
}

// ---- entry points ---------------------------------------------------------------------------
// Arguments: int32 scalars as declared (conv_int8.py: conv2d_int8_args).

extern "C" __global__ void conv2d_int8(
    const signed char* __restrict__ input, const signed char* __restrict__ filter, const int* __restrict__ bias,
    const int* __restrict__ multipliers, const int* __restrict__ shifts, signed char* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int out_channels, int groups,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, int input_offset, int filter_offset, int output_offset, int act_min, int act_max)
{
    conv2d_quantized<signed char>(
        input, filter, bias, multipliers, shifts, output, batches, in_h, in_w, in_channels, out_h, out_w,
        out_channels, groups, filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left,
        input_offset, filter_offset, output_offset, act_min, act_max);
}

extern "C" __global__ void conv2d_uint8(
    const unsigned char* __restrict__ input, const unsigned char* __restrict__ filter, const int* __restrict__ bias,
    const int* __restrict__ multipliers, const int* __restrict__ shifts, unsigned char* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int out_channels, int groups,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, int input_offset, int filter_offset, int output_offset, int act_min, int act_max)
{
    conv2d_quantized<unsigned char>(
        input, filter, bias, multipliers, shifts, output, batches, in_h, in_w, in_channels, out_h, out_w,
        out_channels, groups, filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left,
        input_offset, filter_offset, output_offset, act_min, act_max);
}
