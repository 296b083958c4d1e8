// MediaPipe's attention face-mesh ops, version 2 (float): Landmarks2TransformMatrix,
// TransformTensorBilinear and TransformLandmarks, as the CPU kernels compute them
// (backends/cpu/kernels/mediapipe_attention.py, MediaPipe's
// mediapipe/util/tflite/operations/*.cc), in MediaPipe's order of operations.
//
// landmarks_to_transform_matrix_*: one thread (grid 1, block 1); the op is a few hundred
// flops. landmarks [N, 3], subset [subset_count] int32 (the subset_idxs option, uploaded
// once), matrix [16] out (row-major 4x4):
//   r = target - atan2f(y_right - y_left, x_right - x_left)
//   the subset's (x, y, 1) times [[cos r, -sin r, 0], [sin r, cos r, 0], [0, 0, 1]], summed
//   from 0 left to right; its bounding box (MediaPipe's `if (max < v) max = v` fold from the
//   first point) gives width, height and the middle, which goes back through the rotation
//   by -r; then T(crop) R(-r) S(scale_x w / out_w, scale_y h / out_h) T(-out_w/2, -out_h/2),
//   each 4x4 product an entry's sum from 0 over k in float.
// transform_tensor_bilinear_*: one thread per output element (y, x, c); input [H, W, C] and
//   output [OH, OW, C] of batch 1, matrix [16]. The first two rows, corrected for pixel
//   centres in double (m03 += m00 * 0.5 + m01 * 0.5 - 0.5), map (x, y, 0, 1) to (tx, ty) in
//   float; outside [0, W-1] x [0, H-1] (or NaN) the output is 0; inside, the four
//   neighbours (0 past the last row or column) are mixed partly in double, as MediaPipe:
//     upper = float((1.0 - dx) * q11 + double(float(dx * q21)))   (lower likewise)
//     out   = float(double(float(dy * lower)) + (1.0 - dy) * upper)
// transform_landmarks_*: one thread per landmark; landmarks [N, dims] (dims 2 or 3), matrix
//   [16]: (x, y) -> the first two rows times (x, y, 0, 1), summed left to right in float;
//   z (dims 3) is copied unchanged.
//
// Every product and sum is one rounding (__fmul_rn / __fadd_rn / __dmul_rn / __dadd_rn: NVRTC
// would contract a*b + c into a fused multiply-add), so the kernels compute the numpy twins'
// values (cuda/mediapipe_attention.py), except atan2f, cosf and sinf, CUDA's within 2 ulp of
// the twins' correctly rounded ones, and CuPy's -ftz=true flushing float32 subnormals.
//
// Storage float32 or float16 (binary16 bit patterns) for the landmarks, images and matrices;
// the subset indices are int32. Launch: 1-D, blockDim.x * gridDim.x >= the element count
// (sources.elementwise_launch_config), or one thread for the matrix. This file must compile
// with NVRTC (no system headers; storage.cuh is spliced in) and with g++ through
// host_shim/cuda_host.h.

#if !defined(__CUDACC__) && !defined(CUDA_HOST_SHIM)
#error "compile this file with NVRTC (or nvcc), or with g++ after including host_shim/cuda_host.h"
#endif

#include "storage.cuh"  // load_as_float / store_from_float for float and float16 bit patterns

// ---- one rounding per operation ----------------------------------------------------------------
// The host shim's g++ (ISO C++, x86-64 without FMA) rounds each operation already.
#ifdef CUDA_HOST_SHIM
__device__ __forceinline__ float f32_mul(float a, float b) { return a * b; }
__device__ __forceinline__ float f32_add(float a, float b) { return a + b; }
__device__ __forceinline__ float f32_sub(float a, float b) { return a - b; }
__device__ __forceinline__ float f32_div(float a, float b) { return a / b; }
__device__ __forceinline__ double f64_mul(double a, double b) { return a * b; }
__device__ __forceinline__ double f64_add(double a, double b) { return a + b; }
#else
__device__ __forceinline__ float f32_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float f32_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float f32_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float f32_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double f64_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double f64_add(double a, double b) { return __dadd_rn(a, b); }
#endif

// MediaPipe's DotProduct(row, (x, y, 0, 1)): left to right, each step rounded.
__device__ __forceinline__ float dot_xy01(float r0, float r1, float r2, float r3, float x, float y) {
    return f32_add(f32_add(f32_add(f32_mul(r0, x), f32_mul(r1, y)), f32_mul(r2, 0.0f)), f32_mul(r3, 1.0f));
}

// ---- Landmarks2TransformMatrix v2 ---------------------------------------------------------------

// MediaPipe's Mat3 * (x, y, 1) for the rotation [[c, -s, 0], [s, c, 0], [0, 0, 1]]: each entry's
// sum from 0 over k.
__device__ __forceinline__ void rotate_xy1(float c, float s, float x, float y, float& rx, float& ry) {
    rx = f32_add(f32_add(f32_add(0.0f, f32_mul(c, x)), f32_mul(-s, y)), f32_mul(0.0f, 1.0f));
    ry = f32_add(f32_add(f32_add(0.0f, f32_mul(s, x)), f32_mul(c, y)), f32_mul(0.0f, 1.0f));
}

