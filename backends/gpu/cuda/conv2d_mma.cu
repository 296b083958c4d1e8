// CONV_2D, versions 1 and 6 (float16 storage), NHWC, on tensor cores: conv2d_tiled.cu's implicit
// GEMM with its products done by mma.sync.aligned.m16n8k16 (half inputs, float32 accumulation),
// for the delegate's float16 precision (conv2d.py: conv2d_variant picks it for a layer the float32
// path would tile, with a finite filter).
//
// The GEMM (per group g): C[m, n] = sum_k A[m, k] * B[k, n], m the output pixel, n the output
// channel in the group, k = (ky * filter_w + kx) * I + i; A gathered from the input (0 outside it),
// B the filter laid out [groups, KH, KW, I, O] (conv2d.cu's layout).
//
// Launch (conv2d.py: conv2d_tiled_launch_config, tile 64 x 64): blocks of 256 threads (8 warps),
// grid.x = tiles of 64 output pixels, grid.y = groups * tiles of 64 output channels. Per step of
// 16 values of k the block stages the A tile (64 x 16 halves) and the B tile (16 x 64 halves) in
// __shared__ memory as their binary16 bits (pairs of halves read as one half2 load where they are
// contiguous and aligned: an even number of channels per group), synchronises, and each warp multiplies its 16 pixels
// (warp % 4) by its 32 channels (warp / 4): four m16n8k16 products into float32 accumulators, the
// fragments loaded as the PTX ISA lays them out ("Matrix Fragments for mma.m16n8k16 with
// floating point type"). Then the bias, the clamp and the fused epilogue (epilogue.cuh) in float32,
// stored as halves.
//
// Numerics: every product of two halves is exact in float32; the tensor core adds the 16 products
// of a step and the accumulator in an order of its own (no split of K across threads or launches),
// so the sums differ from conv2d.cu's sequential ones by float32 roundings: far inside the
// float16 path's 1e-2 bound. A tap outside the input is a staged 0 (a finite filter only: 0 * inf
// would be NaN where conv2d.cu skips the tap).
//
// The host shim has no warps and no tensor cores: under CUDA_HOST_SHIM, mma_m16n32k16 is emulated
// by the block's threads (all 256 call it together): each writes its fragments where the PTX ISA
// says they belong, synchronises, and computes its own accumulators, k in order, with fmaf. So the
// shim checks the fragment layout of the loads below; a GPU checks the instruction itself (the
// device check). This file must compile with NVRTC (no system headers; storage.cuh and epilogue.cuh
// are spliced in; sm_80 or newer for mma.sync m16n8k16) and with g++ through host_shim/cuda_host.h
// in its cooperative mode.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define MMA_TILE 64
#define MMA_TILE_K 16
#define MMA_THREADS 256
#define MMA_WARPS (MMA_THREADS / 32)

#include "storage.cuh"   // load_as_float / store_from_float for float and float16 bit patterns
#include "epilogue.cuh"  // the fused residual ADD / PRELU / RELU after the bias and clamp

// Two consecutive halves read as one 32-bit (half2) load from a 4-byte aligned address; the
// lower-indexed element lands in the low 16 bits (little-endian), as in an mma register.
__device__ __forceinline__ unsigned int load_half2_bits(const unsigned short* p) {
#ifdef CUDA_HOST_SHIM
    unsigned int bits;
    std::memcpy(&bits, p, sizeof bits);  // no type punning through a pointer in C++
    return bits;
#else
    return *reinterpret_cast<const unsigned int*>(p);
#endif
}

#include "mma.cuh"  // pack_halves, mma_m16n32k16 (mma.sync m16n8k16 x 4; emulated by the host shim)

