// CONV_2D, versions 1 and 6 (float; v6: grouped convolution), NHWC: a direct convolution
// with the bias and the fused activation in the same kernel (one launch per node).
//
// Shapes:
//   input  [batches, in_h, in_w, in_channels]            in_channels = groups * I
//   filter [groups, filter_h, filter_w, I, O]            laid out once at prepare from
//                                                         TFLite's OHWI [groups * O, KH, KW, I]
//   bias   [groups * O], or a null pointer
//   output [batches, out_h, out_w, groups * O]
// Output channel oc = g * O + o (group g) reads the input channels g * I .. g * I + I - 1:
//   out[b, oy, ox, oc] = clamp(bias[oc] + sum_{ky, kx, i} in[b, iy, ix, g * I + i] * filter[g, ky, kx, i, o])
//   iy = oy * stride_h + ky * dilation_h - pad_top       (ix likewise)
// the sum in the order (ky, kx, i) of TFLite's reference loop, as float32 fused multiply-adds;
// taps outside the input are skipped (TFLite's reference reads nothing there). pad_top /
// pad_left and out_h / out_w come from the host with TFLite's SAME/VALID rule
// (backends.cpu.kernels._window.WindowGeometry); the fused activation arrives as its clamp
// range [act_min, act_max] (NONE: -FLT_MAX..FLT_MAX, so an overflow saturates as in
// TFLite), applied as TFLite's ActivationFunctionWithMinMax so that NaN propagates.
//
// Launch (conv2d.py: conv2d_launch_config): 1-D, one thread per (group of CONV2D_PIXELS
// consecutive output pixels, output channel), the channel fastest:
//   index = pixel_group * (groups * O) + oc,   pixel = pixel_group * CONV2D_PIXELS + r
// so a warp's threads take consecutive output channels: they read consecutive filter values
// (the [.., I, O] layout: coalesced) and, while they share a pixel group, the same input
// values (one broadcast load). Each filter value a thread reads feeds CONV2D_PIXELS sums.
// Pixels past the end compute on the last pixel (valid memory) and are not stored.
//
// Trade-off: no shared memory, no tiling over channels, no split of the sum. Each
// multiply-add still loads its input value (from L1, shared by the warp), so a large layer
// is bound by loads rather than by arithmetic, far from cuDNN's implicit GEMM; and the
// parallelism is (pixels / CONV2D_PIXELS) x output channels threads, each running a serial
// chain of KH*KW*I multiply-adds, so a deep layer on a small map (6x6x256, 3x3: 2304 threads
// of 2304 steps) fills few SMs (splitting the sum would take atomics or a second launch,
// and change the order of the sum). In exchange the kernel is one deterministic launch with
// no im2col buffer and no padded copy, which is what the small MediaPipe-sized layers (a
// few thousand pixels, 16-256 channels) need: their time is launch overhead, not FLOPs.
// It parallelises like the im2col + matmul.cu pair it replaces (same threads per output,
// same per-thread order), minus that pair's extra launches and memory traffic. Larger layers
// run conv2d_tiled.cu instead (an implicit GEMM over shared-memory tiles, the same sums in the
// same order), or in float16 storage conv2d_mma.cu (tensor cores); conv2d.py: conv2d_variant.
//
// conv2d_fused_f32/_f16: the same kernel with the nodes backends/gpu/fusion.py folds into it
// (epilogue.cuh: a residual ADD, PRELU, RELU; a PAD in front is only pad_top / pad_left).
//
// Storage: float32 (conv2d_f32) or float16 (conv2d_f16: input, filter, bias and output
// hold binary16 bit patterns; every product and sum is float32, and the product of two
// halves is exact in float32, so fmaf rounds only the sum). This file must compile with
// NVRTC (no system headers; storage.cuh is spliced in) and with g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define CONV2D_PIXELS 4

// ---- storage types ---------------------------------------------------------------------------
#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns
#include "epilogue.cuh"  // the fused residual ADD / PRELU / RELU after the bias and clamp

// ---- the kernel body ----------------------------------------------------------------------

