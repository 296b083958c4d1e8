// DEPTHWISE_CONV_2D, versions 1 and 2 (float; v2: dilation), NHWC, with shared-memory input
// tiles: the tiled variant of depthwise_conv2d.cu, in two tile shapes, each a row of
// depthwise.py's DEPTHWISE_TACTICS (chosen at prepare by measuring them: backends/gpu/tactics.py;
// a window too wide for a tile's patch stays off that row).
//
//   out[b, oy, ox, oc] = clamp(bias[oc] + sum_{ky, kx} in[b, iy, ix, oc / multiplier] * filter[0, ky, kx, oc])
//   iy = oy * stride_h + ky * dilation_h - pad_top       (ix likewise; taps outside the input skipped)
// then the fused epilogue (epilogue.cuh), as depthwise_conv2d.cu's *_fused_* entry points.
//
// Launch (depthwise.py: depthwise_tiled_launch_config): blocks of 256 threads; grid.x = tiles of
// TILE x TILE output pixels of one image, grid.y = groups of DW_CHANNELS output channels, grid.z =
// the image. A block stages the input patch its tile reads, for its channels, (TILE - 1) * stride +
// (filter - 1) * dilation + 1 rows and columns (at most PATCH), into __shared__ memory once
// (consecutive threads: consecutive channels of a pixel), synchronises, then each thread computes
// TILE * TILE / 16 outputs of one channel from the patch: every input value is read from global
// memory once per block instead of once per tap. The tiles (TILE, PATCH): 8 x 8 pixels (patch 20:
// 4 outputs a thread), and 4 x 4 (patch 12: one output a thread, as many blocks as the direct
// kernel, for the layers an 8 x 8 tile would leave most of the GPU idle).
//
// The sum of each output runs in one thread over (ky, kx) in order, skipping the taps outside the
// input (depthwise_window.cuh's walk, as depthwise_conv2d.cu), with the same expression as
// depthwise_conv2d.cu (acc += in * w): the results are the direct kernel's. Storage: float32 or
// float16 (binary16 bit patterns); the patch holds float32. This file must compile with NVRTC
// (no system headers; the .cuh headers are spliced in) and with g++ through host_shim/cuda_host.h,
// in its cooperative mode.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define DW_CHANNELS 16
#define DW_THREADS 256

#include "storage.cuh"   // load_as_float / store_from_float for float and float16 bit patterns
#include "epilogue.cuh"  // the fused residual ADD / PRELU / RELU after the bias and clamp
#include "coordinates.cuh"  // for depthwise_window.cuh
#include "depthwise_window.cuh"  // the walk over the taps (depthwise_taps), DEPTHWISE_WINDOW_PARAMS

// A tap of this kernel: the input value from the block's patch in shared memory (patch row 0 is
// input row origin_y), the filter value from global memory; acc += in * w as depthwise_conv2d.cu.
template <typename Storage, int PATCH>
struct PatchTap {
    const float (*patch)[PATCH][DW_CHANNELS];
    int origin_y, origin_x;  // the patch's input position
    int c;                   // the thread's channel in the patch
    const Storage* filter;
    int oc, out_channels;

    __device__ __forceinline__ float operator()(float acc, int iy, int ix, int tap) const {
        return acc + patch[iy - origin_y][ix - origin_x][c] * load_as_float(filter + tap * out_channels + oc);
    }
};

