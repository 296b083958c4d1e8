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
// A is never materialised: each kernel gathers its tiles of A with these helpers (which tap a k
// is, where A[m, k] lies in the input), on conv2d_window.cuh's placement of a pixel and address
// of a tap (the direct kernels' too), and stores C through epilogue.cuh's store_conv_output (bias,
// clamp, fused epilogue; every float convolution's). Grid: grid.x = tiles of TILE_M pixels,
// grid.y = groups * tiles of TILE_N channels. Needs storage.cuh, epilogue.cuh and
// conv2d_window.cuh before it; each .cu that needs it says `#include "conv2d_gemm.cuh"`, and
// sources.read_source splices this text in there.
//
// (When these helpers were first written, two forms changed the kernels' code generation and
// stayed out: the block's placement (group, n0, m0, depth, ...) as a struct, and the pixels as
// one struct of arrays.)

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
    if (!(tap.inside && p.valid && tap_input(group_input, p, tap.ky, tap.kx, in_h, in_w, in_channels, dilation_h, dilation_w, at))) {
        return false;
    }
    at += tap.i;
    return true;
}

#endif  // LITEDELEGATE_CONV2D_GEMM_CUH
