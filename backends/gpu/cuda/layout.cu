// PAD (constant value) and CONCATENATION, version 1 (float), and a gather along every axis
// (MIRROR_PAD, any element type; at the end of the file): one thread per output element of
// what the launch writes. TFLite's reference kernels (backends/cpu/kernels/pad.py,
// concat_split.py).
//
// PAD, rank <= 4 (the host left-pads the shapes to 4-D with 1s and 0 paddings):
//   input [in0, in1, in2, in3], output [out0, out1, out2, out3], out_k = before_k + in_k + after_k
//   out[o] = in[o - before]   where 0 <= o_k - before_k < in_k for every k
//          = value            elsewhere (0 for PAD)
//   Launch: 1-D over the output, blockDim.x * gridDim.x >= out0 * out1 * out2 * out3.
//
// CONCATENATION along one axis: the output seen as [outer, axis_total, inner] (outer: the
// product of the dimensions before the axis, inner: after it), input k as
// [outer, extent_k, inner]. One launch joins up to CONCAT_MAX_INPUTS (8) inputs, passed by
// value as pointers with their extents (unused slots: a null pointer and extent 0), into
// output rows [axis_start, axis_start + sum of the extents) of the axis:
//   out[o, axis_start + offset_k + p, i] = clamp(in_k[o, p, i])   offset_k = e_0 + ... + e_{k-1}
// More inputs take one launch per group of 8 (cuda/layout.py: ConcatenationCuda chains
// them; each launch writes only its inputs' rows, so their order does not matter).
// Launch: 1-D, blockDim.x * gridDim.x >= outer * (e_0 + ... + e_7) * inner.
// clamp: with `clamp` 0 the value is moved (bits unchanged); with 1 it is TFLite's
// ActivationFunctionWithMinMax in float32: v < act_min ? act_min : v, then
// v > act_max ? act_max : v (NaN passes; RELU's act_max is +inf, passed from the host:
// NVRTC has no INFINITY).
//
// Storage float32 or float16 (binary16 bit patterns). This file must compile with NVRTC
// (no system headers; the .cuh headers are spliced in) and with g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

// ---- storage types ---------------------------------------------------------------------------

#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns
#include "coordinates.cuh"  // coordinates_4d
#include "layout_index.cuh"  // pad_element, concat_element: where an output element comes from

// ---- PAD ------------------------------------------------------------------------------------

template <typename Storage>
__device__ __forceinline__ void pad_4d(
    const Storage* __restrict__ input, Storage* __restrict__ output, PAD_4D_PARAMS, float value)
{
    PadElement element;
    if (!pad_element(PAD_4D_ARGS, element)) return;  // the last block is partial
    if (element.inside) {
        output[element.index] = input[element.source];
    } else {
        store_from_float(output + element.index, value);
    }
}

extern "C" __global__ void pad_f32(const float* __restrict__ input, float* __restrict__ output, PAD_4D_PARAMS, float value)
{
    pad_4d<float>(input, output, PAD_4D_ARGS, value);
}

extern "C" __global__ void pad_f16(
    const unsigned short* __restrict__ input, unsigned short* __restrict__ output, PAD_4D_PARAMS, float value)
{
    pad_4d<unsigned short>(input, output, PAD_4D_ARGS, value);
}

// ---- CONCATENATION --------------------------------------------------------------------------

template <typename Storage>
__device__ __forceinline__ void concatenation(
    Storage* __restrict__ output, const Storage* const (&inputs)[CONCAT_MAX_INPUTS],
    const int (&extents)[CONCAT_MAX_INPUTS], int outer, int inner, int axis_total, int axis_start,
    int clamp, float act_min, float act_max)
{
    ConcatElement<Storage> element;
    if (!concat_element(inputs, extents, outer, inner, axis_total, axis_start, element)) return;
    const Storage* source = element.source;
    Storage* target = output + element.target;
    if (clamp) {
        float v = load_as_float(source);
        v = v < act_min ? act_min : v;
        v = v > act_max ? act_max : v;
        store_from_float(target, v);
    } else {
        *target = *source;
    }
}

#define CONCAT_PARAMS(Storage)                                                                          \
    Storage* __restrict__ output, CONCAT_INPUTS_PARAMS(Storage), int outer, int inner,                 \
    int axis_total, int axis_start, int clamp, float act_min, float act_max
#define CONCAT_BODY(Storage)                                                                            \
    CONCAT_INPUTS_ARRAYS(Storage)                                                                       \
    concatenation<Storage>(output, inputs, extents, outer, inner, axis_total, axis_start, clamp, act_min, act_max);

extern "C" __global__ void concatenation_f32(CONCAT_PARAMS(float)) { CONCAT_BODY(float) }

extern "C" __global__ void concatenation_f16(CONCAT_PARAMS(unsigned short)) { CONCAT_BODY(unsigned short) }

// ---- a gather along every axis (MIRROR_PAD) -------------------------------------------------
// out[o0, o1, o2, o3] = in[t0[o0], t1[o1], t2[o2], t3[o3]], rank <= 4 (the host left-pads
// the shapes to 4-D with 1s and their tables with [0]). The tables are one int32 array,
// axis after axis: t_k starts at out0 + ... + out_{k-1}, and t_k[o] is the input index
// that output index o of axis k reads (computed on the host at prepare, e.g. the mirror
// of MIRROR_PAD's REFLECT / SYMMETRIC). Values are moved, not computed, so one kernel per
// element size serves every type: 1 byte (int8, uint8), 2 (float16 storage), 4 (float32,
// int32).
// Launch: 1-D over the output, blockDim.x * gridDim.x >= out0 * out1 * out2 * out3.

template <typename Element>
__device__ __forceinline__ void gather_axes_4d(
    const Element* __restrict__ input, const int* __restrict__ tables, Element* __restrict__ output,
    int in1, int in2, int in3, int out0, int out1, int out2, int out3)
{
    const long long total = (long long)out0 * out1 * out2 * out3;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;

    const Coordinates4d<int> o = coordinates_4d(index, out1, out2, out3);
    const int i0 = tables[o.i0];
    const int i1 = tables[out0 + o.i1];
    const int i2 = tables[out0 + out1 + o.i2];
    const int i3 = tables[out0 + out1 + out2 + o.i3];
    output[index] = input[(((long long)i0 * in1 + i1) * in2 + i2) * in3 + i3];
}

#define GATHER_PARAMS(Element)                                                                 \
    const Element* __restrict__ input, const int* __restrict__ tables, Element* __restrict__ output, \
    int in1, int in2, int in3, int out0, int out1, int out2, int out3
#define GATHER_ARGS input, tables, output, in1, in2, in3, out0, out1, out2, out3

extern "C" __global__ void gather_axes_b8(GATHER_PARAMS(unsigned char)) { gather_axes_4d<unsigned char>(GATHER_ARGS); }

extern "C" __global__ void gather_axes_b16(GATHER_PARAMS(unsigned short)) { gather_axes_4d<unsigned short>(GATHER_ARGS); }

extern "C" __global__ void gather_axes_b32(GATHER_PARAMS(unsigned int)) { gather_axes_4d<unsigned int>(GATHER_ARGS); }
