// A flat index's coordinates, for the kernels that give one thread to each element of a
// row-major (C-contiguous) 4-D array: the NHWC kernels (depthwise_conv2d*.cu, pooling.cuh,
// space_batch.cu), PAD and the gathers (layout.cu, int8_layout.cu) and the broadcasting binary
// ops (elementwise.cu, int8_elementwise.cu).
//
//   index = ((i0 * d1 + i1) * d2 + i2) * d3 + i3      (d0 is not needed)
//
// The broadcasting binary ops read their inputs a and b through element strides (asK, bsK: 0 on
// an axis the input broadcasts along) over the output's shape [d0, d1, d2, d3]; with broadcast 0
// both are read at the output's own index.
//
// Each .cu that needs this says `#include "coordinates.cuh"`; sources.read_source splices this
// text in there.

#ifndef LITEDELEGATE_COORDINATES_CUH
#define LITEDELEGATE_COORDINATES_CUH

// The coordinates of one element; Index is int or long long (the type of the extents).
template <typename Index>
struct Coordinates4d {
    Index i0, i1, i2, i3;
};

// The coordinates of element `index` of an array [d0, d1, d2, d3] (row-major).
template <typename Index>
__device__ __forceinline__ Coordinates4d<Index> coordinates_4d(long long index, Index d1, Index d2, Index d3)
{
    Coordinates4d<Index> at;
    long long rest = index;
    at.i3 = (Index)(rest % d3);
    rest /= d3;
    at.i2 = (Index)(rest % d2);
    rest /= d2;
    at.i1 = (Index)(rest % d1);
    at.i0 = (Index)(rest / d1);
    return at;
}

// The broadcast of a binary op, int32 / int64 scalars in this order, as the kernels take them
// (cuda/elementwise.py's and int8_elementwise.py's argument lists), and the arguments that pass
// it on.
#define BROADCAST_4D_PARAMS                                                                     \
    int broadcast, long long d1, long long d2, long long d3,                                  \
    long long as0, long long as1, long long as2, long long as3,                               \
    long long bs0, long long bs1, long long bs2, long long bs3
#define BROADCAST_4D_ARGS broadcast, d1, d2, d3, as0, as1, as2, as3, bs0, bs1, bs2, bs3

// The elements of a and b that output element `index` reads.
struct BroadcastOffsets {
    long long a, b;
};

__device__ __forceinline__ BroadcastOffsets broadcast_offsets(long long index, BROADCAST_4D_PARAMS)
{
    BroadcastOffsets offsets = {index, index};
    if (broadcast) {
        const Coordinates4d<long long> at = coordinates_4d(index, d1, d2, d3);
        offsets.a = at.i0 * as0 + at.i1 * as1 + at.i2 * as2 + at.i3 * as3;
        offsets.b = at.i0 * bs0 + at.i1 * bs1 + at.i2 * bs2 + at.i3 * bs3;
    }
    return offsets;
}

#endif  // LITEDELEGATE_COORDINATES_CUH
