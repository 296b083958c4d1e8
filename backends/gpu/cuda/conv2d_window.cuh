// The direct convolution kernels, float (conv2d.cu) and quantized (conv2d_int8.cu), as one
// template over the accumulator (direct_convolution): which outputs a thread computes, where
// their windows sit in the input, and the sums over the taps. The kernels differ only in the
// multiply-add (a functor) and in their output stage (another). Where a pixel's windows sit and
// where a tap reads (locate_pixel, tap_input) are the tiled and tensor-core kernels' too
// (conv2d_gemm.cuh's gathers).
//
// Shapes (NHWC, grouped: in_channels = groups * I, out_channels = groups * O):
//   input  [batches, in_h, in_w, in_channels]
//   filter [groups, filter_h, filter_w, I, O]
// Output channel oc = g * O + o (group g) reads the input channels g * I .. g * I + I - 1:
//   acc[b, oy, ox, oc] = sum_{ky, kx, i} multiply_add of in[b, iy, ix, g * I + i] and filter[g, ky, kx, i, o]
//   iy = oy * stride_h + ky * dilation_h - pad_top       (ix likewise)
// in the order (ky, kx, i) of TFLite's reference loop, starting from 0; taps outside the input
// are skipped (TFLite's reference reads nothing there).
//
// Threads: 1-D, one per (group of CONV2D_PIXELS consecutive output pixels, output channel),
// the channel fastest:
//   index = pixel_group * out_channels + oc,   pixel = pixel_group * CONV2D_PIXELS + r
// so a warp's threads take consecutive output channels: they read consecutive filter values
// (the [.., I, O] layout: coalesced) and, while they share a pixel group, the same input values
// (one broadcast load). Each filter value a thread reads feeds CONV2D_PIXELS sums. Pixels past
// the end compute on pixel 0 (valid memory; locate_pixel) and are not counted.
//
// The multiply-add is a functor with two members (see conv2d.cu and conv_int8.cuh):
//   W   weight(const T* w)                   a filter value, read once per tap and i
//   Acc operator()(Acc acc, W w, const T* x) acc plus the product of w and the input value x
//
// Each .cu that needs this says `#include "conv2d_window.cuh"`; sources.read_source splices
// this text in there.

#ifndef LITEDELEGATE_CONV2D_WINDOW_CUH
#define LITEDELEGATE_CONV2D_WINDOW_CUH

#define CONV2D_PIXELS 4

// ---- where a pixel's windows sit (every convolution kernel's: conv2d.cu, conv2d_int8.cu, and the
// ---- tiled and tensor-core kernels' gathers, conv2d_gemm.cuh) --------------------------------------

// An output pixel: its image's offset in the input, the input position of its tap (0, 0), and
// whether it exists (one past the end is placed at pixel 0 and reads nothing).
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

// Whether tap (ky, kx) of pixel p falls inside the input; if so, `at` is its first channel in the
// group's input (`group_input`: the input plus the group's first channel).
template <typename T>
__device__ __forceinline__ bool tap_input(
    const T* group_input, const GatherPixel& p, int ky, int kx, int in_h, int in_w, int in_channels,
    int dilation_h, int dilation_w, const T*& at)
{
    const int iy = p.y + ky * dilation_h;
    const int ix = p.x + kx * dilation_w;
    if (!(iy >= 0 && iy < in_h && ix >= 0 && ix < in_w)) return false;
    at = group_input + p.image + ((long long)iy * in_w + ix) * in_channels;
    return true;
}

// The convolution's geometry as every layer of these kernels takes it, int32 scalars in this
// order (the entry points' too: conv2d.py's and conv_int8.py's argument lists), and the
// arguments that pass it on.
#define CONV2D_WINDOW_PARAMS                                                                    \
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int out_channels,  \
    int groups, int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h,       \
    int dilation_w, int pad_top, int pad_left
#define CONV2D_WINDOW_ARGS                                                                      \
    batches, in_h, in_w, in_channels, out_h, out_w, out_channels, groups, filter_h, filter_w, \
    stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left

// One thread's outputs: an output channel and up to CONV2D_PIXELS consecutive pixels.
template <typename Acc>
struct ConvolutionSums {
    int oc;                   // the output channel
    long long first_pixel;    // the first pixel, (b * out_h + oy) * out_w + ox
    int count;                // how many of the CONV2D_PIXELS pixels exist (fewer in the last group)
    Acc acc[CONV2D_PIXELS];   // the sum of each pixel
};