template <typename Storage, int TILE, int PATCH>
__device__ __forceinline__ void depthwise_conv2d_tiled_nhwc(
    DEPTHWISE_FLOAT_TENSORS(Storage), DEPTHWISE_WINDOW_PARAMS, float act_min, float act_max, const Epilogue epilogue)
{
    constexpr int PIXEL_THREADS = DW_THREADS / DW_CHANNELS;              // 16
    constexpr int OUTPUTS = TILE * TILE / PIXEL_THREADS;                 // outputs per thread: 4 (8 x 8), 1 (4 x 4)
    static_assert(OUTPUTS * PIXEL_THREADS == TILE * TILE, "the tile's pixels split evenly over the threads");
    __shared__ float patch[PATCH][PATCH][DW_CHANNELS];

    const int t = threadIdx.x;
    const int out_channels = in_channels * multiplier;
    const int tiles_w = (out_w + TILE - 1) / TILE;
    const int tile_y0 = (blockIdx.x / tiles_w) * TILE;
    const int tile_x0 = (blockIdx.x % tiles_w) * TILE;
    const int oc0 = blockIdx.y * DW_CHANNELS;
    const long long b = blockIdx.z;
    const int patch_h = (TILE - 1) * stride_h + (filter_h - 1) * dilation_h + 1;  // <= PATCH (host-checked)
    const int patch_w = (TILE - 1) * stride_w + (filter_w - 1) * dilation_w + 1;
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
    const PatchTap<Storage, PATCH> tap = {patch, origin_y, origin_x, c, filter, oc, out_channels};
    for (int k = 0; k < OUTPUTS; ++k) {
        const int q = t / DW_CHANNELS + k * PIXEL_THREADS;  // pixel of the tile
        const int py = q / TILE, px = q % TILE;
        const int oy = tile_y0 + py, ox = tile_x0 + px;
        if (oy >= out_h || ox >= out_w) continue;
        // The taps outside the input are skipped, as the direct kernel.
        float acc = depthwise_taps<float>(
            origin_y + py * stride_h, origin_x + px * stride_w, in_h, in_w, filter_h, filter_w,
            dilation_h, dilation_w, tap);
        const long long pixel = (b * out_h + oy) * out_w + ox;
        store_conv_output(output, bias, acc, pixel, oc, out_channels, act_min, act_max, epilogue);  // epilogue.cuh
    }
}

// ---- entry points: depthwise_conv2d_tiled_<TILE>x<TILE>_<storage> ---------------------------------
// Arguments: depthwise_conv2d.cu's depthwise_conv2d_fused_* (a null residual and alpha and
// -inf..inf clamps for no epilogue).

extern "C" __global__ void depthwise_conv2d_tiled_8x8_f32(
    DEPTHWISE_FLOAT_TENSORS(float), DEPTHWISE_WINDOW_PARAMS, float act_min, float act_max,
    DEPTHWISE_EPILOGUE_PARAMS(float))
{
    depthwise_conv2d_tiled_nhwc<float, 8, 20>(
        DEPTHWISE_FLOAT_TENSOR_ARGS, DEPTHWISE_WINDOW_ARGS, act_min, act_max, make_epilogue(DEPTHWISE_EPILOGUE_ARGS));
}

extern "C" __global__ void depthwise_conv2d_tiled_8x8_f16(
    DEPTHWISE_FLOAT_TENSORS(unsigned short), DEPTHWISE_WINDOW_PARAMS, float act_min, float act_max,
    DEPTHWISE_EPILOGUE_PARAMS(unsigned short))
{
    depthwise_conv2d_tiled_nhwc<unsigned short, 8, 20>(
        DEPTHWISE_FLOAT_TENSOR_ARGS, DEPTHWISE_WINDOW_ARGS, act_min, act_max, make_epilogue(DEPTHWISE_EPILOGUE_ARGS));
}

extern "C" __global__ void depthwise_conv2d_tiled_4x4_f32(
    DEPTHWISE_FLOAT_TENSORS(float), DEPTHWISE_WINDOW_PARAMS, float act_min, float act_max,
    DEPTHWISE_EPILOGUE_PARAMS(float))
{
    depthwise_conv2d_tiled_nhwc<float, 4, 12>(
        DEPTHWISE_FLOAT_TENSOR_ARGS, DEPTHWISE_WINDOW_ARGS, act_min, act_max, make_epilogue(DEPTHWISE_EPILOGUE_ARGS));
}

extern "C" __global__ void depthwise_conv2d_tiled_4x4_f16(
    DEPTHWISE_FLOAT_TENSORS(unsigned short), DEPTHWISE_WINDOW_PARAMS, float act_min, float act_max,
    DEPTHWISE_EPILOGUE_PARAMS(unsigned short))
{
    depthwise_conv2d_tiled_nhwc<unsigned short, 4, 12>(
        DEPTHWISE_FLOAT_TENSOR_ARGS, DEPTHWISE_WINDOW_ARGS, act_min, act_max, make_epilogue(DEPTHWISE_EPILOGUE_ARGS));
}
