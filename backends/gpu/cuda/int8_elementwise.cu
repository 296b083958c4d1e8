// Quantized (int8 / uint8) elementwise ops, one launch per node, bit-exact with TFLite's
// reference kernels (the CPU kernels: backends/cpu/kernels/binary_quantized.py, quantize.py,
// dequantize.py, activations_quantized.py). One thread per output element.
//
// ADD / SUB / MUL (quantized_binary_i8 / _u8), numpy broadcasting up to rank 4 as
// elementwise.cu (the output [d0, d1, d2, d3] C-contiguous; asK / bsK each input's element
// strides, 0 where it broadcasts; broadcast == 0: a, b and out read at the same index).
// With a = q1 - z1, b = q2 - z2 (the offsets are -z1, -z2) and M(x, m, n) TFLite's
// MultiplyByQuantizedMultiplier (fixed_point.cuh):
//   ADD / SUB  out = clamp(M(M(a << 20, m1, n1) +- M(b << 20, m2, n2), mo, no) + zo)
//   MUL        out = clamp(M(a * b, mo, no) + zo)                  (no > 0: a left shift, v3)
// clamp: the fused activation's quantized range [act_min, act_max].
//
// Lookup (lookup_b8): out[i] = table[bits(x[i])], a 256-entry table of the output's bytes
// indexed by the input's bits read as uint8. The CPU kernels' own tables (computed at
// prepare with TFLite's arithmetic): LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, and the 8-bit
// to 8-bit QUANTIZE (Requantize).
//
// Pair lookup (pair_lookup_b8): out = table[bits(a) * 256 + bits(b)], a 65536-entry table of
// the output's bytes over every pair of 8-bit input values (the CPU kernels' pair_table of their
// own arithmetic: the quantized comparisons), with the binary kernel's broadcasting.
//
// QUANTIZE float -> int8/uint8 (quantize_f32_i8, _f32_u8, _f16_i8, _f16_u8):
//   out = clamp(int32(roundf(x / scale[c])) + zero_point[c], low, high)
// x / scale in float32; roundf rounds halves away from zero; a rounded quotient outside int32
// (or NaN) converts to INT32_MIN and the zero point's addition wraps in int32, as LiteRT's x86
// build (the CPU's quantize_quotient). c = (i / inner) % channels: per channel along one
// axis (channels == 1, inner == 1: per tensor).
//
// DEQUANTIZE int8/uint8 -> float (dequantize_i8_f32, _u8_f32, _i8_f16, _u8_f16):
//   out = scale[c] * (float)(q - zero_point[c])      (q - zp exact in float32; one rounding)
// stored as float32 or as float16 (round to nearest even), c as above.
//
// Launch: 1-D, blockDim.x * gridDim.x >= total (sources.elementwise_launch_config).
// This file must compile with NVRTC (no system headers; storage.cuh, fixed_point.cuh and
// coordinates.cuh are spliced in) and with g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns
#include "fixed_point.cuh"  // TFLite's integer requantization arithmetic
#include "coordinates.cuh"  // BROADCAST_4D_PARAMS / _ARGS, broadcast_offsets: the inputs' elements

// ---- ADD / SUB / MUL ------------------------------------------------------------------------

enum QuantizedBinaryOp {
    QUANTIZED_ADD = 0,
    QUANTIZED_SUB = 1,
    QUANTIZED_MUL = 2,
};

#define ADD_SUB_LEFT_SHIFT 20  // TFLite's left_shift for 8-bit ADD / SUB

// The arguments of ADD / SUB / MUL (int8_elementwise.py's argument list), and the arguments
// that pass them on.
#define QUANTIZED_BINARY_PARAMS(Q)                                                              \
    const Q* __restrict__ a, const Q* __restrict__ b, Q* __restrict__ out, long long total,   \
    int op, BROADCAST_4D_PARAMS, int a_offset, int b_offset, int out_offset,                  \
    int a_multiplier, int a_shift, int b_multiplier, int b_shift, int out_multiplier,         \
    int out_shift, int act_min, int act_max
#define QUANTIZED_BINARY_ARGS                                                                   \
    a, b, out, total, op, BROADCAST_4D_ARGS, a_offset, b_offset, out_offset, a_multiplier,    \
    a_shift, b_multiplier, b_shift, out_multiplier, out_shift, act_min, act_max

template <typename Q>
__device__ __forceinline__ void quantized_binary(QUANTIZED_BINARY_PARAMS(Q))
{
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;
    const BroadcastOffsets offsets = broadcast_offsets(index, BROADCAST_4D_ARGS);
    const int x = (int)a[offsets.a] + a_offset;
    const int y = (int)b[offsets.b] + b_offset;
    int raw;
    if (op == QUANTIZED_MUL) {
        raw = multiply_by_quantized_multiplier(x * y, out_multiplier, out_shift);
    } else {
        const int scaled_x = multiply_by_quantized_multiplier(wrapping_shift_left(x, ADD_SUB_LEFT_SHIFT), a_multiplier, a_shift);
        const int scaled_y = multiply_by_quantized_multiplier(wrapping_shift_left(y, ADD_SUB_LEFT_SHIFT), b_multiplier, b_shift);
        const int sum = op == QUANTIZED_SUB ? scaled_x - scaled_y : scaled_x + scaled_y;
        raw = multiply_by_quantized_multiplier(sum, out_multiplier, out_shift);
    }
    out[index] = (Q)clamp_int(raw + out_offset, act_min, act_max);
}

