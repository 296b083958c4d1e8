// What the float matrix products (matmul.cu, matmul_tiled.cu, matmul_mma.cu) share: their
// arguments, their output stage and the tiled ones' tile loaders. Each computes
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

// ---- the tile loader of the tiled products (matmul_tiled.cu, matmul_mma.cu, and conv2d_tiled.cu's
// ---- filter tiles) -----------------------------------------------------------------------------------
// A block of THREADS threads stages a tile of a matrix x (x(r, c) = x[r * row_stride + c * col_stride])
// into shared memory; each thread stages TILE_ROWS * TILE_COLUMNS / THREADS values, and put(r, c, p)
// stores the value at p (or 0 where p is null: past the matrix's end) at row r, column c of the
// tile, in the tile's own layout and type (float32 values, or binary16 bits).

// Rows row0 .. row0 + TILE_ROWS of x (of `rows`), columns column0 .. column0 + TILE_COLUMNS (of
// `columns`): thread t stages column t % TILE_COLUMNS of rows t / TILE_COLUMNS + j * (THREADS /
// TILE_COLUMNS), so consecutive threads read consecutive columns. A's tiles are TILE x TILE_K (a row's
// values of k), B's TILE_K x TILE (a row of k's columns).
template <int TILE_ROWS, int TILE_COLUMNS, int THREADS, typename Storage, typename Put>
__device__ __forceinline__ void stage_tile(
    const Storage* x, int row0, int column0, int rows, int columns, long long row_stride, long long col_stride, int t,
    const Put put)
{
    constexpr int ROWS = THREADS / TILE_COLUMNS;  // rows staged per pass
    for (int j = 0; j < TILE_ROWS / ROWS; ++j) {
        const int r = t / TILE_COLUMNS + j * ROWS, c = t % TILE_COLUMNS;
        const int row = row0 + r, column = column0 + c;
        put(r, c, (column < columns && row < rows) ? x + row * row_stride + column * col_stride : nullptr);
    }
}

#endif  // LITEDELEGATE_MATMUL_CUH
