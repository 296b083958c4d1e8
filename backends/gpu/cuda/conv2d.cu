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
// consecutive output pixels, output channel), the channel fastest; conv2d_window.cuh walks each
// thread's windows (shared with conv2d_int8.cu) and says why the threads are laid out so. Pixels
// past the end compute on pixel 0 (valid memory) and are not stored.
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
// NVRTC (no system headers; the .cuh headers are spliced in) and with g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

// ---- storage types ---------------------------------------------------------------------------
#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns
#include "epilogue.cuh"  // store_conv_output: bias, clamp, the fused residual ADD / PRELU / RELU
#include "conv2d_window.cuh"  // direct_convolution: the threads' pixels, the walk over the taps (CONV2D_PIXELS)

// ---- the kernel body ----------------------------------------------------------------------

// The float multiply-add of the walk: a float32 fused multiply-add of the stored values.
struct FloatMultiplyAdd {
    template <typename Storage>
    __device__ __forceinline__ float weight(const Storage* w) const { return load_as_float(w); }

    template <typename Storage>
    __device__ __forceinline__ float operator()(float acc, float w, const Storage* x) const {
        return fmaf(load_as_float(x), w, acc);
    }
};

template <typename Storage>
__device__ __forceinline__ void conv2d_nhwc(
    const Storage* __restrict__ input,
    const Storage* __restrict__ filter,
    const Storage* __restrict__ bias,  // may be null
    Storage* __restrict__ output,
    CONV2D_WINDOW_PARAMS,
    float act_min, float act_max,
    const Epilogue epilogue)
{
    // The output stage: bias, clamp, fused nodes (epilogue.cuh, every float convolution's).
    const auto store = [&](float sum, long long pixel, int oc) {
        store_conv_output(output, bias, sum, pixel, oc, out_channels, act_min, act_max, epilogue);
    };
    direct_convolution<float>(input, filter, CONV2D_WINDOW_ARGS, FloatMultiplyAdd(), store);
}

// ---- entry points ---------------------------------------------------------------------------
// Launch: 1-D, blockDim.x * gridDim.x >= ceil(batches * out_h * out_w / CONV2D_PIXELS) * out_channels
// (conv2d.py: conv2d_launch_config). Arguments: int32 and float32 scalars as declared
// (CONV2D_WINDOW_PARAMS: conv2d_window.cuh).

extern "C" __global__ void conv2d_f32(
    const float* __restrict__ input, const float* __restrict__ filter, const float* __restrict__ bias,
    float* __restrict__ output,
    CONV2D_WINDOW_PARAMS, float act_min, float act_max)
{
    conv2d_nhwc<float>(
        input, filter, bias, output, CONV2D_WINDOW_ARGS, act_min, act_max, no_epilogue());
}

// float16 storage (the delegate's float16 precision option): input, filter, bias and output
// hold binary16 bit patterns; products and sums are float32.
extern "C" __global__ void conv2d_f16(
    const unsigned short* __restrict__ input, const unsigned short* __restrict__ filter,
    const unsigned short* __restrict__ bias, unsigned short* __restrict__ output,
    CONV2D_WINDOW_PARAMS, float act_min, float act_max)
{
    conv2d_nhwc<unsigned short>(
        input, filter, bias, output, CONV2D_WINDOW_ARGS, act_min, act_max, no_epilogue());
}

// ---- fused entry points (backends/gpu/fusion.py) ----------------------------------------------
// The same convolution with the epilogue of epilogue.cuh: a residual ADD (its PAD of channels
// folded in), PRELU, RELU. A PAD of the input's rows and columns folded in front of the
// convolution needs no code: it is pad_top / pad_left and in_h / in_w (the host adds the PAD's
// zeros to the convolution's own padding, conv2d.py: Conv2DGeometry.of(pre_padding=...)).

extern "C" __global__ void conv2d_fused_f32(
    const float* __restrict__ input, const float* __restrict__ filter, const float* __restrict__ bias,
    float* __restrict__ output,
    CONV2D_WINDOW_PARAMS, float act_min, float act_max,
    const float* __restrict__ residual, int residual_channels, float add_min, float add_max,
    const float* __restrict__ alpha, float post_min, float post_max)
{
    conv2d_nhwc<float>(
        input, filter, bias, output, CONV2D_WINDOW_ARGS, act_min, act_max,
        make_epilogue(residual, residual_channels, add_min, add_max, alpha, post_min, post_max));
}

extern "C" __global__ void conv2d_fused_f16(
    const unsigned short* __restrict__ input, const unsigned short* __restrict__ filter,
    const unsigned short* __restrict__ bias, unsigned short* __restrict__ output,
    CONV2D_WINDOW_PARAMS, float act_min, float act_max,
    const unsigned short* __restrict__ residual, int residual_channels, float add_min, float add_max,
    const unsigned short* __restrict__ alpha, float post_min, float post_max)
{
    conv2d_nhwc<unsigned short>(
        input, filter, bias, output, CONV2D_WINDOW_ARGS, act_min, act_max,
        make_epilogue(residual, residual_channels, add_min, add_max, alpha, post_min, post_max));
}
