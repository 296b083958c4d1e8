// AVERAGE_POOL_2D and MAX_POOL_2D, version 1 (float), NHWC: one thread per output element
// (batch, y, x, channel), TFLite's reference Pool (backends/cpu/kernels/pool2d.py). Also
// MEAN over constant axes (a pool over whole axes), at the end of the file.
//
// Shapes:
//   input  [batches, in_h, in_w, channels]
//   output [batches, out_h, out_w, channels]
// The window of output (oy, ox) starts at input row oy * stride_h - pad_top and column
// ox * stride_w - pad_left and is clipped to the input: only the inside elements count
// (the walk is pooling.cuh, shared with the quantized MEAN of int8_windows.cu).
//   average: out = clamp(sum(window) / count)   count = the inside elements (never 0), the
//            sum in float32 in the order ky, then kx, starting from 0
//   max:     out = clamp(max(window))          the running max m starts at -inf and takes
//            v when m < v (std::max(m, v)), so a NaN never wins: a window of NaN and -inf
//            gives -inf, which the clamp turns into -FLT_MAX (TFLite starts from lowest)
// clamp(v) is TFLite's ActivationFunctionWithMinMax: v < act_min ? act_min : v, then
// v > act_max ? act_max : v (NaN passes). pad_top / pad_left and out_h / out_w are computed
// on the host with TFLite's padding rule; act_min / act_max too (NONE: -FLT_MAX..FLT_MAX,
// so +-inf saturates; NVRTC has no FLT_MAX or INFINITY).
//
// Quantized (int8 / uint8) AVERAGE_POOL_2D v2 / MAX_POOL_2D v2 (quantized_average_pool2d_*,
// quantized_max_pool2d_*), bit-exact with TFLite's reference (backends/cpu/kernels/
// pool2d_quantized.py), the same window walk; the output has the input's scale and zero point,
// so raw values are pooled:
//   average: acc = the int32 sum of the window, count its inside elements (never 0),
//            out = clamp(acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count)
//            (C's truncating division: halves away from zero)
//   max:     out = clamp(max(window))
// clamp: the fused activation's quantized range [act_min, act_max]. Launch as the float pools
// (cuda/int8_windows.py: QuantizedPool2DCuda).
//
// Storage float32 or float16 (binary16 bit patterns), computed in float32.
// Launch: 1-D, blockDim.x * gridDim.x >= batches * out_h * out_w * channels
// (cuda/windows.py: Pool2DCuda). This file must compile with NVRTC (no system headers; the .cuh headers are spliced in)
// and with g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

// ---- storage types ---------------------------------------------------------------------------

#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns
#include "pooling.cuh"  // the windows' walks, shared with int8_windows.cu
#include "fixed_point.cuh"  // clamp_int, for the quantized pools

// ---- the kernel body ----------------------------------------------------------------------

template <typename Storage, bool IsMax>
__device__ __forceinline__ void pool2d_nhwc(
    const Storage* __restrict__ input, Storage* __restrict__ output, POOL2D_WINDOW_PARAMS, float act_min, float act_max)
{
    const float minus_infinity = -__int_as_float(0x7f800000);
    const auto load = [](const Storage* p) { return load_as_float(p); };
    const auto finish = [&](float value, long long count, Storage* out) {
        float acc = IsMax ? value : value / (float)count;
        acc = acc < act_min ? act_min : acc;
        acc = acc > act_max ? act_max : acc;
        store_from_float(out, acc);
    };
    pool2d<IsMax>(input, output, POOL2D_WINDOW_ARGS, minus_infinity, load, finish);
}

// ---- entry points ---------------------------------------------------------------------------

#define POOL2D_PARAMS POOL2D_WINDOW_PARAMS, float act_min, float act_max
#define POOL2D_ARGS POOL2D_WINDOW_ARGS, act_min, act_max

extern "C" __global__ void average_pool2d_f32(const float* __restrict__ input, float* __restrict__ output, POOL2D_PARAMS)
{
    pool2d_nhwc<float, false>(input, output, POOL2D_ARGS);
}

extern "C" __global__ void average_pool2d_f16(
    const unsigned short* __restrict__ input, unsigned short* __restrict__ output, POOL2D_PARAMS)
{
    pool2d_nhwc<unsigned short, false>(input, output, POOL2D_ARGS);
}

