// The second kernel of the vendor GEMM's candidates (cuda/cublas.py). Float: cuBLAS leaves the float32
// products acc [rows, channels] (row-major: a pixel or a row of the product per row), this
// kernel adds the bias, clamps to the fused activation's range, applies the epilogue that
// backends/gpu/fusion.py folded into a convolution (epilogue.cuh: residual ADD, PRELU, RELU),
// and stores the storage dtype:
//
//   out[r, c] = apply_epilogue(clamp(acc[r, c] + bias[c], act_min, act_max))
//
// the arithmetic of conv2d.cu's and matmul.cu's output stage, so a candidate that adds its
// products in another order still stores what the hand-written kernels store for the same sums.
// bias may be null; the clamp range comes from the host (sources.activation_range: NVRTC has
// no FLT_MAX or INFINITY). One thread per element.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#include "storage.cuh"   // load_as_float / store_from_float for float and float16 bit patterns
#include "epilogue.cuh"  // Epilogue, apply_epilogue, clamp_to
#include "fixed_point.cuh"  // wrapping_add, rescale_double: TFLite's integer arithmetic, written once

template <typename Storage>
__device__ __forceinline__ void gemm_epilogue(
    const float* __restrict__ acc, const Storage* __restrict__ bias, Storage* __restrict__ out,
    long long total, int channels, float act_min, float act_max, const Epilogue& epilogue)
{
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;  // the last block is partial
    const int channel = (int)(index % channels);
    float value = acc[index];
    if (bias != nullptr) value += load_as_float(bias + channel);
    value = clamp_to(value, act_min, act_max);
    store_from_float(out + index, apply_epilogue<Storage>(epilogue, value, index / channels, channel));
}

#define GEMM_EPILOGUE_PARAMS(Storage)                                                              \
    const float* __restrict__ acc, const Storage* __restrict__ bias, Storage* __restrict__ out,    \
    long long total, int channels, float act_min, float act_max,                                   \
    const void* residual, int residual_channels, float add_min, float add_max,                     \
    const void* alpha, float post_min, float post_max

extern "C" __global__ void gemm_epilogue_f32(GEMM_EPILOGUE_PARAMS(float))
{
    const Epilogue e = make_epilogue(residual, residual_channels, add_min, add_max, alpha, post_min, post_max);
    gemm_epilogue<float>(acc, bias, out, total, channels, act_min, act_max, e);
}

extern "C" __global__ void gemm_epilogue_f16(GEMM_EPILOGUE_PARAMS(unsigned short))
{
    const Epilogue e = make_epilogue(residual, residual_channels, add_min, add_max, alpha, post_min, post_max);
    gemm_epilogue<unsigned short>(acc, bias, out, total, channels, act_min, act_max, e);
}

// ---- int8: the requantization after cuBLAS's int8 x int8 -> int32 product -------------------------
//
// cuBLAS leaves acc[r, c] = sum_d x[r, d] * w[d, c] (int32; the weights' zero point is 0, as
// TFLite's int8 FULLY_CONNECTED has it); the input's zero point comes back through the column
// sums of the weights, then TFLite's double rescale (fixed_point.cuh, the CPU's rescale_double):
//
//   out[r, c] = rescale_double(acc[r, c] + input_offset * sums[c] + bias[c], scales[c], out_zp, low, high)
//
// the value fully_connected_int8.cu computes from sum_d (x + input_offset) * w + bias. The
// additions wrap as TFLite's int32 accumulator does (the candidate applies only where none can).

extern "C" __global__ void gemm_requantize_int8(
    const int* __restrict__ acc, const int* __restrict__ bias, const int* __restrict__ sums,
    const double* __restrict__ scales, signed char* __restrict__ out, long long total, int channels,
    int input_offset, int output_offset, int low, int high)
{
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;  // the last block is partial
    const int channel = (int)(index % channels);
    int value = wrapping_add(acc[index], wrapping_mul(input_offset, sums[channel]));
    if (bias != nullptr) value = wrapping_add(value, bias[channel]);
    out[index] = (signed char)rescale_double(value, scales[channel], output_offset, low, high);
}
