// Float elementwise ops, one launch per node: a binary op with numpy broadcasting (up to
// rank 4) and a unary op, each ending with a clamp (the fused activation, or the RELU
// ops' range). One thread per output element; float32 arithmetic for both storage types.
//
// Binary (elementwise_binary_f32 / _f16):
//   out[i0, i1, i2, i3] = clamp(op(a[i0*as0 + i1*as1 + i2*as2 + i3*as3],
//                                  b[i0*bs0 + i1*bs1 + i2*bs2 + i3*bs3]), act_min, act_max)
//   The output is C-contiguous, its shape [d0, d1, d2, d3] (a lower rank padded with
//   leading 1s); asK / bsK are each input's element strides, 0 on an axis it broadcasts
//   along (size 1 there). When neither input broadcasts (broadcast == 0) a, b and out are
//   read at the same flat index. op (enum BinaryOp below; cuda/elementwise.py mirrors it):
//     ADD a + b   SUB a - b   MUL a * b   DIV a / b (IEEE: x/0 = +-inf, 0/0 = NaN)
//     MAXIMUM a > b ? a : b   MINIMUM a < b ? a : b      (a NaN a gives b, as TFLite)
//     SQUARED_DIFFERENCE d = a - b; d * d
//     POW powf(a, b)                                      (TFLite's std::pow on floats)
//     PRELU a >= 0 ? a : a * b                            (b = alpha, broadcast to a)
//   ADD SUB MUL DIV clamp to their fused activation's range (sources.activation_range:
//   NONE -FLT_MAX..FLT_MAX, so +-inf saturates, as TFLite's float kernels); the others
//   have no clamp in TFLite and are launched with -inf..inf (a no-op).
//
// Unary (elementwise_unary_f32 / _f16), out[i] = clamp(f(x[i]), act_min, act_max):
//     CLAMP x (RELU 0..inf, RELU6 0..6, RELU_N1_TO_1 -1..1, RELU_0_TO_1 0..1)
//     LEAKY_RELU x > 0 ? x : x * alpha
//     HARD_SWISH t = x + 3; t = min(max(t, 0), 6); (t * x) / 6        (the CPU kernel's order)
//     LOGISTIC 1 / (1 + expf(-x))       TANH tanhf(x)       ELU x >= 0 ? x : expm1f(x)
//     GELU (exact) x * (q + [x > 0] * (1 - 2q)), q = erfc(|x| / sqrt(2)) / 2 by the CPU
//       kernel's Chebyshev fit (ERFC_COEFFICIENTS), step by step
//     GELU_TANH ((tanhf((x * x * c + sqrt(2/pi)) * x) + 1) * x) * 0.5, c = sqrt(2/pi) * 0.044715
//     ABS fabsf  EXP expf  LOG logf  SQRT sqrtf  RSQRT 1 / sqrtf(x)  SIN sinf  COS cosf
//     NEG -x  SQUARE x * x  FLOOR floorf  CEIL ceilf
//   Every op but CLAMP is launched with -inf..inf.
//
// The clamp is TFLite's ActivationFunctionWithMinMax, v < lo ? lo : v then v > hi ? hi : v,
// so NaN propagates (fminf/fmaxf would drop it). The bounds come from the host: NVRTC has
// no FLT_MAX or INFINITY.
//
// Numerics against the numpy twins (cuda/elementwise.py) and the CPU kernels: + - * /,
// sqrtf, the comparisons, fabsf, floorf, ceilf and the float16 conversions are correctly
// rounded IEEE operations on both (CuPy compiles with the default -prec-div=true
// -prec-sqrt=true), so those ops are bit-exact. The GELU steps are written with
// __fmul_rn / __fadd_rn so that NVRTC's default --fmad=true cannot contract them into
// fused multiply-adds (the CPU kernel rounds each step); no other op has a product
// followed by an add. CUDA's expf, expm1f, logf, sinf, cosf, tanhf and powf differ from
// glibc's / numpy's in the last 1-4 ulp (CUDA Programming Guide, "Mathematical
// Functions"): LOGISTIC TANH ELU GELU EXP LOG SIN COS and POW are therefore within a few
// float32 ulp of the CPU kernels (relative ~5e-7), far inside the float ops tests' 1e-5
// relative tolerance against BUILTIN_REF. Also CuPy's -ftz=true flushes float32 subnormal
// results to zero on a device (the host shim does not).
//
// Launch: 1-D, one thread per output element, blockDim.x * gridDim.x >= total
// (sources.elementwise_launch_config). Arrays are C-contiguous; float16 storage holds
// IEEE binary16 bit patterns (unsigned short) for every array of the launch.
//
// This file must compile with NVRTC (no system headers; the .cuh headers are spliced in) and with g++ through
// host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

