// The implicit GEMM of the tiled convolutions (conv2d_tiled.cu in float32 sums, conv2d_mma.cu on
// tensor cores): what they share around their own tiles and products. Per group g:
//
//   C[m, n] = sum_k A[m, k] * B[k, n]
//   m = output pixel (b, oy, ox)               M = batches * out_h * out_w
//   n = output channel within the group        N = O
//   k = (ky * filter_w + kx) * I + i           K = filter_h * filter_w * I   (TFLite's (ky, kx, i) order)
//   A[m, k] = input[b, oy * stride_h + ky * dilation_h - pad_top, ox * stride_w + kx * dilation_w - pad_left, g * I + i]
//             (0 where the tap falls outside the input)
//   B[k, n] = filter[g, ky, kx, i, n]          (conv2d.cu's [groups, KH, KW, I, O] layout: B is [K, O], row-major)
//
// A is never materialised: each kernel gathers its tiles of A with these helpers (where a thread's
// pixels sit, which tap a k is, where A[m, k] lies in the input), and stores C through the same
// output stage (bias, clamp, fused epilogue). Grid: grid.x = tiles of TILE_M pixels, grid.y =
// groups * tiles of TILE_N channels. Needs storage.cuh and epilogue.cuh before it; each .cu that
// needs it says `#include "conv2d_gemm.cuh"`, and sources.read_source splices this text in there.
//
// The helpers keep the kernels' code generation: NVRTC's PTX is byte for byte that of the kernels
// written out by hand (conv2d_tiled.cu for compute_75/80/90, conv2d_mma.cu for compute_80/90).
// Two forms that did not, and so stay out: the block's placement (group, n0, m0, depth, ...) as a
// struct, and the pixels as one struct of arrays; GemmTap's field order is the one that keeps it.

#ifndef LITEDELEGATE_CONV2D_GEMM_CUH
#define LITEDELEGATE_CONV2D_GEMM_CUH

// The arguments of the kernels' bodies: the operands, the geometry and the clamp, then the fused
// epilogue (epilogue.cuh) as one Epilogue.
#define CONV2D_GEMM_OPERANDS(T)                                                                         \
    const T* __restrict__ input, const T* __restrict__ filter, const T* __restrict__ bias,              \
    T* __restrict__ output,                                                                              \
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int out_channels, int groups, \
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,             \
    int pad_top, int pad_left, float act_min, float act_max
#define CONV2D_GEMM_BODY_PARAMS(T) CONV2D_GEMM_OPERANDS(T), const Epilogue epilogue

// The entry points' arguments (conv2d.cu's conv2d_fused_*: the epilogue's residual,
// residual_channels, add_min, add_max, alpha, post_min, post_max; a null residual and alpha and
// -inf..inf clamps for none), and the arguments that pass them to a kernel's body.
#define CONV2D_GEMM_PARAMS(T)                                                                           \
    CONV2D_GEMM_OPERANDS(T),                                                                            \
    const T* __restrict__ residual, int residual_channels, float add_min, float add_max,                \
    const T* __restrict__ alpha, float post_min, float post_max

#define CONV2D_GEMM_ARGS                                                                                \
    input, filter, bias, output, batches, in_h, in_w, in_channels, out_h, out_w, out_channels, groups,  \
    filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, act_min, act_max, \
    make_epilogue(residual, residual_channels, add_min, add_max, alpha, post_min, post_max)

// An output pixel m whose row of A a thread gathers: its image's offset in the input, the input
// position of its tap (0, 0), and whether it exists (one past the end is placed at pixel 0 and
// gathers nothing).
struct GatherPixel {
    long long image;
    int y, x;
    bool valid;
};

__device__ __forceinline__ GatherPixel locate_pixel(
    long long m, long long pixels, int in_h, int in_w, int in_channels, int out_h, int out_w,
    int stride_h, int stride_w, int pad_top, int pad_left)
{
    GatherPixel p;
    p.valid = m < pixels;
    const long long pixel = p.valid ? m : 0;
    const int ox = (int)(pixel % out_w);
    const long long rest = pixel / out_w;
    const int oy = (int)(rest % out_h);
    p.image = (rest / out_h) * in_h * in_w * in_channels;
    p.y = oy * stride_h - pad_top;
    p.x = ox * stride_w - pad_left;
    return p;
}

// The LOADS pixels first, first + ROWS, ... that a thread gathers rows of A for.
template <int LOADS, int ROWS>
__device__ __forceinline__ void locate_pixels(
    GatherPixel (&p)[LOADS], long long first, long long pixels, int in_h, int in_w, int in_channels,
    int out_h, int out_w, int stride_h, int stride_w, int pad_top, int pad_left)
{
    for (int j = 0; j < LOADS; ++j) {
        p[j] = locate_pixel(first + j * ROWS, pixels, in_h, in_w, in_channels, out_h, out_w, stride_h, stride_w, pad_top, pad_left);
    }
}

// Column k of A: the tap (ky, kx) and the group's input channel i (all 0 for k past the depth).
struct GemmTap {
    bool inside;  // k < K
    int kx, ky, i;
};

__device__ __forceinline__ GemmTap gemm_tap(int k, int depth, int group_in, int filter_w) {
    GemmTap tap;
    tap.inside = k < depth;
    tap.ky = 0;
    tap.kx = 0;
    tap.i = 0;
    if (tap.inside) {
        tap.i = k % group_in;
        const int tap_index = k / group_in;
        tap.kx = tap_index % filter_w;
        tap.ky = tap_index / filter_w;
    }
    return tap;
}

// Whether A[pixel p, tap] lies in the input (not for a pixel past the end, a k past the depth or
// a tap outside the input, where A is 0); if so, `at` is where, in the group's input.
template <typename Storage>
__device__ __forceinline__ bool gather_at(
    const Storage* group_input, const GatherPixel& p, const GemmTap& tap,
    int in_h, int in_w, int in_channels, int dilation_h, int dilation_w, const Storage*& at)
{
    const int iy = p.y + tap.ky * dilation_h;
    const int ix = p.x + tap.kx * dilation_w;
    if (!(tap.inside && p.valid && iy >= 0 && iy < in_h && ix >= 0 && ix < in_w)) return false;
    at = group_input + p.image + ((long long)iy * in_w + ix) * in_channels + tap.i;
    return true;
}

// The output stage of C[pixel, n] = sum (conv2d.cu's): the bias, the clamp (TFLite's
// ActivationFunctionWithMinMax: NaN propagates), the fused nodes, stored at output channel oc.
template <typename Storage>
__device__ __forceinline__ void store_conv_output(
    Storage* output, const Storage* bias, float sum, long long pixel, int oc, int out_channels,
    float act_min, float act_max, const Epilogue& epilogue)
{
    float value = bias != nullptr ? sum + load_as_float(bias + oc) : sum;
    value = value < act_min ? act_min : value;
    value = value > act_max ? act_max : value;
    store_from_float(output + pixel * out_channels + oc, apply_epilogue<Storage>(epilogue, value, pixel, oc));
}

#endif  // LITEDELEGATE_CONV2D_GEMM_CUH
