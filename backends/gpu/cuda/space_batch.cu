// SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND (float32 / float16 storage, int8 / uint8), one
// launch per node: values are moved, never computed (element types by size: 1, 2 or 4 bytes).
// TFLite's reference kernels (backends/cpu/kernels/space_depth.py), NHWC; a 3-D input
// [N, H, C] is seen as [N, H, 1, C] with block width 1 and no padding along W.
//
// SPACE_TO_BATCH_ND (space_to_batch_*): input [n, in_h, in_w, c], block [bh, bw], paddings
// top / left (bottom / right follow from the output's shape); output
// [bh * bw * n, out_h, out_w, c], one thread per output element:
//   ob = (i * bw + j) * n + b    ih = oh * bh + i - top    iw = ow * bw + j - left
//   out[ob, oh, ow, ch] = in[b, ih, iw, ch] inside the input, else fill
// fill: the bits of 0 for floats, the output's zero point for 8-bit tensors (TFLite's memset).
//
// BATCH_TO_SPACE_ND (batch_to_space_*): input [bh * bw * n, in_h, in_w, c], crops top / left;
// output [n, out_h, out_w, c]:
//   h = oh + top    w = ow + left
//   out[b, oh, ow, ch] = in[((h % bh) * bw + w % bw) * n + b, h / bh, w / bw, ch]
//
// Launch: 1-D over the output (sources.elementwise_launch_config). This file must compile
// with NVRTC (no system headers; coordinates.cuh is spliced in) and with g++ through
// host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#include "coordinates.cuh"  // coordinates_4d: an output element's (batch, h, w, channel)

// The arguments of both ops (cuda/space_batch.py's argument lists; SPACE_TO_BATCH_ND adds the
// fill), and the arguments that pass them on.
#define SPACE_BATCH_PARAMS(Element)                                                             \
    const Element* __restrict__ input, Element* __restrict__ output, int n, int in_h, int in_w,  \
    int c, int out_h, int out_w, int bh, int bw, int top, int left
#define SPACE_BATCH_ARGS input, output, n, in_h, in_w, c, out_h, out_w, bh, bw, top, left

template <typename Element>
__device__ __forceinline__ void space_to_batch(SPACE_BATCH_PARAMS(Element), Element fill)
{
    const long long total = (long long)bh * bw * n * out_h * out_w * c;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;
    const Coordinates4d<int> o = coordinates_4d(index, out_h, out_w, c);  // ob, oh, ow, ch
    const int ob = o.i0, oh = o.i1, ow = o.i2, ch = o.i3;
    const int b = ob % n;
    const int offset = ob / n;  // i * bw + j
    const int ih = oh * bh + offset / bw - top;
    const int iw = ow * bw + offset % bw - left;
    const bool inside = ih >= 0 && ih < in_h && iw >= 0 && iw < in_w;
    output[index] = inside ? input[(((long long)b * in_h + ih) * in_w + iw) * c + ch] : fill;
}

template <typename Element>
__device__ __forceinline__ void batch_to_space(SPACE_BATCH_PARAMS(Element))
{
    const long long total = (long long)n * out_h * out_w * c;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;
    const Coordinates4d<int> o = coordinates_4d(index, out_h, out_w, c);  // b, oh, ow, ch
    const int b = o.i0, oh = o.i1, ow = o.i2, ch = o.i3;
    const int h = oh + top;
    const int w = ow + left;
    const int ib = ((h % bh) * bw + w % bw) * n + b;
    output[index] = input[(((long long)ib * in_h + h / bh) * in_w + w / bw) * c + ch];
}

extern "C" __global__ void space_to_batch_b8(SPACE_BATCH_PARAMS(unsigned char), unsigned char fill)
{
    space_to_batch<unsigned char>(SPACE_BATCH_ARGS, fill);
}

extern "C" __global__ void space_to_batch_b16(SPACE_BATCH_PARAMS(unsigned short), unsigned short fill)
{
    space_to_batch<unsigned short>(SPACE_BATCH_ARGS, fill);
}

extern "C" __global__ void space_to_batch_b32(SPACE_BATCH_PARAMS(unsigned int), unsigned int fill)
{
    space_to_batch<unsigned int>(SPACE_BATCH_ARGS, fill);
}

extern "C" __global__ void batch_to_space_b8(SPACE_BATCH_PARAMS(unsigned char))
{
    batch_to_space<unsigned char>(SPACE_BATCH_ARGS);
}

extern "C" __global__ void batch_to_space_b16(SPACE_BATCH_PARAMS(unsigned short))
{
    batch_to_space<unsigned short>(SPACE_BATCH_ARGS);
}

extern "C" __global__ void batch_to_space_b32(SPACE_BATCH_PARAMS(unsigned int))
{
    batch_to_space<unsigned int>(SPACE_BATCH_ARGS);
}
