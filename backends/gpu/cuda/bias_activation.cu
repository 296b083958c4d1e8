// Fused epilogue of a matmul-based convolution or fully-connected layer: in place on
// values [rows, channels] (any leading shape flattened into rows),
//   values[r, c] = clamp(values[r, c] + bias[c], act_min, act_max)
// in one pass instead of an add and a clip. bias may be null (clamp only). The clamp range
// comes from the host (sources.activation_range): NVRTC has no FLT_MAX or INFINITY.
// One thread per element; float32 arithmetic for both storage types.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

// ---- storage types (the same as depthwise_conv2d.cu: each .cu is compiled on its own) -----
__device__ __forceinline__ float load_as_float(const float* p) { return *p; }
__device__ __forceinline__ void store_from_float(float* p, float v) { *p = v; }

__device__ __forceinline__ float load_as_float(const unsigned short* p) {
#ifdef CUDA_HOST_SHIM
    return cuda_host::half_bits_to_float(*p);
#else
    float value;
    asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(*p));
    return value;
#endif
}

__device__ __forceinline__ void store_from_float(unsigned short* p, float v) {
#ifdef CUDA_HOST_SHIM
    *p = cuda_host::float_to_half_bits(v);
#else
    unsigned short bits;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(v));  // round to nearest even
    *p = bits;
#endif
}

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