// t = t * other (MediaPipe's Mat4::operator*=): each entry's sum from 0 over k, in float.
__device__ __forceinline__ void mat4_times(float (&t)[16], const float (&other)[16]) {
    float result[16];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            float sum = 0.0f;
#pragma unroll
            for (int k = 0; k < 4; ++k) sum = f32_add(sum, f32_mul(t[r * 4 + k], other[k * 4 + c]));
            result[r * 4 + c] = sum;
        }
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) t[i] = result[i];
}

template <typename Storage>
__device__ __forceinline__ void landmarks_to_transform_matrix(
    const Storage* __restrict__ landmarks, const int* __restrict__ subset, Storage* __restrict__ matrix,
    int subset_count, int left, int right, float target_rotation, int out_h, int out_w, float scale_x, float scale_y)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;  // one thread computes the 16 values
    // EstimateRotationRadians
    const float left_x = load_as_float(landmarks + left * 3), left_y = load_as_float(landmarks + left * 3 + 1);
    const float right_x = load_as_float(landmarks + right * 3), right_y = load_as_float(landmarks + right * 3 + 1);
    const float rotation = f32_sub(target_rotation, atan2f(f32_sub(right_y, left_y), f32_sub(right_x, left_x)));
    // EstimateCenterAndSize: the subset rotated by `rotation`, its box
    const float c = cosf(rotation), s = sinf(rotation);
    float max_x, max_y;  // the fold starts at the first point (subset_count >= 1)
    rotate_xy1(c, s, load_as_float(landmarks + subset[0] * 3), load_as_float(landmarks + subset[0] * 3 + 1), max_x, max_y);
    float min_x = max_x, min_y = max_y;
    for (int i = 1; i < subset_count; ++i) {
        const int index = subset[i];
        float x, y;
        rotate_xy1(c, s, load_as_float(landmarks + index * 3), load_as_float(landmarks + index * 3 + 1), x, y);
        if (max_x < x) max_x = x;
        if (max_y < y) max_y = y;
        if (min_x > x) min_x = x;
        if (min_y > y) min_y = y;
    }
    const float crop_width = f32_sub(max_x, min_x), crop_height = f32_sub(max_y, min_y);
    const float middle_x = f32_div(f32_add(min_x, max_x), 2.0f), middle_y = f32_div(f32_add(min_y, max_y), 2.0f);
    const float ci = cosf(-rotation), si = sinf(-rotation);
    float crop_x, crop_y;
    rotate_xy1(ci, si, middle_x, middle_y, crop_x, crop_y);
    // T(crop) R(-rotation) S(scale) T(-output / 2), multiplied in MediaPipe's order
    float t[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    const float shift[16] = {1, 0, 0, crop_x, 0, 1, 0, crop_y, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_times(t, shift);
    const float cm = cosf(-rotation), sm = sinf(-rotation);
    const float turn[16] = {cm, -sm, 0, 0, sm, cm, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_times(t, turn);
    const float sx = f32_div(f32_mul(scale_x, crop_width), (float)out_w);
    const float sy = f32_div(f32_mul(scale_y, crop_height), (float)out_h);
    const float scale[16] = {sx, 0, 0, 0, 0, sy, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_times(t, scale);
    const float half_w = (float)(-1.0 * (out_w / 2.0)), half_h = (float)(-1.0 * (out_h / 2.0));
    const float centre[16] = {1, 0, 0, half_w, 0, 1, 0, half_h, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_times(t, centre);
#pragma unroll
    for (int i = 0; i < 16; ++i) store_from_float(matrix + i, t[i]);
}

extern "C" __global__ void landmarks_to_transform_matrix_f32(
    const float* __restrict__ landmarks, const int* __restrict__ subset, float* __restrict__ matrix,
    int subset_count, int left, int right, float target_rotation, int out_h, int out_w, float scale_x, float scale_y)
{
    landmarks_to_transform_matrix<float>(landmarks, subset, matrix, subset_count, left, right, target_rotation, out_h,
                                         out_w, scale_x, scale_y);
}

extern "C" __global__ void landmarks_to_transform_matrix_f16(
    const unsigned short* __restrict__ landmarks, const int* __restrict__ subset, unsigned short* __restrict__ matrix,
    int subset_count, int left, int right, float target_rotation, int out_h, int out_w, float scale_x, float scale_y)
{
    landmarks_to_transform_matrix<unsigned short>(landmarks, subset, matrix, subset_count, left, right, target_rotation,
                                                  out_h, out_w, scale_x, scale_y);
}

// ---- TransformTensorBilinear v2 -----------------------------------------------------------------

// A matrix row with MediaPipe's pixel-centre correction: r3 += r0 * 0.5 + r1 * 0.5 - 0.5 in double.
__device__ __forceinline__ float centred_offset(float r0, float r1, float r3) {
    const double correction = f64_add(f64_add(f64_mul((double)r0, 0.5), f64_mul((double)r1, 0.5)), -0.5);
    return (float)f64_add((double)r3, correction);
}

// (1.0 - t) * a + double(float(t * b)), rounded to float: MediaPipe's upper / lower rows.
__device__ __forceinline__ float mix_row(float t, float a, float b) {
    return (float)f64_add(f64_mul(f64_add(1.0, -(double)t), (double)a), (double)f32_mul(t, b));
}

template <typename Storage>
__device__ __forceinline__ void transform_tensor_bilinear(
    const Storage* __restrict__ input, const Storage* __restrict__ matrix, Storage* __restrict__ output,
    int in_h, int in_w, int channels, int out_h, int out_w)
{
    const long long total = (long long)out_h * out_w * channels;
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= total) return;  // the last block is partial
    const int c = (int)(index % channels);
    const int ox = (int)((index / channels) % out_w);
    const int oy = (int)(index / ((long long)channels * out_w));

    float m[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) m[i] = load_as_float(matrix + i);
    const float x3 = centred_offset(m[0], m[1], m[3]), y3 = centred_offset(m[4], m[5], m[7]);
    const float tx = dot_xy01(m[0], m[1], m[2], x3, (float)ox, (float)oy);
    const float ty = dot_xy01(m[4], m[5], m[6], y3, (float)ox, (float)oy);
    const bool inside = tx >= 0.0f && tx <= (float)(in_w - 1) && ty >= 0.0f && ty <= (float)(in_h - 1);  // NaN: outside
    if (!inside) {
        store_from_float(output + index, 0.0f);
        return;
    }
    const float fx = floorf(tx), fy = floorf(ty);
    const int x0 = (int)fx, y0 = (int)fy;
    const bool has_right = x0 + 1 < in_w, has_below = y0 + 1 < in_h;  // the neighbours past the edge read 0
    const long long top = ((long long)y0 * in_w + x0) * channels + c;
    const long long below = top + (long long)in_w * channels;
    const float q11 = load_as_float(input + top);
    const float q21 = has_right ? load_as_float(input + top + channels) : 0.0f;
    const float q12 = has_below ? load_as_float(input + below) : 0.0f;
    const float q22 = has_right && has_below ? load_as_float(input + below + channels) : 0.0f;
    const float dx = f32_sub(tx, fx), dy = f32_sub(ty, fy);
    const float upper = mix_row(dx, q11, q21);
    const float lower = mix_row(dx, q12, q22);
    const float value = (float)f64_add((double)f32_mul(dy, lower), f64_mul(f64_add(1.0, -(double)dy), (double)upper));
    store_from_float(output + index, value);
}

extern "C" __global__ void transform_tensor_bilinear_f32(
    const float* __restrict__ input, const float* __restrict__ matrix, float* __restrict__ output,
    int in_h, int in_w, int channels, int out_h, int out_w)
{
    transform_tensor_bilinear<float>(input, matrix, output, in_h, in_w, channels, out_h, out_w);
}

extern "C" __global__ void transform_tensor_bilinear_f16(
    const unsigned short* __restrict__ input, const unsigned short* __restrict__ matrix,
    unsigned short* __restrict__ output, int in_h, int in_w, int channels, int out_h, int out_w)
{
    transform_tensor_bilinear<unsigned short>(input, matrix, output, in_h, in_w, channels, out_h, out_w);
}

// ---- TransformLandmarks v2 ----------------------------------------------------------------------

template <typename Storage>
__device__ __forceinline__ void transform_landmarks(
    const Storage* __restrict__ landmarks, const Storage* __restrict__ matrix, Storage* __restrict__ output,
    int count, int dims)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    float m[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) m[k] = load_as_float(matrix + k);
    const Storage* point = landmarks + i * dims;
    const float x = load_as_float(point), y = load_as_float(point + 1);
    store_from_float(output + i * dims, dot_xy01(m[0], m[1], m[2], m[3], x, y));
    store_from_float(output + i * dims + 1, dot_xy01(m[4], m[5], m[6], m[7], x, y));
    if (dims == 3) output[i * dims + 2] = point[2];  // z, bits unchanged
}

extern "C" __global__ void transform_landmarks_f32(
    const float* __restrict__ landmarks, const float* __restrict__ matrix, float* __restrict__ output, int count, int dims)
{
    transform_landmarks<float>(landmarks, matrix, output, count, dims);
}

extern "C" __global__ void transform_landmarks_f16(
    const unsigned short* __restrict__ landmarks, const unsigned short* __restrict__ matrix,
    unsigned short* __restrict__ output, int count, int dims)
{
    transform_landmarks<unsigned short>(landmarks, matrix, output, count, dims);
}