extern "C" __global__ void quantized_binary_i8(QUANTIZED_BINARY_PARAMS(signed char))
{
    quantized_binary<signed char>(QUANTIZED_BINARY_ARGS);
}

extern "C" __global__ void quantized_binary_u8(QUANTIZED_BINARY_PARAMS(unsigned char))
{
    quantized_binary<unsigned char>(QUANTIZED_BINARY_ARGS);
}

// ---- 256-entry tables -----------------------------------------------------------------------

extern "C" __global__ void lookup_b8(
    const unsigned char* __restrict__ x, const unsigned char* __restrict__ table, unsigned char* __restrict__ out,
    long long total)
{
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;
    out[index] = table[x[index]];
}

extern "C" __global__ void pair_lookup_b8(
    const unsigned char* __restrict__ a, const unsigned char* __restrict__ b, const unsigned char* __restrict__ table,
    unsigned char* __restrict__ out, long long total, BROADCAST_4D_PARAMS)
{
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;
    const BroadcastOffsets offsets = broadcast_offsets(index, BROADCAST_4D_ARGS);
    out[index] = table[((int)a[offsets.a] << 8) | (int)b[offsets.b]];
}

// ---- QUANTIZE float -> int8 / uint8 ---------------------------------------------------------

template <typename Storage, typename Q>
__device__ __forceinline__ void quantize_float(
    const Storage* __restrict__ x, const float* __restrict__ scales, const int* __restrict__ zero_points,
    Q* __restrict__ out, long long total, long long channels, long long inner, int low, int high)
{
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;
    const long long c = (index / inner) % channels;
    const float quotient = load_as_float(x + index) / scales[c];
    const float rounded = roundf(quotient);  // halves away from zero
    // (float)2**31 is exact; NaN fails both comparisons.
    const int whole = rounded >= -2147483648.0f && rounded < 2147483648.0f ? (int)rounded : FP_INT32_MIN;
    out[index] = (Q)clamp_int(wrapping_add(whole, zero_points[c]), low, high);
}

#define QUANTIZE_PARAMS(Storage, Q)                                                             \
    const Storage* __restrict__ x, const float* __restrict__ scales,                          \
    const int* __restrict__ zero_points, Q* __restrict__ out, long long total,                \
    long long channels, long long inner, int low, int high
#define QUANTIZE_ARGS x, scales, zero_points, out, total, channels, inner, low, high

extern "C" __global__ void quantize_f32_i8(QUANTIZE_PARAMS(float, signed char))
{
    quantize_float<float, signed char>(QUANTIZE_ARGS);
}

extern "C" __global__ void quantize_f32_u8(QUANTIZE_PARAMS(float, unsigned char))
{
    quantize_float<float, unsigned char>(QUANTIZE_ARGS);
}

extern "C" __global__ void quantize_f16_i8(QUANTIZE_PARAMS(unsigned short, signed char))
{
    quantize_float<unsigned short, signed char>(QUANTIZE_ARGS);
}

extern "C" __global__ void quantize_f16_u8(QUANTIZE_PARAMS(unsigned short, unsigned char))
{
    quantize_float<unsigned short, unsigned char>(QUANTIZE_ARGS);
}

// ---- DEQUANTIZE int8 / uint8 -> float -------------------------------------------------------

template <typename Q, typename Storage>
__device__ __forceinline__ void dequantize_8bit(
    const Q* __restrict__ q, const float* __restrict__ scales, const int* __restrict__ zero_points,
    Storage* __restrict__ out, long long total, long long channels, long long inner)
{
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;
    const long long c = (index / inner) % channels;
    const float centered = (float)((int)q[index] - zero_points[c]);  // exact: |q - zp| < 2**17
    store_from_float(out + index, scales[c] * centered);
}

#define DEQUANTIZE_PARAMS(Q, Storage)                                                           \
    const Q* __restrict__ q, const float* __restrict__ scales,                                \
    const int* __restrict__ zero_points, Storage* __restrict__ out, long long total,          \
    long long channels, long long inner
#define DEQUANTIZE_ARGS q, scales, zero_points, out, total, channels, inner

extern "C" __global__ void dequantize_i8_f32(DEQUANTIZE_PARAMS(signed char, float))
{
    dequantize_8bit<signed char, float>(DEQUANTIZE_ARGS);
}

extern "C" __global__ void dequantize_u8_f32(DEQUANTIZE_PARAMS(unsigned char, float))
{
    dequantize_8bit<unsigned char, float>(DEQUANTIZE_ARGS);
}

extern "C" __global__ void dequantize_i8_f16(DEQUANTIZE_PARAMS(signed char, unsigned short))
{
    dequantize_8bit<signed char, unsigned short>(DEQUANTIZE_ARGS);
}

extern "C" __global__ void dequantize_u8_f16(DEQUANTIZE_PARAMS(unsigned char, unsigned short))
{
    dequantize_8bit<unsigned char, unsigned short>(DEQUANTIZE_ARGS);
}
