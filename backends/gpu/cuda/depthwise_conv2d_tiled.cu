// DEPTHWISE_CONV_2D, versions 1 and 2 (float; v2: dilation), NHWC, with shared-memory input
// tiles: the tiled variant of depthwise_conv2d.cu (windows.py: depthwise_variant picks it at
// prepare, from the shapes; tiny layers and windows too wide for the tile stay direct).
//
//   out[b, oy, ox, oc] = clamp(bias[oc] + sum_{ky, kx} in[b, iy, ix, oc / multiplier] * filter[0, ky, kx, oc])
//   iy = oy * stride_h + ky * dilation_h - pad_top       (ix likewise; taps outside the input skipped)
// then the fused epilogue (epilogue.cuh), as depthwise_conv2d.cu's *_fused_* entry points.
//
// Launch (windows.py: depthwise_tiled_launch_config): blocks of 256 threads; grid.x = tiles of
// DW_TILE x DW_TILE output pixels of one image, grid.y = groups of DW_CHANNELS output channels,
// grid.z = the image. A block stages the input patch its tile reads, for its channels,
// (DW_TILE - 1) * stride + (filter - 1) * dilation + 1 rows and columns (at most DW_PATCH), into
// __shared__ memory once (consecutive threads: consecutive channels of a pixel), synchronises, then
// each thread computes DW_TILE * DW_TILE / 16 outputs of one channel from the patch: every input
// value is read from global memory once per block instead of once per tap.
//
// The sum of each output runs in one thread over (ky, kx) in order, skipping the taps outside the
// input, with the same expression as depthwise_conv2d.cu (acc += in * w): the results are the
// direct kernel's. Storage: float32 or float16 (binary16 bit patterns); the patch holds float32.
// This file must compile with NVRTC (no system headers; storage.cuh and epilogue.cuh are spliced
// in) and with g++ through host_shim/cuda_host.h, in its cooperative mode.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define DW_TILE 8
#define DW_CHANNELS 16
#define DW_PATCH 20
#define DW_THREADS 256

#include "storage.cuh"   // load_as_float / store_from_float for float and float16 bit patterns
#include "epilogue.cuh"  // the fused residual ADD / PRELU / RELU after the bias and clamp

