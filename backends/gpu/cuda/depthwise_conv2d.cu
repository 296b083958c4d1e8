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
// (no system headers; the .cuh headers are spliced in) and with g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

// ---- storage types ----------------------------------------------------------------------
// float16 storage without cuda_fp16.h: the NVRTC of the pip wheel ships no CUDA headers,
// so half values travel as their IEEE binary16 bit patterns (unsigned short) and are
// converted with the PTX cvt instructions; the host shim converts with _Float16.

#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns
#include "epilogue.cuh"  // the fused residual ADD / PRELU / RELU after the bias and clamp
#include "coordinates.cuh"  // coordinates_4d, for depthwise_window.cuh
#include "depthwise_window.cuh"  // the threads' outputs and the walk over the taps (DEPTHWISE_WINDOW_PARAMS)

// ---- the kernel body ----------------------------------------------------------------------

// The float multiply-add of the walk: acc += in * w in float32, for both storage types.
struct FloatMultiplyAdd {
    template <typename Storage>
    __device__ __forceinline__ float weight(const Storage* w) const { return load_as_float(w); }

    template <typename Storage>
    __device__ __forceinline__ float operator()(float acc, float w, const Storage* x) const {
        return acc + load_as_float(x) * w;
    }
};

template <typename Storage>
__device__ __forceinline__ void depthwise_conv2d_nhwc(
    DEPTHWISE_FLOAT_TENSORS(Storage), DEPTHWISE_WINDOW_PARAMS, float act_min, float act_max, const Epilogue epilogue)
{
    DepthwiseSum<float> sum;
    if (!depthwise_sum(input, filter, DEPTHWISE_WINDOW_ARGS, FloatMultiplyAdd{}, sum)) return;  // the last block is partial

    // The output stage: bias, clamp, fused nodes (epilogue.cuh, every float convolution's).
    const int out_channels = in_channels * multiplier;
    store_conv_output(output, bias, sum.acc, sum.index / out_channels, sum.oc, out_channels, act_min, act_max, epilogue);
}

// ---- entry points ---------------------------------------------------------------------------
// Launch: 1-D, blockDim.x * gridDim.x >= batches * out_h * out_w * out_channels
// (sources.depthwise_launch_config). Arguments: int32 and float32 scalars as declared.

extern "C" __global__ void depthwise_conv2d_f32(
    DEPTHWISE_FLOAT_TENSORS(float), DEPTHWISE_WINDOW_PARAMS, float act_min, float act_max)
{
    depthwise_conv2d_nhwc<float>(
        DEPTHWISE_FLOAT_TENSOR_ARGS, DEPTHWISE_WINDOW_ARGS, act_min, act_max, no_epilogue());
}

// float16 storage (the delegate's float16 precision option): all of input, filter, bias
// and output hold binary16 bit patterns; products and sums are float32.
extern "C" __global__ void depthwise_conv2d_f16(
    DEPTHWISE_FLOAT_TENSORS(unsigned short), DEPTHWISE_WINDOW_PARAMS, float act_min, float act_max)
{
    depthwise_conv2d_nhwc<unsigned short>(
        DEPTHWISE_FLOAT_TENSOR_ARGS, DEPTHWISE_WINDOW_ARGS, act_min, act_max, no_epilogue());
}

// ---- fused entry points (backends/gpu/fusion.py) ----------------------------------------------
// The same kernel with the epilogue of epilogue.cuh (residual ADD, its PAD of channels folded
// in, PRELU, RELU); a PAD of rows and columns folded in front is pad_top / pad_left.

extern "C" __global__ void depthwise_conv2d_fused_f32(
    DEPTHWISE_FLOAT_TENSORS(float), DEPTHWISE_WINDOW_PARAMS, float act_min, float act_max,
    DEPTHWISE_EPILOGUE_PARAMS(float))
{
    depthwise_conv2d_nhwc<float>(
        DEPTHWISE_FLOAT_TENSOR_ARGS, DEPTHWISE_WINDOW_ARGS, act_min, act_max, make_epilogue(DEPTHWISE_EPILOGUE_ARGS));
}

extern "C" __global__ void depthwise_conv2d_fused_f16(
    DEPTHWISE_FLOAT_TENSORS(unsigned short), DEPTHWISE_WINDOW_PARAMS, float act_min, float act_max,
    DEPTHWISE_EPILOGUE_PARAMS(unsigned short))
{
    depthwise_conv2d_nhwc<unsigned short>(
        DEPTHWISE_FLOAT_TENSOR_ARGS, DEPTHWISE_WINDOW_ARGS, act_min, act_max, make_epilogue(DEPTHWISE_EPILOGUE_ARGS));
}
