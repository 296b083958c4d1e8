// The pooling kernels, float (pool2d.cu) and quantized (int8_windows.cu), as one template over
// the accumulator (pool2d), and the window walks of the pools and MEANs: which output a thread
// computes and the reduction of the input elements it reads. The kernels differ only in how a
// stored value is read (a functor: load_as_float, or the raw integer) and in what they do with
// the result (their own division or requantization, and the store: another functor).
//
// AVERAGE_POOL_2D / MAX_POOL_2D, NHWC, one thread per output element (batch, y, x, channel):
//   input  [batches, in_h, in_w, channels]
//   output [batches, out_h, out_w, channels]
// The window of output (oy, ox) starts at input row oy * stride_h - pad_top and column
// ox * stride_w - pad_left and is clipped to the input, as TFLite's reference Pool: only the
// inside elements count. pool2d_window gives their max (a running max that takes v when
// max < v, std::max(max, v), starting from `lowest`: a NaN never wins) or their sum (in the
// order ky, then kx, starting from 0), and how many they are (never 0).
//
// MEAN over constant axes (a pool over whole axes): the input seen as [d0, d1, d2, d3] (the host
// left-pads the shape with 1s), reduce_k 1 for a reduced axis. The output's elements are the kept
// coordinates in row-major order (keep_dims or not, the order is the same). mean_sum gives one
// thread's output the sum of its reduced elements, in row-major order of the reduced axes,
// starting from 0, with an `add` functor (float, or wrapping int32), and their count;
// mean_slice_sum a slice of them, for an output that several threads sum (mean_output says
// where an output's elements are).
//
// Launch (pool2d_window, mean_sum): 1-D, blockDim.x * gridDim.x >= the outputs; a thread past
// the end gets false.
// Each .cu that needs this says `#include "pooling.cuh"`; sources.read_source splices this text
// in there.

#ifndef LITEDELEGATE_POOLING_CUH
#define LITEDELEGATE_POOLING_CUH

// The geometry of a pool and the axes of a MEAN, int32 scalars in this order, as the kernels
// take them (cuda/windows.py's and int8_windows.py's argument lists), and the arguments that
// pass them on.
#define POOL2D_WINDOW_PARAMS                                                                    \
    int batches, int in_h, int in_w, int channels, int out_h, int out_w, int filter_h,       \
    int filter_w, int stride_h, int stride_w, int pad_top, int pad_left
#define POOL2D_WINDOW_ARGS                                                                      \
    batches, in_h, in_w, channels, out_h, out_w, filter_h, filter_w, stride_h, stride_w,     \
    pad_top, pad_left
#define MEAN_AXES_PARAMS int d0, int d1, int d2, int d3, int reduce0, int reduce1, int reduce2, int reduce3
#define MEAN_AXES_ARGS d0, d1, d2, d3, reduce0, reduce1, reduce2, reduce3

// One output element of a pool and the reduction of its window.
template <typename Acc>
struct Pooled {
    long long index;  // the output element
    Acc value;        // the max or the sum of its input elements
    long long count;  // how many they are
};

// The window of this thread's output element ((b * out_h + oy) * out_w + ox) * channels + c:
// its max (IsMax, starting from `lowest`) or its sum, of the values load(p) for p in the window.
template <bool IsMax, typename T, typename Acc, typename Load>
__device__ __forceinline__ bool pool2d_window(
    const T* __restrict__ input, POOL2D_WINDOW_PARAMS, Acc lowest, const Load load, Pooled<Acc>& pooled)
{
    const long long total = (long long)batches * out_h * out_w * channels;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return false;

    // index = ((b * out_h + oy) * out_w + ox) * channels + c
    long long rest = index;
    const int c = (int)(rest % channels);
    rest /= channels;
    const int ox = (int)(rest % out_w);
    rest /= out_w;
    const int oy = (int)(rest % out_h);
    const int b = (int)(rest / out_h);

    // The window clipped to the input, as TFLite: filter rows [ky_start, ky_end).
    const int in_y_origin = oy * stride_h - pad_top;
    const int in_x_origin = ox * stride_w - pad_left;
    const int ky_start = in_y_origin < 0 ? -in_y_origin : 0;
    const int ky_end = in_h - in_y_origin < filter_h ? in_h - in_y_origin : filter_h;
    const int kx_start = in_x_origin < 0 ? -in_x_origin : 0;
    const int kx_end = in_w - in_x_origin < filter_w ? in_w - in_x_origin : filter_w;
    const long long batch_offset = (long long)b * in_h * in_w * channels;

    Acc acc = IsMax ? lowest : Acc(0);
    for (int ky = ky_start; ky < ky_end; ++ky) {
        const long long row = batch_offset + (long long)(in_y_origin + ky) * in_w * channels;
        for (int kx = kx_start; kx < kx_end; ++kx) {
            const Acc v = load(input + row + (long long)(in_x_origin + kx) * channels + c);
            if (IsMax) {
                acc = acc < v ? v : acc;  // std::max(acc, v): NaN loses
            } else {
                acc += v;
            }
        }
    }
    pooled.index = index;
    pooled.value = acc;
    pooled.count = (ky_end - ky_start) * (kx_end - kx_start);
    return true;
}

