// TFLite's integer requantization arithmetic for the quantized kernels, written once for the
// device: the CUDA twin of the array-namespace version the CPU uses
// (backends/cpu/quantization.py; backends/cpu/kernels/_fixed_point.py), which a test
// (tests/gpu/test_quantized_arithmetic.py) requires equal bit for bit over the edge cases,
// through the host shim (g++) and, on a GPU machine, on the device; NVRTC compiles it in CI.
//
// Each quantized .cu says `#include "fixed_point.cuh"`; sources.read_source splices this text
// in there (NVRTC gets no include path and the wheel's NVRTC has no system headers).
//
// Conventions, as in TFLite and gemmlowp: values are int32 ("int", 32 bits with NVRTC and
// g++); an addition or a left shift that can overflow wraps in two's complement as the
// compiled C does (done in unsigned arithmetic here, where C++ leaves signed overflow
// undefined); right shifts of negative values are arithmetic. Multipliers come from
// QuantizeMultiplier (quantization.quantize_multiplier): real ~= multiplier * 2**(shift - 31),
// shift > 0 a left shift. The rounding scheme is gemmlowp's double rounding
// (SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT): the LiteRT we match is built
// without TFLITE_SINGLE_ROUNDING (quantization.SINGLE_ROUNDING is False; tested there).

#ifndef LITEDELEGATE_FIXED_POINT_CUH
#define LITEDELEGATE_FIXED_POINT_CUH

#define FP_INT32_MIN (-2147483647 - 1)
#define FP_INT32_MAX 2147483647

// ---- two's-complement int32 arithmetic (what the compiled C does on overflow) -------------

__device__ __forceinline__ int wrapping_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ int wrapping_sub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
__device__ __forceinline__ int wrapping_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
// x * 2**exponent in int32, wrapping (TFLite's `x * (1 << left_shift)`), 0 <= exponent <= 31.
__device__ __forceinline__ int wrapping_shift_left(int x, int exponent) { return (int)((unsigned)x << exponent); }

// The low 32 bits of an int64 as int32 (C's conversion to int32_t).
__device__ __forceinline__ int wrap_int32(long long x) { return (int)(unsigned)(unsigned long long)x; }

__device__ __forceinline__ int clamp_int(int x, int low, int high) {
    return x < low ? low : (x > high ? high : x);
}

// a + b saturated to int32 (gemmlowp's SaturatingAdd on int32).
__device__ __forceinline__ int saturating_add(int a, int b) {
    const long long sum = (long long)a + (long long)b;
    return sum < FP_INT32_MIN ? FP_INT32_MIN : (sum > FP_INT32_MAX ? FP_INT32_MAX : (int)sum);
}

// a - b saturated to int32.
__device__ __forceinline__ int saturating_sub(int a, int b) {
    const long long difference = (long long)a - (long long)b;
    return difference < FP_INT32_MIN ? FP_INT32_MIN : (difference > FP_INT32_MAX ? FP_INT32_MAX : (int)difference);
}

// ---- gemmlowp's fixed point ---------------------------------------------------------------

// SaturatingRoundingDoublingHighMul: the high 32 bits of 2 * a * b, rounded to nearest (halves
// away from zero); INT32_MIN * INT32_MIN, the one overflow, saturates to INT32_MAX.
__device__ __forceinline__ int saturating_rounding_doubling_high_mul(int a, int b) {
    const bool overflow = a == b && a == FP_INT32_MIN;
    const long long ab = (long long)a * (long long)b;
    const long long nudge = ab >= 0 ? (1ll << 30) : (1ll - (1ll << 30));
    const int ab_x2_high32 = (int)((ab + nudge) / (1ll << 31));  // C's division truncates toward zero
    return overflow ? FP_INT32_MAX : ab_x2_high32;
}

