// Quantized (int8 / uint8) data movement, one launch per node, bit-exact with TFLite's
// reference kernels (backends/cpu/kernels/pad.py, concat_quantized.py). Values are moved as
// bytes; CONCATENATION may rescale each input through a 256-entry table.
//
// PAD (pad_b8), rank <= 4 (the host left-pads the shapes to 4-D with 1s and 0 paddings):
//   out[o] = in[o - before]   where 0 <= o_k - before_k < in_k for every k
//          = value            elsewhere (PADV2's value, or the output's zero point)
// Launch: 1-D over the output.
//
// CONCATENATION (concatenation_b8), the output seen as [outer, axis_total, inner], input k as
// [outer, extent_k, inner]; one launch joins up to CONCAT_MAX_INPUTS (8) inputs (unused
// slots: a null pointer and extent 0) into output rows [axis_start, ...) of the axis:
//   out[o, axis_start + offset_k + p, i] = f_k(in_k[o, p, i])   offset_k = e_0 + ... + e_{k-1}
// f_k: with tables null, the byte itself; else tables[k * 256 + bits], the CPU kernel's
// rescale table of input k (TFLite's ConcatenationWithScaling, evaluated per value at prepare;
// the identity for an input with the output's quantization).
// Launch: 1-D, blockDim.x * gridDim.x >= outer * (e_0 + ... + e_7) * inner.
//
// This file must compile with NVRTC (no system headers; the .cuh headers are spliced in) and with
// g++ through host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#include "coordinates.cuh"  // coordinates_4d
#include "layout_index.cuh"  // pad_element, concat_element: where an output element comes from, as layout.cu

// ---- PAD ------------------------------------------------------------------------------------

extern "C" __global__ void pad_b8(
    const unsigned char* __restrict__ input, unsigned char* __restrict__ output, PAD_4D_PARAMS, unsigned char value)
{
    PadElement element;
    if (!pad_element(PAD_4D_ARGS, element)) return;
    output[element.index] = element.inside ? input[element.source] : value;
}

// ---- CONCATENATION --------------------------------------------------------------------------

extern "C" __global__ void concatenation_b8(
    unsigned char* __restrict__ output, CONCAT_INPUTS_PARAMS(unsigned char),
    const unsigned char* __restrict__ tables, int outer, int inner, int axis_total, int axis_start)
{
    CONCAT_INPUTS_ARRAYS(unsigned char)
    ConcatElement<unsigned char> element;
    if (!concat_element(inputs, extents, outer, inner, axis_total, axis_start, element)) return;
    const unsigned char value = *element.source;
    output[element.target] = tables ? tables[element.k * 256 + value] : value;
}
