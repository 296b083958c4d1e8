// CONV_2D, versions 1 and 6 (float16 storage), NHWC, on tensor cores: conv2d_tiled.cu's implicit
// GEMM with its products done by mma.sync.aligned.m16n8k16 (half inputs, float32 accumulation),
// for the delegate's float16 precision (conv2d.py: rows of CONV2D_TACTICS, for a finite filter on
// sm_80 or newer).
//
// The GEMM (per group g): C[m, n] = sum_k A[m, k] * B[k, n], m the output pixel, n the output
// channel in the group, k = (ky * filter_w + kx) * I + i; A gathered from the input (0 outside it),
// B the filter laid out [groups, KH, KW, I, O] (conv2d.cu's layout).
//
// Launch (conv2d.py: conv2d_tiled_launch_config, tiles of TILE_M x TILE_N: 64 x 64, 64 x 16,
// 128 x 8): blocks of 256 threads (8 warps), grid.x = tiles of TILE_M output pixels, grid.y =
// groups * tiles of TILE_N output channels. Per step of 16 values of k the block stages the A
// tile (TILE_M x 16 halves) and the B tile (16 x TILE_N halves) in __shared__ memory as their
// binary16 bits (pairs of halves read as one half2 load where they are contiguous and aligned: an
// even number of channels per group), synchronises, and each warp multiplies its 16 pixels by its
// PRODUCTS x 8 channels (mma.cuh's MmaShape: 16 x 32 in a 64 x 64 tile, 16 x 8 in the narrow
// ones): m16n8k16 products into float32 accumulators, the fragments loaded as the PTX ISA lays
// them out ("Matrix Fragments for mma.m16n8k16 with floating point type"). Then the bias, the clamp and the fused epilogue (epilogue.cuh) in float32,
// stored as halves.
//
// Numerics: every product of two halves is exact in float32; the tensor core adds the 16 products
// of a step and the accumulator in an order of its own (no split of K across threads or launches),
// so the sums differ from conv2d.cu's sequential ones by float32 roundings: far inside the
// float16 path's 1e-2 bound. A tap outside the input is a staged 0 (a finite filter only: 0 * inf
// would be NaN where conv2d.cu skips the tap).
//
// The host shim has no tensor cores: under CUDA_HOST_SHIM, mma_m16n8k16 is emulated by each
// warp's 32 threads: each writes its fragments where the PTX ISA says they belong, synchronises
// with its warp (__syncwarp: the instruction synchronises no more), and computes its own
// accumulators, k in order, with fmaf. The shim runs a block's warps one after the other between
// barriers, so the loop's two __syncthreads() are checked there too. So the
// shim checks the fragment layout of the loads below; a GPU checks the instruction itself (the
// device check). This file must compile with NVRTC (no system headers; storage.cuh, epilogue.cuh,
// mma.cuh and conv2d_gemm.cuh are spliced in; sm_80 or newer for mma.sync m16n8k16) and with g++
// through host_shim/cuda_host.h in its cooperative mode.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#include "storage.cuh"      // load_as_float / store_from_float for float and float16 bit patterns
#include "epilogue.cuh"     // store_conv_output: bias, clamp, the fused residual ADD / PRELU / RELU
#include "mma.cuh"          // MmaShape, mma_lane, load_mma_fragments, mma_m16n8k16 (mma.sync; emulated by the host shim)
#include "conv2d_window.cuh"  // locate_pixel, tap_input: where a pixel's windows sit, as in the direct kernels
#include "conv2d_gemm.cuh"  // the implicit GEMM's gather (taps), shared with conv2d_tiled.cu

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