// The sums of this thread (blockIdx, threadIdx) into `sums`; false for a thread past the end
// (the last block is partial), which has nothing to compute.
template <typename T, typename Acc, typename MultiplyAdd>
__device__ __forceinline__ bool convolution_sums(
    const T* __restrict__ input,
    const T* __restrict__ filter,
    CONV2D_WINDOW_PARAMS,
    const MultiplyAdd multiply_add,
    ConvolutionSums<Acc>& sums)
{
    const long long pixels = (long long)batches * out_h * out_w;
    const long long pixel_groups = (pixels + CONV2D_PIXELS - 1) / CONV2D_PIXELS;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= pixel_groups * out_channels) return false;

    const int oc = (int)(index % out_channels);
    const long long first_pixel = (index / out_channels) * CONV2D_PIXELS;
    const int group_in = in_channels / groups;    // I
    const int group_out = out_channels / groups;  // O
    const int g = oc / group_out;
    // This thread's filter column: filter[g, ky, kx, i, o] = filter_column[(ky * KW + kx) * I * O + i * O].
    const T* filter_column = filter + (long long)g * filter_h * filter_w * group_in * group_out + (oc - g * group_out);
    const T* group_input = input + g * group_in;

    // Where each of the thread's pixels sits (a pixel past the end: at pixel 0, valid memory).
    GatherPixel pixel[CONV2D_PIXELS];
    for (int r = 0; r < CONV2D_PIXELS; ++r) {
        pixel[r] = locate_pixel(first_pixel + r, pixels, in_h, in_w, in_channels, out_h, out_w, stride_h, stride_w, pad_top, pad_left);
    }

    for (int r = 0; r < CONV2D_PIXELS; ++r) sums.acc[r] = Acc(0);

    for (int ky = 0; ky < filter_h; ++ky) {
        for (int kx = 0; kx < filter_w; ++kx) {
            // The tap's input pixel for each output pixel; a tap outside the input is skipped.
            const T* tap[CONV2D_PIXELS];
            bool inside[CONV2D_PIXELS];
            bool any = false;
            for (int r = 0; r < CONV2D_PIXELS; ++r) {
                tap[r] = group_input;
                inside[r] = tap_input(group_input, pixel[r], ky, kx, in_h, in_w, in_channels, dilation_h, dilation_w, tap[r]);
                any = any || inside[r];
            }
            if (!any) continue;
            const T* weights = filter_column + (long long)(ky * filter_w + kx) * group_in * group_out;
            for (int i = 0; i < group_in; ++i) {
                const auto w = multiply_add.weight(weights + (long long)i * group_out);
                for (int r = 0; r < CONV2D_PIXELS; ++r) {
                    if (inside[r]) sums.acc[r] = multiply_add(sums.acc[r], w, tap[r] + i);
                }
            }
        }
    }

    sums.oc = oc;
    sums.first_pixel = first_pixel;
    sums.count = pixels - first_pixel < CONV2D_PIXELS ? (int)(pixels - first_pixel) : CONV2D_PIXELS;
    return true;
}

// The direct convolution of this thread, whatever its accumulator (float for conv2d.cu, int32
// for conv2d_int8.cu): its sums (convolution_sums, with the kernel's multiply-add), then each of
// its pixels through the kernel's output stage, store(acc, pixel, oc).
template <typename Acc, typename T, typename MultiplyAdd, typename Store>
__device__ __forceinline__ void direct_convolution(
    const T* __restrict__ input, const T* __restrict__ filter, CONV2D_WINDOW_PARAMS,
    const MultiplyAdd multiply_add, const Store store)
{
    ConvolutionSums<Acc> sums;
    if (!convolution_sums(input, filter, CONV2D_WINDOW_ARGS, multiply_add, sums)) {
        return;  // the last block is partial
    }
    for (int r = 0; r < CONV2D_PIXELS; ++r) {  // a constant count: the sums stay in registers
        if (r >= sums.count) break;
        store(sums.acc[r], sums.first_pixel + r, sums.oc);
    }
}

#endif  // LITEDELEGATE_CONV2D_WINDOW_CUH