// The pool of this thread's output, whatever its accumulator (float for pool2d.cu, int32 for
// int8_windows.cu): its window's max (IsMax, from `lowest`) or sum of load(p) (pool2d_window),
// then the kernel's own finish(value, count, output + index): the average's division, the clamp,
// the store.
template <bool IsMax, typename T, typename Acc, typename Load, typename Finish>
__device__ __forceinline__ void pool2d(
    const T* __restrict__ input, T* __restrict__ output, POOL2D_WINDOW_PARAMS, Acc lowest, const Load load,
    const Finish finish)
{
    Pooled<Acc> pooled;
    if (!pool2d_window<IsMax>(input, POOL2D_WINDOW_ARGS, lowest, load, pooled)) {
        return;  // the last block is partial
    }
    finish(pooled.value, pooled.count, output + pooled.index);
}

// Output `index` of a MEAN (its kept coordinates, row-major): where its first reduced element
// sits in the input, and the extents of the reduced axes (1 where kept).
struct MeanOutput {
    long long origin;
    int r0, r1, r2, r3;
    __device__ __forceinline__ long long count() const { return (long long)r0 * r1 * r2 * r3; }
};

// The outputs of a MEAN (the kept elements), and output `index`'s MeanOutput.
__device__ __forceinline__ long long mean_outputs(MEAN_AXES_PARAMS) {
    return (long long)(reduce0 ? 1 : d0) * (reduce1 ? 1 : d1) * (reduce2 ? 1 : d2) * (reduce3 ? 1 : d3);
}

__device__ __forceinline__ MeanOutput mean_output(long long index, MEAN_AXES_PARAMS) {
    // Extents of the kept axes (1 where reduced) and of the reduced ones (1 where kept).
    const int k1 = reduce1 ? 1 : d1, k2 = reduce2 ? 1 : d2, k3 = reduce3 ? 1 : d3;
    long long rest = index;
    const int c3 = (int)(rest % k3);
    rest /= k3;
    const int c2 = (int)(rest % k2);
    rest /= k2;
    const int c1 = (int)(rest % k1);
    const int c0 = (int)(rest / k1);
    MeanOutput out;
    out.origin = (((long long)c0 * d1 + c1) * d2 + c2) * d3 + c3;
    out.r0 = reduce0 ? d0 : 1;
    out.r1 = reduce1 ? d1 : 1;
    out.r2 = reduce2 ? d2 : 1;
    out.r3 = reduce3 ? d3 : 1;
    return out;
}

// The reduced elements of this thread's output element (the kept coordinates, row-major):
// sum = add(sum, p) for each reduced element p, from 0.
template <typename T, typename Acc, typename Add>
__device__ __forceinline__ bool mean_sum(
    const T* __restrict__ input, MEAN_AXES_PARAMS, const Add add, Pooled<Acc>& pooled)
{
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= mean_outputs(MEAN_AXES_ARGS)) return false;
    const MeanOutput out = mean_output(index, MEAN_AXES_ARGS);

    Acc sum = Acc(0);
    for (int a0 = 0; a0 < out.r0; ++a0) {
        for (int a1 = 0; a1 < out.r1; ++a1) {
            for (int a2 = 0; a2 < out.r2; ++a2) {
                const long long row = out.origin + (((long long)a0 * d1 + a1) * d2 + a2) * d3;
                for (int a3 = 0; a3 < out.r3; ++a3) sum = add(sum, input + row + a3);
            }
        }
    }
    pooled.index = index;
    pooled.value = sum;
    pooled.count = out.count();
    return true;
}

// Every step-th reduced element of `out` from the first-th (row-major over the reduced axes):
// sum = add(sum, p) for each, from `sum`. A slice of mean_sum's elements, for a sum that several
// threads share (the quantized MEAN: int8_windows.cu).
template <typename T, typename Acc, typename Add>
__device__ __forceinline__ Acc mean_slice_sum(
    const T* __restrict__ input, int d1, int d2, int d3, const MeanOutput& out, long long first, long long step,
    Acc sum, const Add add)
{
    for (long long e = first; e < out.count(); e += step) {
        long long rest = e;
        const int a3 = (int)(rest % out.r3);
        rest /= out.r3;
        const int a2 = (int)(rest % out.r2);
        rest /= out.r2;
        const int a1 = (int)(rest % out.r1);
        const int a0 = (int)(rest / out.r1);
        sum = add(sum, input + out.origin + (((long long)a0 * d1 + a1) * d2 + a2) * d3 + a3);
    }
    return sum;
}

#endif  // LITEDELEGATE_POOLING_CUH