extern "C" __global__ void max_pool2d_f32(const float* __restrict__ input, float* __restrict__ output, POOL2D_PARAMS)
{
    pool2d_nhwc<float, true>(input, output, POOL2D_ARGS);
}

extern "C" __global__ void max_pool2d_f16(
    const unsigned short* __restrict__ input, unsigned short* __restrict__ output, POOL2D_PARAMS)
{
    pool2d_nhwc<unsigned short, true>(input, output, POOL2D_ARGS);
}

// ---- MEAN -----------------------------------------------------------------------------------
// MEAN version 1 (float) over constant axes: a pool over whole axes. The input is seen as
// [d0, d1, d2, d3] (the host left-pads the shape with 1s); reduce_k is 1 for a reduced
// axis. One thread per output element: the output's elements are the kept coordinates in
// row-major order (keep_dims or not, the order is the same), and each sums the reduced
// elements in row-major order of the reduced axes, in float32 from 0, then divides by
// their count (TFLite's reference Mean: sum, then one division):
//   out[kept] = (sum over the reduced coordinates of in[kept, reduced]) / count
// Launch: 1-D, blockDim.x * gridDim.x >= the output's elements (cuda/windows.py: MeanCuda).

template <typename Storage>
__device__ __forceinline__ void mean_4d(
    const Storage* __restrict__ input, Storage* __restrict__ output, MEAN_AXES_PARAMS)
{
    Pooled<float> pooled;
    const auto add = [](float sum, const Storage* p) { return sum + load_as_float(p); };
    if (!mean_sum(input, MEAN_AXES_ARGS, add, pooled)) {
        return;  // the last block is partial
    }
    store_from_float(output + pooled.index, pooled.value / (float)pooled.count);
}

extern "C" __global__ void mean_f32(const float* __restrict__ input, float* __restrict__ output, MEAN_AXES_PARAMS)
{
    mean_4d<float>(input, output, MEAN_AXES_ARGS);
}

extern "C" __global__ void mean_f16(const unsigned short* __restrict__ input, unsigned short* __restrict__ output, MEAN_AXES_PARAMS)
{
    mean_4d<unsigned short>(input, output, MEAN_AXES_ARGS);
}

// ---- quantized AVERAGE_POOL_2D / MAX_POOL_2D --------------------------------------------------------

template <typename Q, bool IsMax>
__device__ __forceinline__ void quantized_pool2d(
    const Q* __restrict__ input, Q* __restrict__ output, POOL2D_WINDOW_PARAMS, int act_min, int act_max)
{
    const auto load = [](const Q* p) { return (int)*p; };
    const auto finish = [&](int value, long long count, Q* out) {
        int acc = value;
        if (!IsMax) {
            const int n = (int)count;
            acc = acc > 0 ? (acc + n / 2) / n : (acc - n / 2) / n;
        }
        *out = (Q)clamp_int(acc, act_min, act_max);
    };
    pool2d<IsMax>(input, output, POOL2D_WINDOW_ARGS, -2147483647, load, finish);
}

#define QUANTIZED_POOL2D_PARAMS POOL2D_WINDOW_PARAMS, int act_min, int act_max
#define QUANTIZED_POOL2D_ARGS POOL2D_WINDOW_ARGS, act_min, act_max

extern "C" __global__ void quantized_average_pool2d_i8(
    const signed char* __restrict__ input, signed char* __restrict__ output, QUANTIZED_POOL2D_PARAMS)
{
    quantized_pool2d<signed char, false>(input, output, QUANTIZED_POOL2D_ARGS);
}

extern "C" __global__ void quantized_average_pool2d_u8(
    const unsigned char* __restrict__ input, unsigned char* __restrict__ output, QUANTIZED_POOL2D_PARAMS)
{
    quantized_pool2d<unsigned char, false>(input, output, QUANTIZED_POOL2D_ARGS);
}

extern "C" __global__ void quantized_max_pool2d_i8(
    const signed char* __restrict__ input, signed char* __restrict__ output, QUANTIZED_POOL2D_PARAMS)
{
    quantized_pool2d<signed char, true>(input, output, QUANTIZED_POOL2D_ARGS);
}

extern "C" __global__ void quantized_max_pool2d_u8(
    const unsigned char* __restrict__ input, unsigned char* __restrict__ output, QUANTIZED_POOL2D_PARAMS)
{
    quantized_pool2d<unsigned char, true>(input, output, QUANTIZED_POOL2D_ARGS);
}
