// Where the output elements of the data-movement kernels come from: PAD and CONCATENATION, float
// (layout.cu) and 8-bit (int8_layout.cu). The kernels differ only in what they do with the
// element they find (move it, clamp it, or look it up in a rescale table) and in the pad value.
// One thread per output element of what the launch writes.
//
// PAD, rank <= 4 (the host left-pads the shapes to 4-D with 1s and 0 paddings):
//   input [in0, in1, in2, in3], output [out0, out1, out2, out3], out_k = before_k + in_k + after_k
//   out[o] = in[o - before]   where 0 <= o_k - before_k < in_k for every k
//          = the pad value    elsewhere
//
// CONCATENATION along one axis: the output seen as [outer, axis_total, inner], input k as
// [outer, extent_k, inner]. One launch joins up to CONCAT_MAX_INPUTS (8) inputs, passed by
// value as pointers with their extents (unused slots: a null pointer and extent 0), into output
// rows [axis_start, axis_start + sum of the extents) of the axis:
//   out[o, axis_start + offset_k + p, i] = f(in_k[o, p, i])   offset_k = e_0 + ... + e_{k-1}
//
// Needs coordinates.cuh (coordinates_4d), included before it. Each .cu that needs this says
// `#include "layout_index.cuh"`; sources.read_source splices this text in there.

#ifndef LITEDELEGATE_LAYOUT_INDEX_CUH
#define LITEDELEGATE_LAYOUT_INDEX_CUH

// ---- PAD --------------------------------------------------------------------------------------

// PAD's shapes, int32 scalars in this order (the kernels' arguments after the two arrays, before
// the pad value), and the arguments that pass them on.
#define PAD_4D_PARAMS                                                                           \
    int in0, int in1, int in2, int in3, int out0, int out1, int out2, int out3, int before0,  \
    int before1, int before2, int before3
#define PAD_4D_ARGS in0, in1, in2, in3, out0, out1, out2, out3, before0, before1, before2, before3

// This thread's output element of a PAD.
struct PadElement {
    long long index;   // the output element
    bool inside;       // whether it reads the input (else the pad value)
    long long source;  // the input element it reads, when inside
};

// The output element of this thread (blockIdx, threadIdx) and where it comes from; false for a
// thread past the end (the last block is partial).
__device__ __forceinline__ bool pad_element(PAD_4D_PARAMS, PadElement& element)
{
    const long long total = (long long)out0 * out1 * out2 * out3;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return false;

    const Coordinates4d<int> at = coordinates_4d(index, out1, out2, out3);
    const int i0 = at.i0 - before0, i1 = at.i1 - before1, i2 = at.i2 - before2, i3 = at.i3 - before3;
    element.index = index;
    element.inside = i0 >= 0 && i0 < in0 && i1 >= 0 && i1 < in1 && i2 >= 0 && i2 < in2 && i3 >= 0 && i3 < in3;
    element.source = (((long long)i0 * in1 + i1) * in2 + i2) * in3 + i3;
    return true;
}

// ---- CONCATENATION ----------------------------------------------------------------------------

#define CONCAT_MAX_INPUTS 8

// The inputs of one launch, as the kernels take them (pointers, then extents), and the arrays
// that hold them in the kernel.
#define CONCAT_INPUTS_PARAMS(T)                                                                 \
    const T* in0, const T* in1, const T* in2, const T* in3, const T* in4, const T* in5,       \
    const T* in6, const T* in7, int e0, int e1, int e2, int e3, int e4, int e5, int e6, int e7
#define CONCAT_INPUTS_ARRAYS(T)                                                                 \
    const T* const inputs[CONCAT_MAX_INPUTS] = {in0, in1, in2, in3, in4, in5, in6, in7};      \
    const int extents[CONCAT_MAX_INPUTS] = {e0, e1, e2, e3, e4, e5, e6, e7};

// This thread's output element of a CONCATENATION.
template <typename T>
struct ConcatElement {
    int k;             // the input it reads
    const T* source;   // the element of input k it reads
    long long target;  // the output element
};

// The output element of this thread (blockIdx, threadIdx) and where it comes from; false for a
// thread past the end (the last block is partial). The slots are walked with constant indices
// (unrolled): an index computed at run time would put the inputs and extents in local memory.
template <typename T>
__device__ __forceinline__ bool concat_element(
    const T* const (&inputs)[CONCAT_MAX_INPUTS], const int (&extents)[CONCAT_MAX_INPUTS], int outer, int inner,
    int axis_total, int axis_start, ConcatElement<T>& element)
{
    int count = 0;  // this launch's rows of the axis
#pragma unroll
    for (int k = 0; k < CONCAT_MAX_INPUTS; ++k) count += extents[k];
    const long long total = (long long)outer * count * inner;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return false;

    // index = (o * count + p) * inner + i
    const int i = (int)(index % inner);
    const long long rest = index / inner;
    const int p = (int)(rest % count);
    const int o = (int)(rest / count);

    // The input row p falls in (the first k whose rows reach past it), its extent and p's row in it.
    const T* input = inputs[0];
    int input_k = 0, extent = extents[0], row = p;
    bool found = false;
#pragma unroll
    for (int k = 0; k < CONCAT_MAX_INPUTS; ++k) {
        if (found) continue;
        if (row < extents[k]) {
            found = true;
            input_k = k;
            input = inputs[k];
            extent = extents[k];
        } else {
            row -= extents[k];
        }
    }
    element.k = input_k;
    element.source = input + ((long long)o * extent + row) * inner + i;
    element.target = ((long long)o * axis_total + axis_start + p) * inner + i;
    return true;
}

#endif  // LITEDELEGATE_LAYOUT_INDEX_CUH
