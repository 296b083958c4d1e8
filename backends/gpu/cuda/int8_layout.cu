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
// This file must compile with NVRTC (no system headers) and with g++ through
// host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

// ---- PAD ------------------------------------------------------------------------------------

extern "C" __global__ void pad_b8(
    const unsigned char* __restrict__ input, unsigned char* __restrict__ output,
    int in0, int in1, int in2, int in3, int out0, int out1, int out2, int out3,
    int before0, int before1, int before2, int before3, unsigned char value)
{
    const long long total = (long long)out0 * out1 * out2 * out3;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;

    long long rest = index;
    const int i3 = (int)(rest % out3) - before3;
    rest /= out3;
    const int i2 = (int)(rest % out2) - before2;
    rest /= out2;
    const int i1 = (int)(rest % out1) - before1;
    const int i0 = (int)(rest / out1) - before0;
    const bool inside = i0 >= 0 && i0 < in0 && i1 >= 0 && i1 < in1 && i2 >= 0 && i2 < in2 && i3 >= 0 && i3 < in3;
    output[index] = inside ? input[(((long long)i0 * in1 + i1) * in2 + i2) * in3 + i3] : value;
}

// ---- CONCATENATION --------------------------------------------------------------------------

#define CONCAT_MAX_INPUTS 8

extern "C" __global__ void concatenation_b8(
    unsigned char* __restrict__ output, const unsigned char* in0, const unsigned char* in1,
    const unsigned char* in2, const unsigned char* in3, const unsigned char* in4,
    const unsigned char* in5, const unsigned char* in6, const unsigned char* in7,
    int e0, int e1, int e2, int e3, int e4, int e5, int e6, int e7,
    const unsigned char* __restrict__ tables, int outer, int inner, int axis_total, int axis_start)
{
    const unsigned char* const inputs[CONCAT_MAX_INPUTS] = {in0, in1, in2, in3, in4, in5, in6, in7};
    const int extents[CONCAT_MAX_INPUTS] = {e0, e1, e2, e3, e4, e5, e6, e7};
    int count = 0;  // this launch's rows of the axis
    for (int k = 0; k < CONCAT_MAX_INPUTS; ++k) count += extents[k];
    const long long total = (long long)outer * count * inner;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;

    const int i = (int)(index % inner);
    const long long rest = index / inner;
    const int p = (int)(rest % count);
    const int o = (int)(rest / count);

    int k = 0, row = p;  // input k, its row
    while (row >= extents[k]) {
        row -= extents[k];
        ++k;
    }
    const unsigned char value = inputs[k][((long long)o * extents[k] + row) * inner + i];
    output[((long long)o * axis_total + axis_start + p) * inner + i] = tables ? tables[k * 256 + value] : value;
}
