// Fused epilogue of a matmul-based convolution or fully-connected layer: in place on
// values [rows, channels] (any leading shape flattened into rows),
//   values[r, c] = clamp(values[r, c] + bias[c], act_min, act_max)
// in one pass instead of an add and a clip. bias may be null (clamp only). The clamp range
// comes from the host (sources.activation_range): NVRTC has no FLT_MAX or INFINITY.
// One thread per element; float32 arithmetic for both storage types.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

// ---- storage types ---------------------------------------------------------------------------
#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns

template <typename Storage>
__device__ __forceinline__ void bias_activation(
    Storage* __restrict__ values, const Storage* __restrict__ bias,
    long long total, int channels, float act_min, float act_max)
{
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;  // the last block is partial
    float value = load_as_float(values + index);
    if (bias != nullptr) value += load_as_float(bias + index % channels);
    // TFLite's ActivationFunctionWithMinMax: NaN propagates (fmaxf/fminf would drop it).
    value = value < act_min ? act_min : value;
    value = value > act_max ? act_max : value;
    store_from_float(values + index, value);
}

extern "C" __global__ void bias_activation_f32(
    float* __restrict__ values, const float* __restrict__ bias,
    long long total, int channels, float act_min, float act_max)
{
    bias_activation<float>(values, bias, total, channels, act_min, act_max);
}

extern "C" __global__ void bias_activation_f16(
    unsigned short* __restrict__ values, const unsigned short* __restrict__ bias,
    long long total, int channels, float act_min, float act_max)
{
    bias_activation<unsigned short>(values, bias, total, channels, act_min, act_max);
}
