// One sum (or max) split over several threads of a block, combined through shared memory: the
// quantized FULLY_CONNECTED (fully_connected_int8.cu), MEAN and SOFTMAX (int8_windows.cu), which
// give a row of values more than one thread and a launch more than one block.
//
// The threads of a block form a blockDim.x x blockDim.y grid, at most REDUCTION_THREADS of them;
// the extent the values are combined along (x or y) is a power of two (the launchers' configs,
// int8_windows.py: row_reduction_launch_config, column_reduction_launch_config, say so). Every
// thread of the block calls the combination, the same number of times (it holds barriers), and
// gets the result. The operations are integer maxima and wrapping int32 sums: associative and
// commutative, so the result is the sequential loop's, bit for bit, whatever the split.
//
// Each .cu that needs this says `#include "block_reduce.cuh"`; sources.read_source splices this
// text in there.

#ifndef LITEDELEGATE_BLOCK_REDUCE_CUH
#define LITEDELEGATE_BLOCK_REDUCE_CUH

#define REDUCTION_THREADS 256

struct WrappingSum {
    __device__ __forceinline__ int operator()(int a, int b) const { return (int)((unsigned)a + (unsigned)b); }
};

struct Maximum {
    __device__ __forceinline__ int operator()(int a, int b) const { return a < b ? b : a; }
};

// value combined over the threads of this thread's row (same threadIdx.y, all threadIdx.x) when
// AlongX, else over its column (same threadIdx.x, all threadIdx.y). `partial` is __shared__ int
// [REDUCTION_THREADS] of the caller.
template <bool AlongX, typename Combine>
__device__ __forceinline__ int block_combine(int* partial, int value, const Combine combine)
{
    const int x = threadIdx.x, y = threadIdx.y, width = blockDim.x;
    const int at = y * width + x;
    const int stride = AlongX ? 1 : width;  // from one thread of the row (column) to the next
    const int position = AlongX ? x : y;
    partial[at] = value;
    __syncthreads();
    for (int half = (AlongX ? blockDim.x : blockDim.y) / 2; half > 0; half /= 2) {
        if (position < half) partial[at] = combine(partial[at], partial[at + half * stride]);
        __syncthreads();
    }
    const int result = partial[at - position * stride];  // the row's (column's) first thread
    __syncthreads();  // the next combination overwrites partial
    return result;
}

#endif  // LITEDELEGATE_BLOCK_REDUCE_CUH