template <typename Storage>
__device__ __forceinline__ void conv2d_nhwc(
    const Storage* __restrict__ input,
    const Storage* __restrict__ filter,
    const Storage* __restrict__ bias,  // may be null
    Storage* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels,
    int out_h, int out_w, int out_channels, int groups,
    int filter_h, int filter_w,
    int stride_h, int stride_w,
    int dilation_h, int dilation_w,
    int pad_top, int pad_left,
    float act_min, float act_max,
    const Epilogue epilogue)
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
    const Storage* filter_column = filter + (long long)g * filter_h * filter_w * group_in * group_out + (oc - g * group_out);
    const Storage* group_input = input + g * group_in;

    // Where each of the thread's pixels sits: its image and the input position of tap (0, 0).
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

    float acc[CONV2D_PIXELS];
    for (int r = 0; r < CONV2D_PIXELS; ++r) acc[r] = 0.0f;

    for (int ky = 0; ky < filter_h; ++ky) {
        for (int kx = 0; kx < filter_w; ++kx) {
            // The tap's input pixel for each output pixel; a tap outside the input is skipped.
            const Storage* tap[CONV2D_PIXELS];
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
            const Storage* weights = filter_column + (long long)(ky * filter_w + kx) * group_in * group_out;
            for (int i = 0; i < group_in; ++i) {
                const float w = load_as_float(weights + (long long)i * group_out);
                for (int r = 0; r < CONV2D_PIXELS; ++r) {
                    if (inside[r]) acc[r] = fmaf(load_as_float(tap[r] + i), w, acc[r]);
                }
            }
        }
    }

    // Fused epilogue: bias, then the activation's clamp, written as TFLite's
    // ActivationFunctionWithMinMax (std::min(std::max(x, lo), hi)) so that NaN propagates;
    // fmaxf/fminf would turn NaN into a bound.
    const float b = bias != nullptr ? load_as_float(bias + oc) : 0.0f;
    for (int r = 0; r < CONV2D_PIXELS && first_pixel + r < pixels; ++r) {
        float value = bias != nullptr ? acc[r] + b : acc[r];
        value = value < act_min ? act_min : value;
        value = value > act_max ? act_max : value;
        const long long pixel = first_pixel + r;
        store_from_float(output + pixel * out_channels + oc, apply_epilogue<Storage>(epilogue, value, pixel, oc));
    }
}

// ---- entry points ---------------------------------------------------------------------------
// Launch: 1-D, blockDim.x * gridDim.x >= ceil(batches * out_h * out_w / CONV2D_PIXELS) * out_channels
// (conv2d.py: conv2d_launch_config). Arguments: int32 and float32 scalars as declared.

extern "C" __global__ void conv2d_f32(
    const float* __restrict__ input, const float* __restrict__ filter, const float* __restrict__ bias,
    float* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int out_channels, int groups,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, float act_min, float act_max)
{
    conv2d_nhwc<float>(
        input, filter, bias, output, batches, in_h, in_w, in_channels, out_h, out_w, out_channels, groups,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, act_min, act_max, no_epilogue());
}

// float16 storage (the delegate's float16 precision option): input, filter, bias and output
// hold binary16 bit patterns; products and sums are float32.
extern "C" __global__ void conv2d_f16(
    const unsigned short* __restrict__ input, const unsigned short* __restrict__ filter,
    const unsigned short* __restrict__ bias, unsigned short* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int out_channels, int groups,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, float act_min, float act_max)
{
    conv2d_nhwc<unsigned short>(
        input, filter, bias, output, batches, in_h, in_w, in_channels, out_h, out_w, out_channels, groups,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, act_min, act_max, no_epilogue());
}

// ---- fused entry points (backends/gpu/fusion.py) ----------------------------------------------
// The same convolution with the epilogue of epilogue.cuh: a residual ADD (its PAD of channels
// folded in), PRELU, RELU. A PAD of the input's rows and columns folded in front of the
// convolution needs no code: it is pad_top / pad_left and in_h / in_w (the host adds the PAD's
// zeros to the convolution's own padding, conv2d.py: Conv2DGeometry.of(pre_padding=...)).

extern "C" __global__ void conv2d_fused_f32(
    const float* __restrict__ input, const float* __restrict__ filter, const float* __restrict__ bias,
    float* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int out_channels, int groups,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, float act_min, float act_max,
    const float* __restrict__ residual, int residual_channels, float add_min, float add_max,
    const float* __restrict__ alpha, float post_min, float post_max)
{
    conv2d_nhwc<float>(
        input, filter, bias, output, batches, in_h, in_w, in_channels, out_h, out_w, out_channels, groups,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, act_min, act_max,
        make_epilogue(residual, residual_channels, add_min, add_max, alpha, post_min, post_max));
}

extern "C" __global__ void conv2d_fused_f16(
    const unsigned short* __restrict__ input, const unsigned short* __restrict__ filter,
    const unsigned short* __restrict__ bias, unsigned short* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int out_channels, int groups,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, float act_min, float act_max,
    const unsigned short* __restrict__ residual, int residual_channels, float add_min, float add_max,
    const unsigned short* __restrict__ alpha, float post_min, float post_max)
{
    conv2d_nhwc<unsigned short>(
        input, filter, bias, output, batches, in_h, in_w, in_channels, out_h, out_w, out_channels, groups,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, act_min, act_max,
        make_epilogue(residual, residual_channels, add_min, add_max, alpha, post_min, post_max));
}
