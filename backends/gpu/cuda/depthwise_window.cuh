// The window walk of the depthwise convolution kernels: float direct (depthwise_conv2d.cu),
// float tiled (depthwise_conv2d_tiled.cu) and quantized (depthwise_conv2d_int8.cu). They differ
// only in where a tap's input value comes from (global memory, or the tiled kernel's shared
// patch), in the multiply-add (a functor) and in what they do with the sum (their own epilogue).
//
// Shapes (TFLite's layouts):
//   input  [batches, in_h, in_w, in_channels]
//   filter [1, filter_h, filter_w, out_channels]      out_channels = in_channels * multiplier
// Output channel oc reads input channel oc / multiplier:
//   acc[b, oy, ox, oc] = sum_{ky, kx} multiply_add of in[b, iy, ix, oc / multiplier] and filter[0, ky, kx, oc]
//   iy = oy * stride_h + ky * dilation_h - pad_top       (ix likewise)
// in the order (ky, kx) of TFLite's reference loop, starting from 0; taps outside the input are
// skipped (TFLite's reference reads nothing there).
//
// depthwise_taps walks the taps of one output; depthwise_sum is the direct kernels' whole walk,
// one thread per output element (batch, y, x, output channel), the channel fastest (a warp reads
// consecutive channels of one pixel: coalesced), with a multiply-add functor of two members, as
// conv2d_window.cuh's (conv_int8.cuh's QuantizedMultiplyAdd serves both):
//   W   weight(const T* w)                   a filter value
//   Acc operator()(Acc acc, W w, const T* x) acc plus the product of w and the input value x
//
// Needs coordinates.cuh (coordinates_4d), included before it. Each .cu that needs this says
// `#include "depthwise_window.cuh"`; sources.read_source splices this text in there.

#ifndef LITEDELEGATE_DEPTHWISE_WINDOW_CUH
#define LITEDELEGATE_DEPTHWISE_WINDOW_CUH

// The depthwise convolution's geometry as every layer of these kernels takes it, int32 scalars in
// this order (the entry points' too: windows.py's and conv_int8.py's argument lists), and the
// arguments that pass it on.
#define DEPTHWISE_WINDOW_PARAMS                                                                 \
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int multiplier,   \
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,   \
    int pad_top, int pad_left
#define DEPTHWISE_WINDOW_ARGS                                                                   \
    batches, in_h, in_w, in_channels, out_h, out_w, multiplier, filter_h, filter_w, stride_h, \
    stride_w, dilation_h, dilation_w, pad_top, pad_left

// The float kernels' (depthwise_conv2d.cu, depthwise_conv2d_tiled.cu) arrays, float32 or float16
// storage S (bias may be null), and the arguments of their fused epilogue (epilogue.cuh's
// make_epilogue), in the kernels' order, and the arguments that pass them on.
#define DEPTHWISE_FLOAT_TENSORS(S)                                                              \
    const S* __restrict__ input, const S* __restrict__ filter, const S* __restrict__ bias,    \
    S* __restrict__ output
#define DEPTHWISE_FLOAT_TENSOR_ARGS input, filter, bias, output
#define DEPTHWISE_EPILOGUE_PARAMS(S)                                                            \
    const S* __restrict__ residual, int residual_channels, float add_min, float add_max,      \
    const S* __restrict__ alpha, float post_min, float post_max
#define DEPTHWISE_EPILOGUE_ARGS residual, residual_channels, add_min, add_max, alpha, post_min, post_max

// The sum over the taps of one output whose tap (0, 0) sits at input (origin_y, origin_x):
// acc = tap(acc, iy, ix, ky * filter_w + kx) for each tap inside the input, ky then kx, from 0.
template <typename Acc, typename Tap>
__device__ __forceinline__ Acc depthwise_taps(
    int origin_y, int origin_x, int in_h, int in_w, int filter_h, int filter_w, int dilation_h, int dilation_w,
    const Tap tap)
{
    Acc acc = Acc(0);
    for (int ky = 0; ky < filter_h; ++ky) {
        // Version 2: dilation. Filter row ky reads the input dilation_h rows after row
        // ky - 1 (version 1 is dilation 1: adjacent rows). Same for columns below.
        const int iy = origin_y + ky * dilation_h;
        if (iy < 0 || iy >= in_h) continue;  // padding rows: skipped
        for (int kx = 0; kx < filter_w; ++kx) {
            const int ix = origin_x + kx * dilation_w;
            if (ix < 0 || ix >= in_w) continue;  // padding columns: skipped
            acc = tap(acc, iy, ix, ky * filter_w + kx);
        }
    }
    return acc;
}

// A tap of the direct kernels: the input and filter values in global memory, given to the
// kernel's multiply-add.
template <typename T, typename MultiplyAdd>
struct DepthwiseGlobalTap {
    const T* input;
    const T* filter;
    long long batch_offset;  // the output's image: b * in_h * in_w * in_channels
    int ic, oc, in_w, in_channels, out_channels;
    MultiplyAdd multiply_add;

    template <typename Acc>
    __device__ __forceinline__ Acc operator()(Acc acc, int iy, int ix, int tap) const {
        const long long in_offset = batch_offset + ((long long)iy * in_w + ix) * in_channels + ic;
        const int filter_offset = tap * out_channels + oc;
        return multiply_add(acc, multiply_add.weight(filter + filter_offset), input + in_offset);
    }
};

// One thread's output element of the direct kernels and the sum over its taps.
template <typename Acc>
struct DepthwiseSum {
    long long index;  // the output element, ((b * out_h + oy) * out_w + ox) * out_channels + oc
    int oc;           // its channel
    Acc acc;          // the sum
};

// The sum of this thread's output element (blockIdx, threadIdx) into `sum`; false for a thread
// past the end (the last block is partial), which has nothing to compute.
template <typename T, typename Acc, typename MultiplyAdd>
__device__ __forceinline__ bool depthwise_sum(
    const T* __restrict__ input,
    const T* __restrict__ filter,
    DEPTHWISE_WINDOW_PARAMS,
    const MultiplyAdd multiply_add,
    DepthwiseSum<Acc>& sum)
{
    const int out_channels = in_channels * multiplier;
    const long long total = (long long)batches * out_h * out_w * out_channels;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return false;

    const Coordinates4d<int> at = coordinates_4d(index, out_h, out_w, out_channels);  // b, oy, ox, oc
    const int oc = at.i3;
    const DepthwiseGlobalTap<T, MultiplyAdd> tap = {
        input, filter, (long long)at.i0 * in_h * in_w * in_channels,
        oc / multiplier,  // the input channel this output channel reads
        oc, in_w, in_channels, out_channels, multiply_add};
    sum.index = index;
    sum.oc = oc;
    sum.acc = depthwise_taps<Acc>(
        at.i1 * stride_h - pad_top, at.i2 * stride_w - pad_left, in_h, in_w, filter_h, filter_w,
        dilation_h, dilation_w, tap);
    return true;
}

#endif  // LITEDELEGATE_DEPTHWISE_WINDOW_CUH