template <typename Storage>
__device__ __forceinline__ void depthwise_conv2d_tiled_nhwc(
    const Storage* __restrict__ input,
    const Storage* __restrict__ filter,
    const Storage* __restrict__ bias,  // may be null
    Storage* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels,
    int out_h, int out_w, int multiplier,
    int filter_h, int filter_w,
    int stride_h, int stride_w,
    int dilation_h, int dilation_w,
    int pad_top, int pad_left,
    float act_min, float act_max,
    const Epilogue epilogue)
{
    constexpr int PIXEL_THREADS = DW_THREADS / DW_CHANNELS;              // 16
    constexpr int OUTPUTS = DW_TILE * DW_TILE / PIXEL_THREADS;           // 4 outputs per thread
    __shared__ float patch[DW_PATCH][DW_PATCH][DW_CHANNELS];

    const int t = threadIdx.x;
    const int out_channels = in_channels * multiplier;
    const int tiles_w = (out_w + DW_TILE - 1) / DW_TILE;
    const int tile_y0 = (blockIdx.x / tiles_w) * DW_TILE;
    const int tile_x0 = (blockIdx.x % tiles_w) * DW_TILE;
    const int oc0 = blockIdx.y * DW_CHANNELS;
    const long long b = blockIdx.z;
    const int patch_h = (DW_TILE - 1) * stride_h + (filter_h - 1) * dilation_h + 1;  // <= DW_PATCH (host-checked)
    const int patch_w = (DW_TILE - 1) * stride_w + (filter_w - 1) * dilation_w + 1;
    const int origin_y = tile_y0 * stride_h - pad_top;  // input row of patch row 0
    const int origin_x = tile_x0 * stride_w - pad_left;
    const Storage* image = input + b * in_h * in_w * in_channels;

    // Stage the patch: input channel (oc0 + c) / multiplier for output channel oc0 + c; 0 outside
    // the input (never summed: the taps there are skipped below) and past the last channel.
    for (int index = t; index < patch_h * patch_w * DW_CHANNELS; index += DW_THREADS) {
        const int c = index % DW_CHANNELS;
        const int position = index / DW_CHANNELS;
        const int row = position / patch_w, column = position % patch_w;
        const int iy = origin_y + row, ix = origin_x + column;
        const int oc = oc0 + c;
        float value = 0.0f;
        if (oc < out_channels && iy >= 0 && iy < in_h && ix >= 0 && ix < in_w) {
            value = load_as_float(image + ((long long)iy * in_w + ix) * in_channels + oc / multiplier);
        }
        patch[row][column][c] = value;
    }
    __syncthreads();

    const int c = t % DW_CHANNELS;
    const int oc = oc0 + c;
    if (oc >= out_channels) return;  // after the only barrier: no thread waits for this one
    for (int k = 0; k < OUTPUTS; ++k) {
        const int q = t / DW_CHANNELS + k * PIXEL_THREADS;  // pixel of the tile
        const int py = q / DW_TILE, px = q % DW_TILE;
        const int oy = tile_y0 + py, ox = tile_x0 + px;
        if (oy >= out_h || ox >= out_w) continue;
        float acc = 0.0f;
        for (int ky = 0; ky < filter_h; ++ky) {
            const int iy = origin_y + py * stride_h + ky * dilation_h;
            if (iy < 0 || iy >= in_h) continue;  // padding rows read 0: skipped, as the direct kernel
            for (int kx = 0; kx < filter_w; ++kx) {
                const int ix = origin_x + px * stride_w + kx * dilation_w;
                if (ix < 0 || ix >= in_w) continue;
                acc += patch[py * stride_h + ky * dilation_h][px * stride_w + kx * dilation_w][c]
                       * load_as_float(filter + (ky * filter_w + kx) * out_channels + oc);
            }
        }
        if (bias != nullptr) acc += load_as_float(bias + oc);
        acc = acc < act_min ? act_min : acc;
        acc = acc > act_max ? act_max : acc;
        const long long pixel = (b * out_h + oy) * out_w + ox;
        store_from_float(output + pixel * out_channels + oc, apply_epilogue<Storage>(epilogue, acc, pixel, oc));
    }
}

// ---- entry points ---------------------------------------------------------------------------
// Arguments: depthwise_conv2d.cu's depthwise_conv2d_fused_* (a null residual and alpha and
// -inf..inf clamps for no epilogue).

extern "C" __global__ void depthwise_conv2d_tiled_f32(
    const float* __restrict__ input, const float* __restrict__ filter, const float* __restrict__ bias,
    float* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int multiplier,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, float act_min, float act_max,
    const float* __restrict__ residual, int residual_channels, float add_min, float add_max,
    const float* __restrict__ alpha, float post_min, float post_max)
{
    depthwise_conv2d_tiled_nhwc<float>(
        input, filter, bias, output, batches, in_h, in_w, in_channels, out_h, out_w, multiplier,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, act_min, act_max,
        make_epilogue(residual, residual_channels, add_min, add_max, alpha, post_min, post_max));
}

extern "C" __global__ void depthwise_conv2d_tiled_f16(
    const unsigned short* __restrict__ input, const unsigned short* __restrict__ filter,
    const unsigned short* __restrict__ bias, unsigned short* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int multiplier,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, float act_min, float act_max,
    const unsigned short* __restrict__ residual, int residual_channels, float add_min, float add_max,
    const unsigned short* __restrict__ alpha, float post_min, float post_max)
{
    depthwise_conv2d_tiled_nhwc<unsigned short>(
        input, filter, bias, output, batches, in_h, in_w, in_channels, out_h, out_w, multiplier,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, act_min, act_max,
        make_epilogue(residual, residual_channels, add_min, add_max, alpha, post_min, post_max));
}
