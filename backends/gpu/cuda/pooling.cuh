// The window walks of the pooling kernels, float (pool2d.cu) and quantized (int8_windows.cu):
// which output a thread computes and the reduction of the input elements it reads. The kernels
// differ only in how a stored value is read (a functor: load_as_float, or the raw integer) and
// in what they do with the result (their own division or requantization, and the store).
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
// left-pads the shape with 1s), reduce_k 1 for a reduced axis. One thread per output element:
// the output's elements are the kept coordinates in row-major order (keep_dims or not, the
// order is the same). mean_sum gives the sum of the reduced elements, in row-major order of the
// reduced axes, starting from 0, with an `add` functor (float, or wrapping int32), and their
// count.
//
// Launch: 1-D, blockDim.x * gridDim.x >= the outputs; a thread past the end gets false.
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

// The reduced elements of this thread's output element (the kept coordinates, row-major):
// sum = add(sum, p) for each reduced element p, from 0.
template <typename T, typename Acc, typename Add>
__device__ __forceinline__ bool mean_sum(
    const T* __restrict__ input, MEAN_AXES_PARAMS, const Add add, Pooled<Acc>& pooled)
{
    // Extents of the kept axes (1 where reduced) and of the reduced ones (1 where kept).
    const int k0 = reduce0 ? 1 : d0, k1 = reduce1 ? 1 : d1, k2 = reduce2 ? 1 : d2, k3 = reduce3 ? 1 : d3;
    const int r0 = reduce0 ? d0 : 1, r1 = reduce1 ? d1 : 1, r2 = reduce2 ? d2 : 1, r3 = reduce3 ? d3 : 1;
    const long long total = (long long)k0 * k1 * k2 * k3;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return false;

    long long rest = index;
    const int c3 = (int)(rest % k3);
    rest /= k3;
    const int c2 = (int)(rest % k2);
    rest /= k2;
    const int c1 = (int)(rest % k1);
    const int c0 = (int)(rest / k1);

    Acc sum = Acc(0);
    for (int a0 = 0; a0 < r0; ++a0) {
        for (int a1 = 0; a1 < r1; ++a1) {
            for (int a2 = 0; a2 < r2; ++a2) {
                const long long row = (((long long)(c0 + a0) * d1 + (c1 + a1)) * d2 + (c2 + a2)) * d3 + c3;
                for (int a3 = 0; a3 < r3; ++a3) sum = add(sum, input + row + a3);
            }
        }
    }
    pooled.index = index;
    pooled.value = sum;
    pooled.count = (long long)r0 * r1 * r2 * r3;
    return true;
}

#endif  // LITEDELEGATE_POOLING_CUH