template <int TILE_M, int TILE_N>
__device__ __forceinline__ void conv2d_mma_nhwc(CONV2D_GEMM_BODY_PARAMS(unsigned short))  // bias may be null
{
    // Staging: each thread stages pairs of halves (k, k + 1) of A and (n, n + 1) of B, read as
    // one 32-bit half2 load where the pair is contiguous and 4-byte aligned, else as two halves.
    constexpr int PRODUCTS = MmaShape<TILE_M, TILE_N>::PRODUCTS;   // m16n8k16 products per warp
    constexpr int A_PAIRS = MMA_TILE_K / 2;                        // 8 pairs of k per pixel
    constexpr int A_ROWS = MMA_THREADS / A_PAIRS;                  // 32 pixels staged per pass
    constexpr int A_LOADS = TILE_M / A_ROWS;                       // 2 (64 pixels), 4 (128)
    constexpr int B_PAIRS = TILE_N / 2;                            // pairs of channels per k row
    constexpr int B_ROWS = MMA_THREADS / B_PAIRS;                  // k rows staged per pass
    constexpr int B_LOADS = (MMA_TILE_K + B_ROWS - 1) / B_ROWS;    // 2 (64 channels), else 1
    static_assert(A_LOADS * A_ROWS == TILE_M, "whole passes of pixels");
    __shared__ unsigned short a_tile[TILE_M][MMA_TILE_K + 8];  // [pixel][k] (+8: fewer bank conflicts)
    __shared__ unsigned short b_tile[MMA_TILE_K][TILE_N + 8];  // [k][channel]

    const int t = threadIdx.x;
    const int group_in = in_channels / groups, group_out = out_channels / groups;
    const int channel_tiles = (group_out + TILE_N - 1) / TILE_N;
    const int g = blockIdx.y / channel_tiles;
    const int n0 = (blockIdx.y % channel_tiles) * TILE_N;
    const long long m0 = (long long)blockIdx.x * TILE_M;
    const long long pixels = (long long)batches * out_h * out_w;
    const int depth = filter_h * filter_w * group_in;
    const unsigned short* group_input = input + g * group_in;
    const unsigned short* group_filter = filter + (long long)g * depth * group_out;
    // Pairs of channels (k even: i even, i + 1 in the same tap) are contiguous and aligned when
    // every offset is even: an even group_in (so in_channels too) and an aligned input.
    const bool a_half2 = group_in % 2 == 0 && ((unsigned long long)input & 3) == 0;
    const bool b_half2 = group_out % 2 == 0 && ((unsigned long long)filter & 3) == 0;

    // The pixels this thread stages (A_LOADS of them, A_ROWS apart) at pair a_pair of the step.
    const int a_pair = t % A_PAIRS;
    GatherPixel a_pixels[A_LOADS];
    locate_pixels<A_LOADS, A_ROWS>(
        a_pixels, m0 + t / A_PAIRS, pixels, in_h, in_w, in_channels, out_h, out_w, stride_h, stride_w, pad_top, pad_left);
    const int b_pair = t % B_PAIRS;

    const MmaLane lane = mma_lane<TILE_M, TILE_N>(t);  // the warp's 16 pixels and PRODUCTS x 8 channels
    float acc[PRODUCTS][4];
    mma_clear<PRODUCTS>(acc);

    for (int k0 = 0; k0 < depth; k0 += MMA_TILE_K) {
        // Stage A: values k and k + 1 of each of this thread's pixels (0 outside the input).
        for (int half = 0; half < 2; ++half) {
            if (half == 1 && a_half2) break;  // the pair came in one load
            const GemmTap tap = gemm_tap(k0 + 2 * a_pair + half, depth, group_in, filter_w);
            for (int j = 0; j < A_LOADS; ++j) {
                unsigned int bits = 0;  // +0.0 (and +0.0)
                const unsigned short* at;
                if (gather_at(group_input, a_pixels[j], tap, in_h, in_w, in_channels, dilation_h, dilation_w, at)) {
                    bits = a_half2 ? load_half2_bits(at) : *at;
                }
                unsigned short* row = a_tile[t / A_PAIRS + j * A_ROWS];
                row[2 * a_pair + half] = (unsigned short)(bits & 0xffffu);
                if (a_half2) row[2 * a_pair + 1] = (unsigned short)(bits >> 16);
            }
        }
        // Stage B: channels n and n + 1 of rows k0 .. k0 + 15 of the group's [K, O] filter (a
        // narrow tile has more threads than pairs: those past row 15 stage nothing).
        for (int j = 0; j < B_LOADS; ++j) {
            const int row = t / B_PAIRS + j * B_ROWS;
            if (B_ROWS > MMA_TILE_K && row >= MMA_TILE_K) break;
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
        unsigned int a_fragment[4], b_fragment[PRODUCTS][2];
        load_mma_fragments<PRODUCTS>(a_tile, b_tile, lane, a_fragment, b_fragment);
        mma_m16n8k16<PRODUCTS>(acc, a_fragment, b_fragment);
        __syncthreads();  // the tiles are overwritten by the next step
    }

    // Epilogue: accumulator i of product j is C[mma_row(m0, lane, i)][mma_column(n0, lane, j, i)].
    for (int j = 0; j < PRODUCTS; ++j) {
        for (int i = 0; i < 4; ++i) {
            const long long pixel = mma_row(m0, lane, i);
            const int n = mma_column(n0, lane, j, i);
            if (pixel >= pixels || n >= group_out) continue;
            store_conv_output(output, bias, acc[j][i], pixel, g * group_out + n, out_channels, act_min, act_max, epilogue);
        }
    }
}

// ---- entry points: conv2d_mma_<TILE_M>x<TILE_N>_f16 -------------------------------------------
// Arguments: conv2d.cu's conv2d_fused_f16 (CONV2D_GEMM_PARAMS, conv2d_gemm.cuh). 64 x 64 for wide
// layers; 64 x 16 (as many blocks as conv2d.cu's direct kernel) and 128 x 8 for the layers of 16
// or 8 output channels and for the layers a 64 x 64 tile would leave most of the GPU idle.

extern "C" __global__ void conv2d_mma_64x64_f16(CONV2D_GEMM_PARAMS(unsigned short)) {
    conv2d_mma_nhwc<64, 64>(CONV2D_GEMM_ARGS);
}

extern "C" __global__ void conv2d_mma_64x16_f16(CONV2D_GEMM_PARAMS(unsigned short)) {
    conv2d_mma_nhwc<64, 16>(CONV2D_GEMM_ARGS);
}

extern "C" __global__ void conv2d_mma_128x8_f16(CONV2D_GEMM_PARAMS(unsigned short)) {
    conv2d_mma_nhwc<128, 8>(CONV2D_GEMM_ARGS);
}