__device__ __forceinline__ void conv2d_mma_nhwc(
    const unsigned short* __restrict__ input,
    const unsigned short* __restrict__ filter,
    const unsigned short* __restrict__ bias,  // may be null
    unsigned short* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels,
    int out_h, int out_w, int out_channels, int groups,
    int filter_h, int filter_w,
    int stride_h, int stride_w,
    int dilation_h, int dilation_w,
    int pad_top, int pad_left,
    float act_min, float act_max,
    const Epilogue epilogue)
{
    // Staging: each thread stages pairs of halves (k, k + 1) of A and (n, n + 1) of B, read as
    // one 32-bit half2 load where the pair is contiguous and 4-byte aligned, else as two halves.
    constexpr int A_PAIRS = MMA_TILE_K / 2;                      // 8 pairs of k per pixel
    constexpr int A_ROWS = MMA_THREADS / A_PAIRS;                // 32 pixels staged per pass
    constexpr int A_LOADS = MMA_TILE / A_ROWS;                   // 2
    constexpr int B_PAIRS = MMA_TILE / 2;                        // 32 pairs of channels per k row
    constexpr int B_ROWS = MMA_THREADS / B_PAIRS;                // 8 k rows staged per pass
    constexpr int B_LOADS = MMA_TILE_K / B_ROWS;                 // 2
    __shared__ unsigned short a_tile[MMA_TILE][MMA_TILE_K + 8];  // [pixel][k] (+8: fewer bank conflicts)
    __shared__ unsigned short b_tile[MMA_TILE_K][MMA_TILE + 8];  // [k][channel]

    const int t = threadIdx.x;
    const int group_in = in_channels / groups, group_out = out_channels / groups;
    const int channel_tiles = (group_out + MMA_TILE - 1) / MMA_TILE;
    const int g = blockIdx.y / channel_tiles;
    const int n0 = (blockIdx.y % channel_tiles) * MMA_TILE;
    const long long m0 = (long long)blockIdx.x * MMA_TILE;
    const long long pixels = (long long)batches * out_h * out_w;
    const int depth = filter_h * filter_w * group_in;
    const unsigned short* group_input = input + g * group_in;
    const unsigned short* group_filter = filter + (long long)g * depth * group_out;
    // Pairs of channels (k even: i even, i + 1 in the same tap) are contiguous and aligned when
    // every offset is even: an even group_in (so in_channels too) and an aligned input.
    const bool a_half2 = group_in % 2 == 0 && ((unsigned long long)input & 3) == 0;
    const bool b_half2 = group_out % 2 == 0 && ((unsigned long long)filter & 3) == 0;

    const int a_pair = t % A_PAIRS;
    long long a_image[A_LOADS];
    int a_y[A_LOADS], a_x[A_LOADS];
    bool a_valid[A_LOADS];
    for (int j = 0; j < A_LOADS; ++j) {
        const long long m = m0 + t / A_PAIRS + j * A_ROWS;
        a_valid[j] = m < pixels;
        const long long pixel = a_valid[j] ? m : 0;
        const int ox = (int)(pixel % out_w);
        const long long rest = pixel / out_w;
        const int oy = (int)(rest % out_h);
        a_image[j] = (rest / out_h) * in_h * in_w * in_channels;
        a_y[j] = oy * stride_h - pad_top;
        a_x[j] = ox * stride_w - pad_left;
    }
    const int b_pair = t % B_PAIRS;

    const int warp = t / 32, lane = t % 32;
    const int lane_group = lane / 4, lane_t = lane % 4;
    const int warp_m = (warp % 4) * 16;  // the warp's 16 pixels of the tile
    const int warp_n = (warp / 4) * 32;  // and its 32 channels: four products of 8
    float acc[4][4];
    for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) acc[j][i] = 0.0f;

    for (int k0 = 0; k0 < depth; k0 += MMA_TILE_K) {
        // Stage A: values k and k + 1 of each of this thread's pixels (0 outside the input).
        for (int half = 0; half < 2; ++half) {
            if (half == 1 && a_half2) break;  // the pair came in one load
            const int k = k0 + 2 * a_pair + half;
            const bool k_inside = k < depth;
            int ky = 0, kx = 0, i = 0;
            if (k_inside) {
                i = k % group_in;
                const int tap = k / group_in;
                kx = tap % filter_w;
                ky = tap / filter_w;
            }
            for (int j = 0; j < A_LOADS; ++j) {
                unsigned int bits = 0;  // +0.0 (and +0.0)
                const int iy = a_y[j] + ky * dilation_h;
                const int ix = a_x[j] + kx * dilation_w;
                if (k_inside && a_valid[j] && iy >= 0 && iy < in_h && ix >= 0 && ix < in_w) {
                    const unsigned short* at = group_input + a_image[j] + ((long long)iy * in_w + ix) * in_channels + i;
                    bits = a_half2 ? load_half2_bits(at) : *at;
                }
                unsigned short* row = a_tile[t / A_PAIRS + j * A_ROWS];
                row[2 * a_pair + half] = (unsigned short)(bits & 0xffffu);
                if (a_half2) row[2 * a_pair + 1] = (unsigned short)(bits >> 16);
            }
        }
        // Stage B: channels n and n + 1 of rows k0 .. k0 + 15 of the group's [K, O] filter.
        for (int j = 0; j < B_LOADS; ++j) {
            const int row = t / B_PAIRS + j * B_ROWS;
            const int k = k0 + row;
            const int n = n0 + 2 * b_pair;
            const unsigned short* at = group_filter + (long long)k * group_out + n;
            unsigned short low = 0, high = 0;
            if (k < depth && b_half2 && n < group_out) {  // n even, group_out even: n + 1 < group_out too
                const unsigned int bits = load_half2_bits(at);
                low = (unsigned short)(bits & 0xffffu);
                high = (unsigned short)(bits >> 16);
            } else if (k < depth) {
                low = n < group_out ? at[0] : (unsigned short)0;
                high = n + 1 < group_out ? at[1] : (unsigned short)0;
            }
            b_tile[row][2 * b_pair] = low;
            b_tile[row][2 * b_pair + 1] = high;
        }
        __syncthreads();
        unsigned int a[4];
        a[0] = pack_halves(a_tile[warp_m + lane_group][2 * lane_t], a_tile[warp_m + lane_group][2 * lane_t + 1]);
        a[1] = pack_halves(a_tile[warp_m + lane_group + 8][2 * lane_t], a_tile[warp_m + lane_group + 8][2 * lane_t + 1]);
        a[2] = pack_halves(a_tile[warp_m + lane_group][2 * lane_t + 8], a_tile[warp_m + lane_group][2 * lane_t + 9]);
        a[3] = pack_halves(a_tile[warp_m + lane_group + 8][2 * lane_t + 8], a_tile[warp_m + lane_group + 8][2 * lane_t + 9]);
        unsigned int b[4][2];
        for (int j = 0; j < 4; ++j) {
            const int column = warp_n + j * 8 + lane_group;
            b[j][0] = pack_halves(b_tile[2 * lane_t][column], b_tile[2 * lane_t + 1][column]);
            b[j][1] = pack_halves(b_tile[2 * lane_t + 8][column], b_tile[2 * lane_t + 9][column]);
        }
        mma_m16n32k16(acc, a, b);
        __syncthreads();  // the tiles are overwritten by the next step
    }

    // Epilogue: accumulator i of product j is C[warp_m + group (+8 for i >= 2)][warp_n + 8 j + 2 t + (i & 1)].
    for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 4; ++i) {
            const long long pixel = m0 + warp_m + lane_group + (i >= 2 ? 8 : 0);
            const int n = n0 + warp_n + j * 8 + 2 * lane_t + (i & 1);
            if (pixel >= pixels || n >= group_out) continue;
            const int oc = g * group_out + n;
            float value = bias != nullptr ? acc[j][i] + load_as_float(bias + oc) : acc[j][i];
            value = value < act_min ? act_min : value;
            value = value > act_max ? act_max : value;
            store_from_float(output + pixel * out_channels + oc, apply_epilogue<unsigned short>(epilogue, value, pixel, oc));
        }
    }
}

// ---- entry point -------------------------------------------------------------------------------
// Arguments: conv2d.cu's conv2d_fused_f16 (a null residual and alpha and -inf..inf clamps for no
// epilogue).

extern "C" __global__ void conv2d_mma_64x64_f16(
    const unsigned short* __restrict__ input, const unsigned short* __restrict__ filter,
    const unsigned short* __restrict__ bias, unsigned short* __restrict__ output,
    int batches, int in_h, int in_w, int in_channels, int out_h, int out_w, int out_channels, int groups,
    int filter_h, int filter_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
    int pad_top, int pad_left, float act_min, float act_max,
    const unsigned short* __restrict__ residual, int residual_channels, float add_min, float add_max,
    const unsigned short* __restrict__ alpha, float post_min, float post_max)
{
    conv2d_mma_nhwc(
        input, filter, bias, output, batches, in_h, in_w, in_channels, out_h, out_w, out_channels, groups,
        filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, act_min, act_max,
        make_epilogue(residual, residual_channels, add_min, add_max, alpha, post_min, post_max));
}
