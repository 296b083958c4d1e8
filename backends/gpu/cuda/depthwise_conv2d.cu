// DEPTHWISE_CONV_2D, versions 1 and 2 (float), NHWC: a direct convolution, one thread
// per output element (batch, y, x, output channel).
//
// Shapes (TFLite's layouts):
//   input  [batches, in_h, in_w, in_channels]
//   filter [1, filter_h, filter_w, out_channels]      out_channels = in_channels * multiplier
//   bias   [out_channels], or a null pointer
//   output [batches, out_h, out_w, out_channels]
// Output channel oc reads input channel oc / multiplier:
//   out[b, oy, ox, oc] = clamp(bias[oc] + sum_{ky, kx} in[b, iy, ix, oc / multiplier] * filter[0, ky, kx, oc])
//   iy = oy * stride_h + ky * dilation_h - pad_top       (ix likewise)
// taps outside the input read 0. pad_top / pad_left and out_h / out_w are computed on the
// host with TFLite's rule (backends.cpu.common.compute_padding); the fused activation
// arrives as its clamp range [act_min, act_max] (NONE: -FLT_MAX..FLT_MAX; RELU: 0..FLT_MAX;
// RELU6: 0..6; RELU_N1_TO_1: -1..1), also from the host: NVRTC has no <cfloat>/<cmath>
// macros such as FLT_MAX or INFINITY.
//
// Accumulation is float32 for both storage types. This file must compile with NVRTC
// (no system headers; storage.cuh is spliced in) and with g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

// ---- storage types ----------------------------------------------------------------------
// float16 storage without cuda_fp16.h: the NVRTC of the pip wheel ships no CUDA headers,
// so half values travel as their IEEE binary16 bit patterns (unsigned short) and are
// converted with the PTX cvt instructions; the host shim converts with _Float16.

#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns
#include "epilogue.cuh"  // the fused residual ADD / PRELU / RELU after the bias and clamp

// ---- the kernel body ----------------------------------------------------------------------

template <typename Storage>
__device__ __forceinline__ void depthwise_conv2d_nhwc(
    const Storage* __restrict__ input,
    const Storage* __restrict__ filter,
    const Storage* __restrict__ bias,  // may be null
    Storage* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels,
    int out_h, int out_w, int multiplier,
    int filter_h, int filter_w,
    int stride_h, int stride_w,
    int dilation_h, int dilation_w,
    int pad_top, int pad_left,
    float act_min, float act_max,
    const Epilogue epilogue)
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
    const int b = (int)(rest / out_h);

    const int ic = oc / multiplier;                  // the input channel this output channel reads
    const int in_y_origin = oy * stride_h - pad_top;  // input row of filter row 0
    const int in_x_origin = ox * stride_w - pad_left;
    const long long batch_offset = (long long)b * in_h * in_w * in_channels;

    float acc = 0.0f;
    for (int ky = 0; ky < filter_h; ++ky) {
        // Version 2: dilation. Filter row ky reads the input dilation_h rows after row
        // ky - 1 (version 1 is dilation 1: adjacent rows). Same for columns below.
        const int iy = in_y_origin + ky * dilation_h;
        if (iy < 0 || iy >= in_h) continue;  // padding rows read 0
        for (int kx = 0; kx < filter_w; ++kx) {
            const int ix = in_x_origin + kx * dilation_w;
            if (ix < 0 || ix >= in_w) continue;  // padding columns read 0
            const long long in_offset = batch_offset + ((long long)iy * in_w + ix) * in_channels + ic;
            const int filter_offset = (ky * filter_w + kx) * out_channels + oc;
            acc += load_as_float(input + in_offset) * load_as_float(filter + filter_offset);
        }
    }

    // Fused epilogue: bias, then the activation's clamp. Written as TFLite's
    // ActivationFunctionWithMinMax (std::min(std::max(x, lo), hi)) so that NaN propagates;
    // fmaxf/fminf would turn NaN into a bound.
    if (bias != nullptr) acc += load_as_float(bias + oc);
    acc = acc < act_min ? act_min : acc;
    acc = acc > act_max ? act_max : acc;
    store_from_float(output + index, apply_epilogue<Storage>(epilogue, acc, index / out_channels, oc));
}

// ---- entry points ---------------------------------------------------------------------------
// Launch: 1-D, blockDim.x * gridDim.x >= batches * out_h * out_w * out_channels
// (sources.depthwise_launch_config). Arguments: int32 and float32 scalars as declared.

extern "C" __global__ void depthwise_conv2d_f32(
    const float* __restrict__ input, const float* __restrict__ filter, const float* __restrict__ bias,
    float* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int multiplier,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, float act_min, float act_max)
{
    depthwise_conv2d_nhwc<float>(
        input, filter, bias, output, batches, in_h, in_w, in_channels, out_h, out_w, multiplier,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, act_min, act_max, no_epilogue());
}

// float16 storage (the delegate's float16 precision option): all of input, filter, bias
// and output hold binary16 bit patterns; products and sums are float32.
extern "C" __global__ void depthwise_conv2d_f16(
    const unsigned short* __restrict__ input, const unsigned short* __restrict__ filter,
    const unsigned short* __restrict__ bias, unsigned short* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int multiplier,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, float act_min, float act_max)
{
    depthwise_conv2d_nhwc<unsigned short>(
        input, filter, bias, output, batches, in_h, in_w, in_channels, out_h, out_w, multiplier,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, act_min, act_max, no_epilogue());
}

// ---- fused entry points (backends/gpu/fusion.py) ----------------------------------------------
// The same kernel with the epilogue of epilogue.cuh (residual ADD, its PAD of channels folded
// in, PRELU, RELU); a PAD of rows and columns folded in front is pad_top / pad_left.

extern "C" __global__ void depthwise_conv2d_fused_f32(
    const float* __restrict__ input, const float* __restrict__ filter, const float* __restrict__ bias,
    float* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int multiplier,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, float act_min, float act_max,
    const float* __restrict__ residual, int residual_channels, float add_min, float add_max,
    const float* __restrict__ alpha, float post_min, float post_max)
{
    const Epilogue e = make_epilogue(residual, residual_channels, add_min, add_max, alpha, post_min, post_max);
    depthwise_conv2d_nhwc<float>(
        input, filter, bias, output, batches, in_h, in_w, in_channels, out_h, out_w, multiplier,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, act_min, act_max, e);
}

extern "C" __global__ void depthwise_conv2d_fused_f16(
    const unsigned short* __restrict__ input, const unsigned short* __restrict__ filter,
    const unsigned short* __restrict__ bias, unsigned short* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int multiplier,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, float act_min, float act_max,
    const unsigned short* __restrict__ residual, int residual_channels, float add_min, float add_max,
    const unsigned short* __restrict__ alpha, float post_min, float post_max)
{
    const Epilogue e = make_epilogue(residual, residual_channels, add_min, add_max, alpha, post_min, post_max);
    depthwise_conv2d_nhwc<unsigned short>(
        input, filter, bias, output, batches, in_h, in_w, in_channels, out_h, out_w, multiplier,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, act_min, act_max, e);
}
