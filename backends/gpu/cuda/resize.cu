// RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR, versions 1 and 3 (float), NHWC: one thread
// per output element (batch, y, x, channel), TFLite's reference kernels
// (backends/cpu/kernels/resize.py).
//
// Shapes:
//   input  [batches, in_h, in_w, channels]
//   output [batches, out_h, out_w, channels]
// The source coordinates are computed on the host at prepare with the CPU kernel's own
// float32 functions (TFLite's exact index arithmetic: align_corners, half_pixel_centers)
// and uploaded once:
//   bilinear: rows [2, out_h] int32 (y0, then y1), cols [2, out_w] int32 (x0, then x1),
//             wy [2, out_h] float32 (1 - dy, then dy), wx [2, out_w] float32 (1 - dx, dx)
//     out[b, oy, ox, c] = in[b, y0, x0, c] * (1-dy) * (1-dx) + in[b, y1, x0, c] * dy * (1-dx)
//                       + in[b, y0, x1, c] * (1-dy) * dx     + in[b, y1, x1, c] * dy * dx
//     in float32, in exactly TFLite's order of operations: products left to right, sums
//     left to right, each rounded (no fused multiply-add: NVRTC would contract a*b + c
//     into an fma, hence the _rn intrinsics), so the result is the bits of the numpy twin.
//   nearest:  rows [out_h] int32, cols [out_w] int32
//     out[b, oy, ox, c] = in[b, rows[oy], cols[ox], c]   (the value moved, bits unchanged)
//
// Storage float32 or float16 (binary16 bit patterns); bilinear computes in float32.
// Launch: 1-D, blockDim.x * gridDim.x >= batches * out_h * out_w * channels
// (cuda/windows.py: ResizeBilinearCuda, ResizeNearestCuda). This file must compile with
// NVRTC (no system headers; storage.cuh is spliced in) and with g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

// ---- storage types ---------------------------------------------------------------------------

#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns

// Rounded float32 product and sum, never contracted into a fused multiply-add. g++ does not
// contract without FMA instructions (the host shim builds for plain x86-64).
__device__ __forceinline__ float mul_rn(float a, float b) {
#ifdef CUDA_HOST_SHIM
    return a * b;
#else
    return __fmul_rn(a, b);
#endif
}

__device__ __forceinline__ float add_rn(float a, float b) {
#ifdef CUDA_HOST_SHIM
    return a + b;
#else
    return __fadd_rn(a, b);
#endif
}

// index = ((b * out_h + oy) * out_w + ox) * channels + c
__device__ __forceinline__ void split_index(
    long long index, int out_h, int out_w, int channels, int& b, int& oy, int& ox, int& c)
{
    c = (int)(index % channels);
    index /= channels;
    ox = (int)(index % out_w);
    index /= out_w;
    oy = (int)(index % out_h);
    b = (int)(index / out_h);
}

// ---- bilinear -------------------------------------------------------------------------------

template <typename Storage>
__device__ __forceinline__ void resize_bilinear_nhwc(
    const Storage* __restrict__ input, const int* __restrict__ rows, const int* __restrict__ cols,
    const float* __restrict__ wy, const float* __restrict__ wx, Storage* __restrict__ output,
    int batches, int in_h, int in_w, int channels, int out_h, int out_w)
{
    const long long total = (long long)batches * out_h * out_w * channels;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;  // the last block is partial
    int b, oy, ox, c;
    split_index(index, out_h, out_w, channels, b, oy, ox, c);

    const long long image = (long long)b * in_h;
    const long long top = (image + rows[oy]) * in_w;          // row y0
    const long long bottom = (image + rows[out_h + oy]) * in_w;  // row y1
    const int x0 = cols[ox], x1 = cols[out_w + ox];
    const float a = load_as_float(input + (top + x0) * channels + c);
    const float bl = load_as_float(input + (bottom + x0) * channels + c);
    const float tr = load_as_float(input + (top + x1) * channels + c);
    const float d = load_as_float(input + (bottom + x1) * channels + c);
    const float wy0 = wy[oy], wy1 = wy[out_h + oy];  // 1 - dy, dy
    const float wx0 = wx[ox], wx1 = wx[out_w + ox];  // 1 - dx, dx

    float value = mul_rn(mul_rn(a, wy0), wx0);
    value = add_rn(value, mul_rn(mul_rn(bl, wy1), wx0));
    value = add_rn(value, mul_rn(mul_rn(tr, wy0), wx1));
    value = add_rn(value, mul_rn(mul_rn(d, wy1), wx1));
    store_from_float(output + index, value);
}

extern "C" __global__ void resize_bilinear_f32(
    const float* __restrict__ input, const int* __restrict__ rows, const int* __restrict__ cols,
    const float* __restrict__ wy, const float* __restrict__ wx, float* __restrict__ output,
    int batches, int in_h, int in_w, int channels, int out_h, int out_w)
{
    resize_bilinear_nhwc<float>(input, rows, cols, wy, wx, output, batches, in_h, in_w, channels, out_h, out_w);
}

extern "C" __global__ void resize_bilinear_f16(
    const unsigned short* __restrict__ input, const int* __restrict__ rows, const int* __restrict__ cols,
    const float* __restrict__ wy, const float* __restrict__ wx, unsigned short* __restrict__ output,
    int batches, int in_h, int in_w, int channels, int out_h, int out_w)
{
    resize_bilinear_nhwc<unsigned short>(input, rows, cols, wy, wx, output, batches, in_h, in_w, channels, out_h, out_w);
}

// ---- nearest neighbour ----------------------------------------------------------------------

template <typename Storage>
__device__ __forceinline__ void resize_nearest_nhwc(
    const Storage* __restrict__ input, const int* __restrict__ rows, const int* __restrict__ cols,
    Storage* __restrict__ output, int batches, int in_h, int in_w, int channels, int out_h, int out_w)
{
    const long long total = (long long)batches * out_h * out_w * channels;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;
    int b, oy, ox, c;
    split_index(index, out_h, out_w, channels, b, oy, ox, c);
    output[index] = input[(((long long)b * in_h + rows[oy]) * in_w + cols[ox]) * channels + c];
}

extern "C" __global__ void resize_nearest_f32(
    const float* __restrict__ input, const int* __restrict__ rows, const int* __restrict__ cols,
    float* __restrict__ output, int batches, int in_h, int in_w, int channels, int out_h, int out_w)
{
    resize_nearest_nhwc<float>(input, rows, cols, output, batches, in_h, in_w, channels, out_h, out_w);
}

extern "C" __global__ void resize_nearest_f16(
    const unsigned short* __restrict__ input, const int* __restrict__ rows, const int* __restrict__ cols,
    unsigned short* __restrict__ output, int batches, int in_h, int in_w, int channels, int out_h, int out_w)
{
    resize_nearest_nhwc<unsigned short>(input, rows, cols, output, batches, in_h, in_w, channels, out_h, out_w);
}