// ---- storage types ---------------------------------------------------------------------------
#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns
#include "coordinates.cuh"  // BROADCAST_4D_PARAMS / _ARGS, broadcast_offsets: the inputs' elements

// ---- one rounding per step: never contracted into a fused multiply-add -------------------
__device__ __forceinline__ float mul_rn(float a, float b) {
#ifdef CUDA_HOST_SHIM
    return a * b;  // the shim's g++ -std=c++20 (ISO C++) does not contract: -ffp-contract=off
#else
    return __fmul_rn(a, b);
#endif
}

__device__ __forceinline__ float add_rn(float a, float b) {
#ifdef CUDA_HOST_SHIM
    return a + b;
#else
    return __fadd_rn(a, b);
#endif
}

__device__ __forceinline__ float clamp_range(float v, float act_min, float act_max) {
    v = v < act_min ? act_min : v;
    return v > act_max ? act_max : v;
}

// ---- binary ---------------------------------------------------------------------------------

enum BinaryOp {
    BINARY_ADD = 0,
    BINARY_SUB = 1,
    BINARY_MUL = 2,
    BINARY_DIV = 3,
    BINARY_MAXIMUM = 4,
    BINARY_MINIMUM = 5,
    BINARY_SQUARED_DIFFERENCE = 6,
    BINARY_POW = 7,
    BINARY_PRELU = 8,
};

__device__ __forceinline__ float binary_op(int op, float a, float b) {
    switch (op) {
        case BINARY_ADD: return a + b;
        case BINARY_SUB: return a - b;
        case BINARY_MUL: return a * b;
        case BINARY_DIV: return a / b;
        case BINARY_MAXIMUM: return a > b ? a : b;
        case BINARY_MINIMUM: return a < b ? a : b;
        case BINARY_SQUARED_DIFFERENCE: {
            const float d = a - b;
            return d * d;
        }
        case BINARY_POW: return powf(a, b);
        case BINARY_PRELU: return a >= 0.0f ? a : a * b;
        default: return a;  // unreachable: the host passes one of the codes above
    }
}

template <typename Storage>
__device__ __forceinline__ void elementwise_binary(
    const Storage* __restrict__ a, const Storage* __restrict__ b, Storage* __restrict__ out,
    long long total, int op, BROADCAST_4D_PARAMS, float act_min, float act_max)
{
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;  // the last block is partial
    const BroadcastOffsets offsets = broadcast_offsets(index, BROADCAST_4D_ARGS);
    const float value = binary_op(op, load_as_float(a + offsets.a), load_as_float(b + offsets.b));
    store_from_float(out + index, clamp_range(value, act_min, act_max));
}

extern "C" __global__ void elementwise_binary_f32(
    const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
    long long total, int op, BROADCAST_4D_PARAMS, float act_min, float act_max)
{
    elementwise_binary<float>(a, b, out, total, op, BROADCAST_4D_ARGS, act_min, act_max);
}

extern "C" __global__ void elementwise_binary_f16(
    const unsigned short* __restrict__ a, const unsigned short* __restrict__ b, unsigned short* __restrict__ out,
    long long total, int op, BROADCAST_4D_PARAMS, float act_min, float act_max)
{
    elementwise_binary<unsigned short>(a, b, out, total, op, BROADCAST_4D_ARGS, act_min, act_max);
}

// ---- unary ----------------------------------------------------------------------------------

enum UnaryOp {
    UNARY_CLAMP = 0,
    UNARY_LEAKY_RELU = 1,
    UNARY_HARD_SWISH = 2,
    UNARY_LOGISTIC = 3,
    UNARY_TANH = 4,
    UNARY_ELU = 5,
    UNARY_GELU = 6,
    UNARY_GELU_TANH = 7,
    UNARY_ABS = 8,
    UNARY_EXP = 9,
    UNARY_LOG = 10,
    UNARY_SQRT = 11,
    UNARY_RSQRT = 12,
    UNARY_SIN = 13,
    UNARY_COS = 14,
    UNARY_NEG = 15,
    UNARY_SQUARE = 16,
    UNARY_FLOOR = 17,
    UNARY_CEIL = 18,
};

// The float32 constants of the CPU kernels (backends/cpu/kernels/activations.py), written
// as the shortest decimals that round to them (a test checks them against the Python values).
#define GELU_SQRT_2_OVER_PI 0.7978846f          // SQRT_2_OVER_PI
#define GELU_CUBIC_COEFFICIENT 0.035677407f     // SQRT_2_OVER_PI * GELU_CUBIC
#define GELU_HALF_INV_SQRT2 0.35355338f         // INV_SQRT2 / 2
// ERFC_COEFFICIENTS[0..9] as float32
#define ERFC_C0 -1.2655122f
#define ERFC_C1 1.0000237f
#define ERFC_C2 0.37409195f
#define ERFC_C3 0.09678418f
#define ERFC_C4 -0.18628806f
#define ERFC_C5 0.27886808f
#define ERFC_C6 -1.135204f
#define ERFC_C7 1.4885159f
#define ERFC_C8 -0.82215226f
#define ERFC_C9 0.17087276f

