// The output stage of the float convolution kernels (conv2d.cu, conv2d_tiled.cu, conv2d_mma.cu,
// depthwise_conv2d.cu, depthwise_conv2d_tiled.cu: store_conv_output), with the fused epilogue:
// the nodes that MediaPipe's blocks put after a convolution, folded into its store
// (backends/gpu/fusion.py decides when that is exact):
//
//   v = clamp(acc + bias, act_min, act_max)          the convolution's own bias and fused activation
//   v = clamp(v + r, add_min, add_max)               ADD of a residual r (when residual != null),
//       r = residual[pixel, oc] for oc < residual_channels, else 0.0f
//                                                    (a PAD of the residual's channels, folded in:
//                                                    its zeros are still added, so -0.0 + 0 = +0.0
//                                                    as the unfused ADD gives)
//   v = v >= 0 ? v : v * alpha[oc]                   PRELU with a per-channel alpha (when alpha != null)
//   v = clamp(v, post_min, post_max)                 RELU / RELU6 / RELU_N1_TO_1 / RELU_0_TO_1
//                                                    (-inf..inf: none)
//
// Each step is the unfused op's float32 arithmetic (cuda/elementwise.cu: a + b, then
// ActivationFunctionWithMinMax; PRELU a >= 0 ? a : a * alpha; the RELUs a clamp), so in
// float32 storage the fused kernel stores the bits the unfused nodes would have; in float16
// storage it skips their intermediate roundings to half. Clamps are written v < lo ? lo : v,
// v > hi ? hi : v so that NaN propagates, as in the unfused kernels.

struct Epilogue {
    const void* residual;   // Storage*, [pixels, residual_channels], or null
    int residual_channels;
    float add_min, add_max;
    const void* alpha;      // Storage*, [out_channels], or null
    float post_min, post_max;
};

__device__ __forceinline__ float clamp_to(float value, float low, float high) {
    value = value < low ? low : value;
    return value > high ? high : value;
}

template <typename Storage>
__device__ __forceinline__ float apply_epilogue(const Epilogue& e, float value, long long pixel, int oc) {
    if (e.residual != nullptr) {
        const Storage* residual = static_cast<const Storage*>(e.residual);
        const float r = oc < e.residual_channels ? load_as_float(residual + pixel * e.residual_channels + oc) : 0.0f;
        value = clamp_to(value + r, e.add_min, e.add_max);
    }
    if (e.alpha != nullptr) {
        const float a = load_as_float(static_cast<const Storage*>(e.alpha) + oc);
        value = value >= 0.0f ? value : value * a;
    }
    return clamp_to(value, e.post_min, e.post_max);
}

// No epilogue: what the plain entry points pass (no residual, no alpha, clamps to -inf..inf,
// built from their bits: NVRTC has no INFINITY).
__device__ __forceinline__ Epilogue no_epilogue() {
    Epilogue e;
    e.residual = nullptr;
    e.residual_channels = 0;
    e.add_min = __int_as_float((int)0xff800000u);
    e.add_max = __int_as_float(0x7f800000);
    e.alpha = nullptr;
    e.post_min = e.add_min;
    e.post_max = e.add_max;
    return e;
}

__device__ __forceinline__ Epilogue make_epilogue(
    const void* residual, int residual_channels, float add_min, float add_max,
    const void* alpha, float post_min, float post_max)
{
    Epilogue e;
    e.residual = residual;
    e.residual_channels = residual_channels;
    e.add_min = add_min;
    e.add_max = add_max;
    e.alpha = alpha;
    e.post_min = post_min;
    e.post_max = post_max;
    return e;
}

// The output stage of every float convolution, for output channel oc of a pixel: the bias, the
// clamp (TFLite's ActivationFunctionWithMinMax: NaN propagates; fmaxf/fminf would turn NaN into
// a bound), the fused nodes, stored at output[pixel * out_channels + oc].
template <typename Storage>
__device__ __forceinline__ void store_conv_output(
    Storage* output, const Storage* bias, float sum, long long pixel, int oc, int out_channels,
    float act_min, float act_max, const Epilogue& epilogue)
{
    float value = bias != nullptr ? sum + load_as_float(bias + oc) : sum;
    value = value < act_min ? act_min : value;
    value = value > act_max ? act_max : value;
    store_from_float(output + pixel * out_channels + oc, apply_epilogue<Storage>(epilogue, value, pixel, oc));
}