// RoundingDivideByPOT: x / 2**exponent, rounded to nearest, halves away from zero;
// 0 <= exponent <= 31.
__device__ __forceinline__ int rounding_divide_by_pot(int x, int exponent) {
    const int mask = (int)((1ll << exponent) - 1);
    const int remainder = x & mask;
    const int threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// SaturatingRoundingMultiplyByPOT with exponent >= 0 (TFLite's
// SaturatingRoundingMultiplyByPOTParam): x * 2**exponent saturated to int32; 0 <= exponent <= 31.
__device__ __forceinline__ int saturating_shift_left(int x, int exponent) {
    const long long threshold = (1ll << (31 - exponent)) - 1;
    if (x > threshold) return FP_INT32_MAX;
    if (x < -threshold) return FP_INT32_MIN;
    return wrapping_shift_left(x, exponent);
}

// RoundingHalfSum: (a + b) / 2 rounded to nearest, halves away from zero.
__device__ __forceinline__ int rounding_half_sum(int a, int b) {
    const long long sum = (long long)a + (long long)b;
    const long long sign = sum >= 0 ? 1 : -1;
    return (int)((sum + sign) / 2);
}

// ---- TFLite's requantization ---------------------------------------------------------------

// MultiplyByQuantizedMultiplier(int32 x, int32 multiplier, int shift): x * real, rounded
// (gemmlowp double rounding); shift in [-31, 30]: a left shift of x (wrapping) when > 0,
// a rounding right shift of the product when < 0.
__device__ __forceinline__ int multiply_by_quantized_multiplier(int x, int multiplier, int shift) {
    const int left_shift = shift > 0 ? shift : 0;
    const int right_shift = shift > 0 ? 0 : -shift;
    return rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(wrapping_shift_left(x, left_shift), multiplier), right_shift);
}

// MultiplyByQuantizedMultiplierSmallerThanOneExp: the multiplier of QuantizeMultiplierSmaller
// ThanOneExp, left_shift <= 0 (the ADD/SUB kernels' input and output rescaling).
__device__ __forceinline__ int multiply_by_quantized_multiplier_smaller_than_one_exp(int x, int multiplier, int left_shift) {
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), -left_shift);
}

// MultiplyByQuantizedMultiplierGreaterThanOne: left_shift >= 0.
__device__ __forceinline__ int multiply_by_quantized_multiplier_greater_than_one(int x, int multiplier, int left_shift) {
    return saturating_rounding_doubling_high_mul(wrapping_shift_left(x, left_shift), multiplier);
}

// MultiplyByQuantizedMultiplier(int64 x, int32 multiplier, int shift), the 16x8 kernels'
// overload: the multiplier reduced to 16 bits, then one rounding shift; x in [-2**47, 2**47),
// shift in [-31, 14]; the result's low 32 bits.
__device__ __forceinline__ int multiply_by_quantized_multiplier_int64(long long x, int multiplier, int shift) {
    const long long reduced = multiplier < 0x7FFF0000 ? ((long long)multiplier + (1 << 15)) >> 16 : 0x7FFF;
    const int total_shift = 15 - shift;
    return wrap_int32((x * reduced + (1ll << (total_shift - 1))) >> total_shift);
}

// The output stage of TFLite's reference integer FULLY_CONNECTED (uint8/int8), which rescales
// in double: clamp(int32(round(double(acc) * scale)) + zero_point, low, high), C's round
// (halves away from zero); a rounded value outside int32 converts to INT32_MIN (as on x86) and
// the zero point's addition wraps. The CPU's fully_connected_quantized.rescale_double (with
// check_int32_conversion; without it the same values, as no conversion can then leave int32).
__device__ __forceinline__ int rescale_double(int acc, double scale, int zero_point, int low, int high) {
    const double rounded = round((double)acc * scale);
    const int whole = rounded >= -2147483648.0 && rounded < 2147483648.0 ? (int)rounded : FP_INT32_MIN;
    return clamp_int(wrapping_add(whole, zero_point), low, high);
}

#endif  // LITEDELEGATE_FIXED_POINT_CUH