__device__ __forceinline__ float gelu_erfc(float x) {
    // r = erfc(z), z = |x| / sqrt(2): t * exp(-z^2 + P(t)), t = 1 / (1 + z / 2)
    const float minus_z2 = mul_rn(mul_rn(x, x), -0.5f);
    const float t = 1.0f / add_rn(mul_rn(fabsf(x), GELU_HALF_INV_SQRT2), 1.0f);
    float p = add_rn(mul_rn(t, ERFC_C9), ERFC_C8);
    p = add_rn(mul_rn(p, t), ERFC_C7);
    p = add_rn(mul_rn(p, t), ERFC_C6);
    p = add_rn(mul_rn(p, t), ERFC_C5);
    p = add_rn(mul_rn(p, t), ERFC_C4);
    p = add_rn(mul_rn(p, t), ERFC_C3);
    p = add_rn(mul_rn(p, t), ERFC_C2);
    p = add_rn(mul_rn(p, t), ERFC_C1);
    p = add_rn(mul_rn(p, t), ERFC_C0);
    const float half_r = mul_rn(mul_rn(expf(add_rn(minus_z2, p)), t), 0.5f);  // q = r / 2
    // 0.5 * x * erfc(-x / sqrt(2)) = x * (q + [x > 0] * (1 - 2q)); keeps GELU(+inf) = +inf
    const float step = mul_rn(add_rn(mul_rn(half_r, -2.0f), 1.0f), x > 0.0f ? 1.0f : 0.0f);
    return mul_rn(add_rn(half_r, step), x);
}

__device__ __forceinline__ float gelu_tanh(float x) {
    // x * (sqrt(2 / pi) + sqrt(2 / pi) * 0.044715 * x^2), then tanh, in the CPU kernel's order
    const float inner = mul_rn(add_rn(mul_rn(mul_rn(x, x), GELU_CUBIC_COEFFICIENT), GELU_SQRT_2_OVER_PI), x);
    return mul_rn(mul_rn(add_rn(tanhf(inner), 1.0f), x), 0.5f);
}

__device__ __forceinline__ float unary_op(int op, float x, float alpha) {
    switch (op) {
        case UNARY_CLAMP: return x;
        case UNARY_LEAKY_RELU: return x > 0.0f ? x : x * alpha;
        case UNARY_HARD_SWISH: {
            float t = x + 3.0f;
            t = t < 0.0f ? 0.0f : t;  // np.clip's order: max, then min (NaN stays NaN)
            t = t > 6.0f ? 6.0f : t;
            return (t * x) / 6.0f;
        }
        case UNARY_LOGISTIC: return 1.0f / (1.0f + expf(-x));  // expf(-x) = inf for x < -88 gives 0
        case UNARY_TANH: return tanhf(x);
        case UNARY_ELU: return x >= 0.0f ? x : expm1f(x);
        case UNARY_GELU: return gelu_erfc(x);
        case UNARY_GELU_TANH: return gelu_tanh(x);
        case UNARY_ABS: return fabsf(x);
        case UNARY_EXP: return expf(x);
        case UNARY_LOG: return logf(x);
        case UNARY_SQRT: return sqrtf(x);
        case UNARY_RSQRT: return 1.0f / sqrtf(x);  // two correctly rounded steps, not rsqrtf
        case UNARY_SIN: return sinf(x);
        case UNARY_COS: return cosf(x);
        case UNARY_NEG: return -x;
        case UNARY_SQUARE: return x * x;
        case UNARY_FLOOR: return floorf(x);
        case UNARY_CEIL: return ceilf(x);
        default: return x;  // unreachable: the host passes one of the codes above
    }
}

template <typename Storage>
__device__ __forceinline__ void elementwise_unary(
    const Storage* __restrict__ x, Storage* __restrict__ out, long long total, int op,
    float alpha, float act_min, float act_max)
{
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;  // the last block is partial
    const float value = unary_op(op, load_as_float(x + index), alpha);
    store_from_float(out + index, clamp_range(value, act_min, act_max));
}

extern "C" __global__ void elementwise_unary_f32(
    const float* __restrict__ x, float* __restrict__ out, long long total, int op,
    float alpha, float act_min, float act_max)
{
    elementwise_unary<float>(x, out, total, op, alpha, act_min, act_max);
}

extern "C" __global__ void elementwise_unary_f16(
    const unsigned short* __restrict__ x, unsigned short* __restrict__ out, long long total, int op,
    float alpha, float act_min, float act_max)
{
    elementwise_unary<unsigned short>(x, out, total, op, alpha, act_min, act_max);
}
