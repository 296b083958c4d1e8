// What the float matrix products (matmul.cu, matmul_tiled.cu, matmul_mma.cu) share: their
// arguments and their output stage. Each computes
//
//   c[z, r, j] = clamp(bias[j] + sum_{i < k} a(z, r, i) * b(z, i, j), act_min, act_max)
//   a(z, r, i) = a[z * a_batch_stride + r * a_row_stride + i * a_col_stride]   (b likewise)
//
// with c row-major ([m, n] per batch, c_batch_stride apart) and bias null or [n]. Needs
// storage.cuh before it; each .cu that needs it says `#include "matmul.cuh"`, and
// sources.read_source splices this text in there.

#ifndef LITEDELEGATE_MATMUL_CUH
#define LITEDELEGATE_MATMUL_CUH

// The arguments of every entry point (conv2d.py: matmul_bias_act_args) and of their bodies, in
// storage T, and the arguments that pass them on.
#define MATMUL_PARAMS(T)                                                                        \
    const T* __restrict__ a, const T* __restrict__ b, const T* __restrict__ bias,               \
    T* __restrict__ c, int m, int n, int k,                                                      \
    long long a_batch_stride, long long a_row_stride, long long a_col_stride,                    \
    long long b_batch_stride, long long b_row_stride, long long b_col_stride,                    \
    long long c_batch_stride, float act_min, float act_max
#define MATMUL_ARGS                                                                             \
    a, b, bias, c, m, n, k, a_batch_stride, a_row_stride, a_col_stride,                         \
    b_batch_stride, b_row_stride, b_col_stride, c_batch_stride, act_min, act_max

// c[row, column] = clamp(result, act_min, act_max), result being the sum plus the bias: TFLite's
// ActivationFunctionWithMinMax, so NaN propagates (fmaxf/fminf would drop it).
template <typename Storage>
__device__ __forceinline__ void store_matmul_output(
    Storage* c, int row, int column, int n, float result, float act_min, float act_max)
{
    result = result < act_min ? act_min : result;
    result = result > act_max ? act_max : result;
    store_from_float(c + (long long)row * n + column, result);
}

#endif  // LITEDELEGATE_MATMUL_CUH
