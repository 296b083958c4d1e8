// The matrix product of the matmul-based ops (CONV_2D after im2col, FULLY_CONNECTED),
// row-major, optionally batched (grouped convolution: one batch per group), in float32
// (matmul_f32) or in int32 (matmul_i32: the quantized kernels' accumulators, which wrap
// on overflow as TFLite's int32 accumulators do):
//
//   c[z, r, j] = sum_{i < k} a[z, r, i] * b[z, i, j]        a: [batch, m, k], b: [batch, k, n]
//
// It exists because CuPy refuses any cuBLAS call while a stream is being captured into a
// CUDA graph ("calling cuBLAS API during stream capture is currently unsupported",
// cupy_backends/cuda/libs/cublas.pyx: setStream), and the delegate replays every
// partition as a graph. The same kernel runs eagerly too, so graphs on and off give the
// same bits.
//
// One thread computes ROWS consecutive rows of one column: a warp's 32 threads take 32
// consecutive columns, so b is read coalesced and a is broadcast; each b value read is
// used ROWS times. The sum runs over i in order with fused multiply-adds (the products
// of TFLite's reference loop, in its order). batch strides are in elements (0 for a b
// shared by every batch). No shared memory: the layers of the models this runs are
// small, and the L1 cache holds a's rows.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#define MATMUL_ROWS 4

__device__ __forceinline__ float multiply_add(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ int multiply_add(int a, int b, int c) {
    return (int)((unsigned int)a * (unsigned int)b + (unsigned int)c);  // two's-complement wrap, no UB
}

template <typename T>
__device__ __forceinline__ void matmul(
    const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
    int m, int n, int k, long long a_batch_stride, long long b_batch_stride, long long c_batch_stride)
{
    const int column = blockIdx.x * blockDim.x + threadIdx.x;
    const int first_row = (blockIdx.y * blockDim.y + threadIdx.y) * MATMUL_ROWS;
    if (column >= n || first_row >= m) return;
    a += blockIdx.z * a_batch_stride;
    b += blockIdx.z * b_batch_stride;
    c += blockIdx.z * c_batch_stride;
    // Rows past the end read the last row (valid memory) and are not stored.
    const T* rows[MATMUL_ROWS];
    for (int r = 0; r < MATMUL_ROWS; ++r) {
        rows[r] = a + (long long)min(first_row + r, m - 1) * k;
    }
    T sums[MATMUL_ROWS] = {0};
    for (int i = 0; i < k; ++i) {
        const T value = b[(long long)i * n + column];
        for (int r = 0; r < MATMUL_ROWS; ++r) {
            sums[r] = multiply_add(rows[r][i], value, sums[r]);
        }
    }
    for (int r = 0; r < MATMUL_ROWS && first_row + r < m; ++r) {
        c[(long long)(first_row + r) * n + column] = sums[r];
    }
}

extern "C" __global__ void matmul_f32(
    const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
    int m, int n, int k, long long a_batch_stride, long long b_batch_stride, long long c_batch_stride)
{
    matmul<float>(a, b, c, m, n, k, a_batch_stride, b_batch_stride, c_batch_stride);
}

extern "C" __global__ void matmul_i32(
    const int* __restrict__ a, const int* __restrict__ b, int* __restrict__ c,
    int m, int n, int k, long long a_batch_stride, long long b_batch_stride, long long c_batch_stride)
{
    matmul<int>(a, b, c, m, n, k, a_batch_stride, b_batch_stride, c_batch_stride);
}
